"""One `Version` type and one home for the committed releases (miogen.spec.releases)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from miogen.base.errors import CodegenError
from miogen.spec.releases import PIN_FILE, Releases, Version, by_version, spec_version

from ..helpers import COMMITTED, SPECS

_part = st.integers(min_value=0, max_value=999_999)


@given(_part, _part, _part)
def test_version_round_trips_and_orders_as_numbers(a: int, b: int, c: int) -> None:
    v = Version(a, b, c)
    assert Version.parse(str(v)) == v and str(v) == f"{a}.{b}.{c}"
    assert Version.parse(f"{a:02d}.{b}.{c}") == v  # leading zeros normalise
    assert (v < Version(a, b, c + 1)) and (Version(a, b + 1, 0) > v) and v == (a, b, c)


@pytest.mark.parametrize("text", ["", "3", "3.2", "3.2.0.1", "3.x.0", "v3.2.0", "3.2.0a", "1234567.0.0", "３.2.0"])
def test_version_refuses_anything_but_three_numbers(text: str) -> None:
    with pytest.raises(CodegenError, match="expected a version like 3.2.0"):
        Version.parse(text)


def test_spec_files_are_ordered_by_release_not_by_name(tmp_path: Path) -> None:
    names = ["3.0.0.yaml", "2.20.0.yaml", "2.9.1.yaml", "10.0.0.yaml"]
    assert [p.name for p in by_version([tmp_path / n for n in names])] == \
        ["2.9.1.yaml", "2.20.0.yaml", "3.0.0.yaml", "10.0.0.yaml"]
    with pytest.raises(CodegenError, match=r"x\.1\.0\.yaml: spec files are named <version>\.yaml"):
        spec_version(tmp_path / "x.1.0.yaml")


def test_committed_releases_of_the_checkout() -> None:
    assert COMMITTED.versions == sorted(COMMITTED.versions) and len(COMMITTED.versions) >= 2
    assert set(COMMITTED.paths.values()) == set(SPECS.glob("*.*.*.yaml"))
    pinned = COMMITTED.pinned()
    assert str(pinned) == (SPECS / PIN_FILE).read_text().strip() and pinned == COMMITTED.versions[-1]


def test_pin_errors_name_the_pin_file(tmp_path: Path) -> None:
    (tmp_path / "3.1.0.yaml").write_text("functions:\n- name: a\n")
    releases = Releases.of(tmp_path)
    with pytest.raises(CodegenError, match="no pinned release"):
        releases.pinned()
    for text in ("3.2.0", "three", "3.01.0"):
        (tmp_path / PIN_FILE).write_text(text + "\n")
        with pytest.raises(CodegenError, match=f"pins {text}, but .*{text}.yaml does not exist"):
            releases.pinned()


def test_added_in_is_the_first_release_declaring_each_function(tmp_path: Path) -> None:
    (tmp_path / "2.9.0.yaml").write_text("x: 1\nfunctions:\n- name: a\n")
    (tmp_path / "2.10.0.yaml").write_text("x: 1\nfunctions:\n- name: a\n- name: b\n")
    (tmp_path / "3.0.0.yaml").write_text("x: 1\nfunctions:\n- name: b\n- name: c\n")
    assert Releases.of(tmp_path).added_in() == {"a": "2.9.0 or earlier", "b": "2.10.0", "c": "3.0.0"}
    with pytest.raises(CodegenError, match="no committed specs"):
        Releases.of(tmp_path / "empty").added_in()


@given(st.one_of(st.text(alphabet="0123456789.x ３", max_size=12),
                 st.tuples(_part, _part, _part).map(lambda v: ".".join(map(str, v)))))
def test_the_runtime_version_has_the_generators_grammar(text: str) -> None:
    """The run-time `Version` (`miopen._generated._selection`, which cannot import miogen) accepts exactly what the
    generator's does, with the same value, order and text."""
    from miopen._generated._selection import Version as RuntimeVersion

    try:
        want: Version | None = Version.parse(text)
    except CodegenError:
        want = None
    if want is None:
        with pytest.raises(ValueError, match="expected a version X.Y.Z"):
            RuntimeVersion.parse(text)
        return
    got = RuntimeVersion.parse(text)
    assert tuple(got) == tuple(want) and str(got) == str(want) and (got.major, got.minor, got.patch) == tuple(want)
    assert got.as_int() == want[0] * 1_000_000 + want[1] * 1_000 + want[2]


def test_the_runtime_has_one_version_type_and_one_policy_list() -> None:
    """`miopen.version.Version` is the support layer's; the runtime's `Policy` names the support layer's POLICIES,
    and the one setter validates against them."""
    import copy
    import pickle
    from typing import get_args

    from miopen import caffe2, version
    from miopen._generated import _selection

    assert version.Version is _selection.Version is caffe2.Version
    assert get_args(version.Policy) == _selection.POLICIES
    v = version.Version(3, 5, 2)
    assert pickle.loads(pickle.dumps(v)) == v and type(copy.copy(v)) is version.Version and repr(v) == "Version(3, 5, 2)"
    before = version.version_policy()
    try:
        version.set_version_policy("strict")
        assert version.version_policy() == "strict"
        with pytest.raises(ValueError, match="^set_version_policy: policy must be 'compatible', 'strict' or 'off'"):
            version.set_version_policy("lenient")  # type: ignore[arg-type]
        assert version.version_policy() == "strict"
    finally:
        version.set_version_policy(before)

"""Every committed release through one installed package: a stub library of each release is loaded,
the package binds that release's layer, and every typed wrapper calls through with the values of that
release reaching C (the renumbered miopenTensorArgumentId_t constants are the canary)."""

from __future__ import annotations

import ctypes
import functools
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from miogen.prove import callthrough
from miogen.semantics.annotations import load_annotations
from miogen.semantics.resolve import resolve
from miogen.spec.releases import Version
from miogen.spec.spec_io import load

from ..conftest import Libs, _configure_stub, build_stub
from ..helpers import COMMITTED, planned, SPECS, target

RELEASES = [str(v) for v in COMMITTED.versions]


@pytest.fixture(scope="module")
def stubs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ctypes.CDLL]:
    from concurrent.futures import ThreadPoolExecutor

    root = tmp_path_factory.mktemp("release_stubs")
    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:  # the compiles (g++ processes) side by side
        paths = dict(zip(RELEASES, pool.map(lambda v: build_stub(v, root), RELEASES)))
    out = {}
    for v in RELEASES:
        lib = ctypes.CDLL(str(paths[v]))
        _configure_stub(lib)
        out[v] = lib
    return out


@pytest.fixture()
def rebind(runtime_libs: Libs) -> Iterator[None]:
    """Unbinds the session's stub for the test and binds it again afterwards."""
    import miopen

    miopen.unload_library()
    try:
        yield
    finally:
        miopen.unload_library()
        runtime_libs.reset()
        miopen.load_library(runtime_libs.miopen)


def test_the_package_has_every_committed_release() -> None:
    import miopen

    assert list(miopen.RELEASES) == RELEASES


@pytest.mark.parametrize("version", RELEASES)
def test_every_wrapper_calls_through_with_its_release(stubs: dict[str, ctypes.CDLL], rebind: None,
                                                      version: str) -> None:
    import miopen
    from miopen import _generated

    stub = stubs[version]
    miopen.load_library(stub)
    assert miopen.bound_release() == version and miopen.MIOPEN_VERSION == version
    spec = load(SPECS / f"{version}.yaml")
    sem = resolve(spec, load_annotations(SPECS / "annotations.yaml"))

    pl = planned(spec, load_annotations(SPECS / "annotations.yaml"), target(), "# matrix")
    # every wrapper of every release takes the direct call (no parameter of theirs lacks a direct form)
    assert [f.c_name for f in pl.functions if f.direct_args is None] == []
    plans = {f.c_name: (f.py_name, [(p.c_name, p.py) for p in f.params], [p.c_name for p in f.params if p.out])
             for f in pl.functions}
    results = callthrough.run_call_through(_generated, spec, sem, stub, target().function_prefix, plans, target().version_getter)
    problems = {r.function: r.problems for r in results if r.problems}
    assert problems == {}
    assert len(results) == len(spec.functions)
    # enum values are the release's own: every constant of its spec, by name, through the public spelling
    for e in spec.enums:
        py = pl.enums[[x.c_name for x in pl.enums].index(e.name)].py_name
        cls = getattr(miopen, py)
        for c in e.constants:
            assert int(getattr(cls, c.name)) == c.value, (version, e.name, c.name)


# the value of miopenTensorBias reaching C, per the real headers: each from that release on (none before 3.1.0)
CANARY_FROM = {"3.1.0": 10, "3.2.0": 42, "3.3.0": 43}


def canary(version: str) -> int | None:
    """miopenTensorBias's value in `version` by the real headers (None before it existed)."""
    since = [v for v in CANARY_FROM if Version.parse(v) <= Version.parse(version)]
    return CANARY_FROM[max(since, key=Version.parse)] if since else None


@pytest.mark.parametrize("version", RELEASES)
def test_tensor_argument_ids_reach_c_as_their_release_numbers_them(stubs: dict[str, ctypes.CDLL], rebind: None,
                                                                   version: str) -> None:
    import miopen

    stub = stubs[version]
    miopen.load_library(stub)
    stub.miogen_stub_reset()
    if not hasattr(miopen.raw, "miopenTensorArgumentId_t"):
        with pytest.raises(AttributeError, match="TensorArgumentId is not in the bound MIOpen release "
                                                 f"{version}.*releases that have it: 2.20.0"):
            miopen.TensorArgumentId  # noqa: B018
        return
    bias = miopen.TensorArgumentId.miopenTensorBias if "miopenTensorBias" in miopen.TensorArgumentId.__members__ else None
    if bias is None:
        with pytest.raises(AttributeError, match=f"TensorArgumentId.miopenTensorBias is not in the bound MIOpen release {version}"):
            miopen.TensorArgumentId.miopenTensorBias  # noqa: B018
        return
    opts = miopen.create_find_options()
    miopen.set_find_option_preallocated_tensor(opts, bias, 0x1000)
    logged = [line.split("\t") for line in (stub.miogen_stub_log() or b"").decode().splitlines()
              if line.startswith("miopenSetFindOptionPreallocatedTensor")]
    assert logged, "the call reached C"
    ids = dict(item.partition("=")[::2] for item in logged[-1][1:])
    spec_value = next(c.value for e in load(SPECS / f"{version}.yaml").enums if e.name == "miopenTensorArgumentId_t"
                      for c in e.constants if c.name == "miopenTensorBias")
    assert int(ids["id"]) == spec_value == canary(version)


def test_members_of_a_release_bound_before_are_translated_by_name(stubs: dict[str, ctypes.CDLL], rebind: None) -> None:
    """A member kept from before a rebind reaches C as the newly bound release numbers it."""
    import miopen

    with_bias = sorted((v for v in stubs if canary(v) is not None), key=Version.parse)
    old, new = with_bias[0], with_bias[-1]
    miopen.load_library(stubs[old])
    kept = miopen.TensorArgumentId.miopenTensorBias
    assert int(kept) == canary(old)
    miopen.unload_library()
    miopen.load_library(stubs[new])
    stubs[new].miogen_stub_reset()
    miopen.set_find_option_preallocated_tensor(miopen.create_find_options(), kept, 0x1000)
    line = next(line for line in stubs[new].miogen_stub_log().decode().splitlines()
                if line.startswith("miopenSetFindOptionPreallocatedTensor"))
    assert f"\tid={canary(new)}" in line


def test_the_install_has_every_release_sub_package() -> None:
    """The installed package (here the editable one; the wheel: tests/codegen/test_packaging.py) holds the
    sub-package of every committed release: setup.py finds them, nothing lists them by hand."""
    import importlib.util

    from ..helpers import REPO

    for v in RELEASES:
        name = f"miopen._generated.{Version.parse(v).module}"
        found = importlib.util.find_spec(name)
        assert found is not None and found.origin is not None, name
        assert Path(found.origin).read_bytes() == (REPO / "generated" / name.rsplit(".", 1)[1] / "__init__.py").read_bytes()



# ------------------------------------------------------------------ selection by version and exports
#
# A library is modelled by the functions it exports: a stub of committed release R exports exactly the
# functions R's spec declares. Every committed release reports every version of interest (its own, every
# other committed release, a patch beside each, the next minor); what the package binds, warns or refuses is
# compared with the rule computed here from the specs alone.

_SPECS = {v: load(SPECS / f"{v}.yaml") for v in RELEASES}


def _vt(v: str) -> Version:
    return Version.parse(v)


@functools.cache
def _declared(v: str) -> frozenset[str]:
    return frozenset(f.name for f in _SPECS[v].functions)


@functools.cache
def _stable(v: str) -> frozenset[str]:
    return frozenset(f.name for f in _SPECS[v].functions if not f.beta)


class _Library:
    """What `hasattr` sees of a library exporting exactly `names`."""

    def __init__(self, names: frozenset[str]) -> None:
        self._names = names

    def __getattr__(self, name: str) -> str:
        if name in self._names:
            return name
        raise AttributeError(name)


@functools.cache
def _first_declared(committed: tuple[str, ...]) -> dict[str, str]:
    first: dict[str, str] = {}
    for v in committed:
        for n in _declared(v):
            first.setdefault(n, v)
    return first


def _expected(committed: list[str], names: frozenset[str], version: tuple[int, int, int]) -> tuple[str | None, bool]:
    """(release bound or None when refused, whether a warning is given), by the documented rule."""
    first = _first_declared(tuple(committed))
    same = sorted((r for r in committed if _vt(r)[:2] == version[:2]),
                  key=lambda r: (_vt(r) != version, abs(_vt(r)[2] - version[2]), -_vt(r)[2]))
    if same:
        common = frozenset.intersection(*(_stable(r) for r in same))
        if any(_vt(first[n]) <= version and n not in names for n in common):
            return None, False
        release = next((r for r in same if _stable(r) <= names), same[0])
        warn = _vt(release) != version or not _stable(release) <= names
    else:
        older = [r for r in committed if _vt(r) < version]
        if not older:
            return None, False
        release, warn = older[-1], True
    # most of a later minor's additions (three at least) are exported, where they came after this version for
    # sure: the committed release before them is this version or newer (else an uncommitted patch may have them)
    for i, r in enumerate(committed):
        if i and _vt(r)[:2] > version[:2] and _vt(committed[i - 1]) >= version:
            added = {n for n in _declared(r) if first[n] == r}
            if len(added & names) >= 3 and 2 * len(added & names) > len(added):
                return None, False
    return release, warn


def _outcome(names: frozenset[str], version: tuple[int, int, int]) -> tuple[str | None, list[str]]:
    """What loading a library exporting `names` and reporting `version` gives: selection, then the export check."""
    from miopen._generated import _selection
    from miopen._generated import _support as s

    try:
        release, notes = s.select_release(version, "compatible", "libfake.so", exports=names.__contains__)
        s._check_exports(_Library(names), "libfake.so", release, version, None)  # type: ignore[arg-type]
    except s.MIOpenVersionError as exc:
        assert "libfake.so reports MIOpen" in str(exc) and "Nothing was bound" in str(exc)
        return None, [str(exc)]
    return release, notes


def _reported(committed: list[str]) -> list[tuple[int, int, int]]:
    out = {_vt(v) for v in committed}
    for v in committed:
        a, b, c = _vt(v)
        out |= {(a, b, c + 1), (a, b + 1, 0)} | ({(a, b, c - 1)} if c else set())
    return sorted(out)


def _check_all(committed: list[str], libraries: list[str]) -> None:
    for lib in libraries:
        names = _declared(lib)
        for version in _reported(committed):
            release, notes = _outcome(names, version)
            want, warn = _expected(committed, names, version)
            assert release == want, (lib, version, notes)
            if release is not None:
                assert bool(notes) == warn, (lib, version, notes)
                missing = sorted(_stable(release) - names)
                if missing and _vt(release)[:2] == version[:2]:  # the warning names what the bound patch has and it lacks
                    assert f"lacks {len(missing)} function(s) of {release}" in notes[0] and missing[0] in notes[0]


@pytest.mark.parametrize("lib", RELEASES)
def test_a_library_of_each_release_reporting_each_version(lib: str) -> None:
    _check_all(RELEASES, [lib])


@pytest.mark.parametrize("lib", RELEASES)
def test_a_committed_release_binds_itself_silently_and_never_a_refused_patch(lib: str) -> None:
    """Exact version first; any other committed patch of its minor reported by it still binds (never refused)."""
    names = _declared(lib)
    assert _outcome(names, _vt(lib)) == (lib, [])
    for other in (r for r in RELEASES if _vt(r)[:2] == _vt(lib)[:2] and r != lib):
        release, notes = _outcome(names, _vt(other))
        assert release in (lib, other) and _stable(release) <= names, (lib, other, notes)


@pytest.fixture()
def committed_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[list[str]], None]]:
    """Make the package believe only some releases are committed (their function tables cut to match)."""
    from miopen._generated import _releases
    from miopen._generated import _selection
    from miopen._generated import _support as s

    def cut(keep: list[str]) -> None:
        table = {}
        for name, (declared, stable) in _releases.FUNCTIONS.items():
            d = tuple(v for v in declared if v in keep)
            if d:
                table[name] = (d, tuple(v for v in stable if v in keep))
        monkeypatch.setattr(s, "RELEASES", tuple(keep))
        monkeypatch.setattr(_selection, "RELEASES", tuple(keep))  # where selection reads it
        monkeypatch.setattr(_releases, "FUNCTIONS", table)

    yield cut


@pytest.mark.parametrize("missing", RELEASES[1:])
def test_a_shipped_release_not_yet_committed_is_bound_with_a_warning(missing: str,
                                                                    committed_only: Callable[[list[str]], None]) -> None:
    """A real library of a release the package lacks (3.5.1 while only 3.5.2 was committed, whose 12 stable
    additions it lacks) binds a neighbour with a warning naming what is unbound; every other verdict of the
    rule holds with that release missing too."""
    keep = [r for r in RELEASES if r != missing]
    committed_only(keep)
    names = _declared(missing)
    release, notes = _outcome(names, _vt(missing))
    assert release is not None and len(notes) == 1, notes
    same = [r for r in keep if _vt(r)[:2] == _vt(missing)[:2]]
    assert release == (min(same, key=lambda r: (abs(_vt(r)[2] - _vt(missing)[2]), -_vt(r)[2])) if same
                       else [r for r in keep if _vt(r) < _vt(missing)][-1])
    _check_all(keep, [missing, *(r for r in keep if _vt(r)[:2] == _vt(missing)[:2])])


def test_the_real_351_against_352_alone(committed_only: Callable[[list[str]], None]) -> None:
    """The reported case: a real 3.5.1 library when 3.5.2 was the only 3.5 release committed."""
    if not {"3.5.1", "3.5.2"} <= set(RELEASES):
        pytest.fail("3.5.1 and 3.5.2 are committed releases")
    committed_only([r for r in RELEASES if r != "3.5.1"])
    release, notes = _outcome(_declared("3.5.1"), (3, 5, 1))
    lacking = sorted(_stable("3.5.2") - _declared("3.5.1"))
    # 12 that 3.5.2's header declares, and the functions only its library exports (specs/miopen/exported.yaml)
    only_exported = {f.name for f in load(SPECS / "3.5.2.yaml").functions if f.undeclared}
    assert release == "3.5.2" and len(set(lacking) - only_exported) == 12
    assert f"it lacks {len(lacking)} function(s) of 3.5.2, which raise MissingSymbolError (e.g. {lacking[0]}" \
        in notes[0]

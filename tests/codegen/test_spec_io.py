"""Spec files: strict loading with the YAML path of each bad key; byte-exact round trips."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from miogen.base import record
from miogen.spec import spec_io, yamlread
from miogen.base.errors import SpecError
from miogen.spec.spec_io import RENAMED_KEYS, dumps, load, load_as, loads
from miogen.spec.target import Target

from ..helpers import SPECS, fixture_spec


def _broken(edit: str, replacement: str) -> str:
    text = dumps(fixture_spec())
    assert edit in text, edit
    return text.replace(edit, replacement, 1)


@pytest.mark.parametrize(
    ("edit", "replacement", "message"),
    [
        # wrong type
        ("{name: miopenTensorArgumentIsScalar, value: 2147483648}", "{name: miopenTensorArgumentIsScalar, value: lots}",
         r"enums\[3\]\.constants\[6\]\.value: expected an integer; got str 'lots'"),
        ("  size: 16\n", "  size: sixteen\n", r"records\[1\]\.size: expected an integer; got str 'sixteen'"),
        ("parse:\n  language: c++\n  beta: true", "parse:\n  language: c++\n  beta: 1",
         r"parse\.beta: expected true or false; got int 1"),
        # a value outside its enumeration
        ("type: {kind: handle, name: miopenHandle_t}", "type: {kind: handel, name: miopenHandle_t}",
         r"functions\[\d+\]\.params\[0\]\.type\.kind: expected one of void, bool, .* got 'handel'"),
        # unknown key
        ("  tag: miopenHandle\n", "  tag: miopenHandle\n  colour: blue\n",
         r"handles\[0\]\.colour: unknown key in Handle; allowed keys: name, tag, group, beta"),
        # missing field
        ("- name: miopenStatus_t\n  underlying: unsigned int\n", "- name: miopenStatus_t\n",
         r"enums\[0\]\.underlying: missing required key 'underlying' in Enum"),
        # a list where a mapping belongs
        ("header:\n  name: miopen.h\n", "header:\n- name: miopen.h\n", r"header: expected a mapping for HeaderInfo; got list"),
    ],
)
def test_malformed_spec_names_the_yaml_path(edit: str, replacement: str, message: str) -> None:
    text = _broken(edit, replacement)
    with pytest.raises(SpecError, match=message) as e:
        loads(text, "bad.yaml")
    assert str(e.value).startswith("bad.yaml:")  # file and line first
    assert e.value.path is not None


def test_error_carries_the_line(tmp_path: Path) -> None:
    text = _broken("  tag: miopenHandle\n", "  tag: miopenHandle\n  colour: blue\n")
    line = text.splitlines().index("  colour: blue") + 1
    p = tmp_path / "s.yaml"
    p.write_text(text)
    with pytest.raises(SpecError, match=rf"^{p}:{line}: handles\[0\]\.colour"):
        load(p)


def test_references_are_checked() -> None:
    text = dumps(fixture_spec())
    bad = text.replace("type: {kind: int, name: size_t}", "type: {kind: int, name: sizet}", 1)
    with pytest.raises(SpecError, match=r"\.type\.name: int type 'sizet' is not declared in the spec"):
        loads(bad, "bad.yaml")
    bad = text.replace("type: {kind: handle, name: miopenHandle_t}", "type: {kind: handle, name: miopenHandel_t}", 1)
    with pytest.raises(SpecError, match=r"handle type 'miopenHandel_t' is not declared"):
        loads(bad, "bad.yaml")
    bad = text.replace("depth: 1, const: [true, false]}", "depth: 2, const: [true, false]}", 1)
    with pytest.raises(SpecError, match=r"depth 2 needs 3 const flags; got 2"):
        loads(bad, "bad.yaml")
    with pytest.raises(SpecError, match=r"not a miogen spec \(it has no schema_version\)"):
        loads("a: 1\n", "other.yaml")


def test_schema_version_mismatch() -> None:
    text = dumps(fixture_spec()).replace("schema_version: 1", "schema_version: 99", 1)
    with pytest.raises(SpecError, match=r"schema_version: this generator reads schema version 1; the file has 99"):
        loads(text, "old.yaml")


@pytest.mark.parametrize("old", sorted(RENAMED_KEYS))
def test_a_renamed_key_is_refused_with_its_new_name(old: str) -> None:
    """A spec of the older format (a top-level key since renamed) is an error naming the key, its new
    name and its line, not an unknown-key list; every renamed key is a key of no field now."""
    new = RENAMED_KEYS[old]
    text = dumps(fixture_spec())
    line = next(n for n, ln in enumerate(text.splitlines(), 1) if ln.startswith(new + ":"))
    old_text = text.replace(f"\n{new}:", f"\n{old}:", 1)
    with pytest.raises(SpecError) as exc:
        loads(old_text, "old.yaml")
    assert f"old.yaml:{line}: {old}: `{old}` is now `{new}`" in str(exc.value)
    assert "miogen parse" in str(exc.value)
    assert old not in text and loads(text) == fixture_spec()


@pytest.mark.parametrize(
    ("text", "message"),
    [("functions: [", r"not valid YAML"), ("- a\n- b\n", r"must be a YAML mapping; got list"), ("", r"got null")],
)
def test_not_a_spec(text: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        loads(text, "x.yaml")


def test_unreadable(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"cannot read"):
        load(tmp_path / "missing.yaml")
    (tmp_path / "bin.yaml").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(SpecError, match=r"not a UTF-8 text file"):
        load(tmp_path / "bin.yaml")


def test_target_file_errors_name_the_path(tmp_path: Path) -> None:
    good = (SPECS / "target.yaml").read_text()
    p = tmp_path / "target.yaml"
    p.write_text(good.replace("status_type: miopenStatus_t", "status_type: [miopenStatus_t]"))
    with pytest.raises(SpecError, match=r"status_type: expected a string; got list"):
        load_as(Target, p, skip=("path", "exported_functions"))
    p.write_text(good.replace("  - match:", "  - matches:", 1))
    with pytest.raises(SpecError, match=r"diagnostic_hints\[0\]\.matches: unknown key"):
        load_as(Target, p, skip=("path", "exported_functions"))


def test_round_trip_of_committed_specs() -> None:
    specs = sorted(SPECS.glob("*.*.*.yaml"))
    assert specs
    for path in specs:
        text = path.read_text()
        assert dumps(load(path)) == text, path


def test_dump_quotes_what_would_read_back_as_another_type() -> None:
    from miogen.base.record import replace

    spec = fixture_spec()
    odd = replace(spec, release="null", target="true", header=replace(spec.header, name="1.0"))
    text = dumps(odd)
    data = yaml.safe_load(text)
    assert (data["release"], data["target"], data["header"]["name"]) == ("null", "true", "1.0")
    assert loads(text) == odd


@pytest.mark.long
def test_yaml_reading_equals_pyyaml() -> None:
    """codegen/spec/yamlread.py gives what yaml.load(CSafeLoader) gives, for every committed YAML file and for
    documents with every scalar type, quoting, anchors and aliases, flow and block styles; what it refuses
    (merge keys, other tags, several documents, bad syntax) is a SpecError naming the file."""
    import yaml

    from miogen.base.errors import SpecError
    from miogen.spec.yamlread import read

    from ..helpers import REPO

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    texts = [p.read_text(encoding="utf-8") for p in sorted(REPO.glob("specs/**/*.yaml"))]
    texts += ["", "# only a comment\n", "1\n", "[]\n", "{}\n", "x\n",
              "- 1\n- yes\n- 0x10\n- 0o17\n- 1_000\n- 2001-01-01\n- 2001-01-01 10:00:00\n- 1.5\n- .inf\n- ~\n"
              "- '3'\n- \"\\t\"\n- !!str 12\n- !!binary aGk=\n- !!float 1\n- null\n- ''\n",
              "a: &x [1, {b: 2}]\nb: *x\nc: &s text\nd: [*s, *s]\n*s : key from an alias\n",
              "? complex\n: 1\n1: int key\n1.5: float key\ntrue: bool key\n~: null key\n",
              "--- {a: [1, 2, [3, [4]]], b: {c: {d: e}}}\n...\n", "a: |\n  block\n  text\nb: >\n  folded\n"]
    for text in texts:
        assert read(text, "t.yaml") == yaml.load(text, Loader=loader), text[:80]
    for bad in ("a: [1, 2", "? [a]\n: 1", "a: !!python/object {}\n", "a: 1\n<<: {b: 2}\n", "a: !!set {x}\n",
                "--- 1\n--- 2\n", "a: *nowhere\n", "a: &r [*r]\n", "a: <<\n"):
        with pytest.raises(SpecError, match=r"^t\.yaml"):
            read(bad, "t.yaml")


@pytest.mark.long
def test_a_large_spec_miogen_writes_it_reads_back() -> None:
    """Past the node count a spec of ~3,000 functions reaches (the old 500,000-node limit refused it), a
    dumped spec loads back equal; and no spec of MAX_YAML_BYTES in the format dumps writes can reach
    MAX_YAML_NODES (nodes per byte of every committed spec, and of this one, times the byte limit)."""
    from miogen.base.record import replace

    import yaml


    from miogen.spec.spec_io import dumps, load, loads

    from ..helpers import SPECS

    base = load(SPECS / "3.5.2.yaml")
    functions = tuple(replace(f, name=f"{f.name}X{k}") for k in range(12) for f in base.functions)
    big = replace(base, functions=functions)
    text = dumps(big)

    def nodes(t: str) -> int:
        kinds = (yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent)
        return sum(type(e) in kinds for e in yaml.parse(t, Loader=yaml.CSafeLoader))

    count = nodes(text)
    assert count > 500_000 and len(functions) == 12 * len(base.functions)
    assert loads(text) == big
    for t in [text, *(p.read_text() for p in sorted(SPECS.glob("*.*.*.yaml")))]:
        assert nodes(t) / len(t.encode()) * yamlread.MAX_YAML_BYTES < spec_io.MAX_YAML_NODES / 2


def test_the_direct_writer_gives_the_emitters_own_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """dumps writes the text itself (codegen/spec/yamlwrite.py): byte for byte what libyaml emits event by event, for
    every committed spec, for a parsed spec whose functions share their parameters, and without importing
    PyYAML; a spec holding what it does not spell (a line past its width, a non-ASCII or multi-line text) goes
    through libyaml, with the same result."""
    import subprocess
    import sys
    from miogen.base.record import replace

    from miogen.spec import yamlwrite
    from miogen.spec.spec_io import _plan, dumps, dumps_events, load

    from ..helpers import SPECS, fixture_spec

    parsed = fixture_spec()
    repeated = replace(parsed, functions=tuple(replace(f, name=f"{f.name}R{k}") for k in range(3)
                                               for f in parsed.functions))
    for spec in [parsed, repeated, *(load(p) for p in sorted(SPECS.glob("*.*.*.yaml")))]:
        assert yamlwrite.direct(spec, _plan) == dumps_events(spec)
    for p in sorted(SPECS.glob("*.*.*.yaml")):
        assert dumps(load(p)) == p.read_text(encoding="utf-8")
    shared = next(f.params[0] for f in repeated.functions if f.params)
    fallbacks: list[object] = []
    through = yamlwrite.through_libyaml
    monkeypatch.setattr(yamlwrite, "through_libyaml", lambda o, plan: fallbacks.append(o) or through(o, plan))
    for odd in ["const int " + "x" * 4000, "const int é", "a\nb", " lead", "a: b", "x #y"]:
        spec = replace(repeated, functions=tuple(replace(f, params=(replace(shared, c=odd), *f.params))
                                                 for f in repeated.functions))
        if ":" in odd or "#" in odd:  # a block value with an indicator: single-quoted, as libyaml writes it
            assert yamlwrite.direct(spec, _plan) == dumps_events(spec)
            continue
        assert yamlwrite.direct(spec, _plan) is None
        assert dumps(spec) == dumps_events(spec) and fallbacks[-1] is spec
    import pickle

    code = ("import sys, pickle; from miogen.spec.spec_io import dumps; spec = pickle.loads(sys.stdin.buffer.read()); "
            "text = dumps(spec); print('yaml' in sys.modules, len(text))")
    out = subprocess.run([sys.executable, "-c", code], input=pickle.dumps(repeated), capture_output=True, check=True)
    assert out.stdout.split()[0] == b"False"


@pytest.mark.parametrize("flow", [False, True])
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.one_of(
    st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=12),
    st.sampled_from(["-1", "+1", ".5", "0x1F", "0o7", "1_000", "1:20", "1e3", "1.0e+3", ".inf", "-.Inf", ".NaN",
                     "2001-12-14", "2001-12-14t21:59:43.10-05:00", "yes", "No", "ON", "off", "null", "Null", "~",
                     "<<", "=", "true", "False", "", "-", "- a", "a -", "const char *", "void (*)(void *)", "a  b",
                     "3x3", "abc", "1.2.3", "09", "0b101", "12:30:45", "-.5", "+.", "a&b", "*a", "&a", "a*"]),
))
def test_the_direct_writer_spells_a_scalar_as_libyaml_does_or_declines(text: str, flow: bool) -> None:
    """Any printable ASCII string, as a mapping value in block and in flow style and as a key: the direct writer
    gives libyaml's own text (plain, or quoted where YAML 1.1 would read another type), or declines it."""
    from miogen.spec import yamlwrite

    def plan(cls: type) -> list[tuple[str, str, object, bool, bool, bool]] | None:
        return [("value", "value", None, False, flow, False)] if cls is _Holder else None

    if text in ("abc", "const char *", "-1", "yes", "", "3x3", "void (*)(void *)"):
        assert yamlwrite.direct(_Holder(text), plan) is not None  # what specs hold is spelt, not declined
    for obj in (_Holder(text), {"k": text}, {text: 1} if text else {"k": 1}):
        mine = yamlwrite.direct(obj, plan)
        if mine is not None:
            assert mine == yamlwrite.through_libyaml(obj, plan), (text, flow)


class _Holder:
    def __init__(self, value: str) -> None:
        self.value = value


def test_loaded_files_are_remembered_and_a_bad_entry_changes_nothing(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A spec or YAML file loaded once comes back from the per-user cache (keyed by its bytes and the generator)
    equal to a fresh load; an empty, truncated, corrupt or foreign entry, another generator, a changed file or the
    cache turned off all load the file again; a file that fails is never remembered."""
    import pickle
    import stat

    from miogen.base import cache
    from miogen.spec import spec_io
    from miogen.semantics.annotations import Annotations, load_annotations

    src = tmp_path / "spec.yaml"
    src.write_bytes(sorted(SPECS.glob("*.*.*.yaml"))[0].read_bytes())
    monkeypatch.setenv("MIOGEN_CACHE_DIR", "")
    expected = load(src)
    built: list[str] = []

    def spy(text: str, source: str = "<spec>") -> object:
        built.append(source)
        return loads(text, source)

    monkeypatch.setattr(spec_io, "loads", spy)
    load(src)
    assert len(built) == 1  # cache off: loaded every time
    root = tmp_path / "cache"
    monkeypatch.setenv("MIOGEN_CACHE_DIR", str(root))
    assert load(src) == expected and len(built) == 2  # cold: loaded and stored
    (entry,) = (root / "models").iterdir()
    assert stat.S_IMODE(entry.parent.stat().st_mode) == 0o700
    again = load(src)
    assert again == expected and again is not expected and len(built) == 2  # warm
    good = entry.read_bytes()
    for bad in (b"", good[: len(good) // 2], b"not a pickle", pickle.dumps("a str"), pickle.dumps(expected.functions)):
        entry.write_bytes(bad)
        assert load(src) == expected
        assert entry.read_bytes() == good  # rewritten
    assert len(built) == 7
    monkeypatch.setattr(cache, "_FINGERPRINT", ["another generator"])
    assert load(src) == expected and len(built) == 8
    src.write_bytes(src.read_bytes() + b"# changed\n")
    assert load(src) == expected and len(built) == 9
    src.write_bytes(src.read_bytes().replace(b"schema_version:", b"schema_versions:", 1))
    for _ in range(2):
        with pytest.raises(SpecError, match="no schema_version"):
            load(src)
    assert len(built) == 11
    ann = load_annotations(SPECS / "annotations.yaml")
    assert type(ann) is Annotations and load_annotations(SPECS / "annotations.yaml") == ann
    monkeypatch.setattr(cache, "MAX_MODELS", 2)
    load(sorted(SPECS.glob("*.*.*.yaml"))[1])
    assert len(list((root / "models").iterdir())) == 2  # the oldest beyond MAX_MODELS are removed


def test_the_generators_fingerprint_tells_a_changed_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fingerprint keying cached results changes when any module of the generator (subpackages too) changes
    its size or mtime, or one is added; bytecode and other files do not count."""
    import os

    from miogen.base import cache

    (tmp_path / "sub" / "__pycache__").mkdir(parents=True)
    for name in ("a.py", "sub/b.py", "sub/__pycache__/c.py", "notes.txt"):
        (tmp_path / name).write_text("x = 1\n")
    monkeypatch.setattr(cache, "_PACKAGE", tmp_path)

    def fingerprint() -> str:
        monkeypatch.setattr(cache, "_FINGERPRINT", [])
        return cache.fingerprint()

    first = fingerprint()
    assert fingerprint() == first
    for name in ("sub/__pycache__/c.py", "notes.txt"):
        (tmp_path / name).write_text("y = 22\n")
        assert fingerprint() == first
    b = tmp_path / "sub" / "b.py"
    st = b.stat()
    b.write_text("x = 2\n")  # the same size: told by its mtime
    os.utime(b, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    second = fingerprint()
    assert second != first
    (tmp_path / "sub" / "d.py").write_text("")
    assert fingerprint() not in (first, second)


def test_a_yaml_file_is_read_whole_when_it_is_longer_than_its_size_said(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """read_bytes reads at the size the file reports, and on past it when there is more (a file grown since, or
    one reporting size 0), up to the limit: a file past the limit is refused either way."""
    import os



    path = tmp_path / "x.yaml"
    path.write_bytes(b"a: 1\n" * 20)
    real_fstat = os.fstat

    class Small:
        def __init__(self, st: os.stat_result, size: int) -> None:
            self.st_size = size
            self.st_mode = st.st_mode

    for reported in (0, 7, 99, 100):
        monkeypatch.setattr(spec_io.os, "fstat", lambda fd, n=reported: Small(real_fstat(fd), n))
        assert spec_io.read_bytes(path) == b"a: 1\n" * 20
    monkeypatch.setattr(yamlread, "MAX_YAML_BYTES", 60)
    for reported in (0, 7, 100):
        monkeypatch.setattr(spec_io.os, "fstat", lambda fd, n=reported: Small(real_fstat(fd), n))
        with pytest.raises(SpecError, match="larger than 60 bytes"):
            spec_io.read_bytes(path)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_direct_writer_gives_libyamls_text_for_any_structure(data: st.DataObject) -> None:
    """Random nestings of records (block, flow and flow-item fields, omitted defaults), dicts, tuples (empty
    too), shared objects, long keys and lines past the width: the direct writer gives libyaml's own text or
    declines (a line past the width, always)."""
    from miogen.spec import yamlwrite
    from miogen.spec.spec_io import _plan

    scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20),
                        st.sampled_from(["a", "b c", "", "1", "yes", "-1", "x-y", "on", "a: b", "k" * 130, "z" * 127,
                                         "w" * 3900]))  # a line past the width: libyaml folds it
    shared = _Row(1, None)
    values = st.recursive(
        st.one_of(scalars, st.just(shared)),
        lambda inner: st.one_of(
            st.lists(inner, max_size=3).map(tuple),
            st.dictionaries(st.sampled_from(["a", "yes", "1", "", "k" * 130]), inner, max_size=3),
            st.builds(_Row, inner, inner),
            st.builds(_Flows, inner, inner),
        ),
        max_leaves=12,
    )
    obj = data.draw(st.one_of(st.builds(_Row, values, values), st.builds(_Flows, values, values),
                              st.dictionaries(st.sampled_from(["a", "b", "on"]), values, min_size=1, max_size=3)))
    mine = yamlwrite.direct(obj, _plan)
    if mine is not None:
        assert mine == yamlwrite.through_libyaml(obj, _plan)
        assert "w" * 3900 not in mine


@record.record
class _Row:
    """A block mapping; `y` left out when None."""

    x: object
    y: object = record.field(default=None, metadata={"omit_default": True})


@record.record
class _Flows:
    """`p` in flow style; each item of `q` in flow style; a key that YAML would read as a bool."""

    p: object = record.field(metadata={"flow": True})
    q: object = record.field(metadata={"flow_items": True, "key": "on"})


def test_the_cache_keeps_what_was_used_last_and_drops_stale_temporaries(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MAX_MODELS entries the least recently used go (a hit counts as a use, not only a write); a temporary
    file a killed writer left goes after STALE_TMP_S, a fresh one (a writer at work) stays."""
    import os
    import time

    from miogen.base import cache

    monkeypatch.setenv("MIOGEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cache, "MAX_MODELS", 3)
    built: list[str] = []

    def get(key: str) -> str:
        return cache.remembered(key, str, lambda: built.append(key) or f"value of {key}")

    folder = tmp_path / "models"
    for n, key in enumerate(("a", "b", "c")):
        assert get(key) == f"value of {key}"
        newest = max(folder.iterdir(), key=lambda p: p.stat().st_mtime_ns)
        os.utime(newest, ns=(0, (n + 1) * 10**9))  # written long ago, in this order
    assert get("a") == "value of a" and built == ["a", "b", "c"]  # a hit: used now
    stale, fresh = folder / ".tmp-stale", folder / ".tmp-fresh"
    stale.write_bytes(b"half")
    fresh.write_bytes(b"half")
    old = time.time() - cache.STALE_TMP_S - 60
    os.utime(stale, (old, old))
    assert get("d") == "value of d"  # a fourth: the least recently used (b) goes
    assert not stale.exists() and fresh.exists()
    built.clear()
    assert [get(k) for k in ("a", "c", "d")] == ["value of a", "value of c", "value of d"] and built == []
    assert get("b") == "value of b" and built == ["b"]


def test_what_a_command_writes_the_next_one_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each limit of the YAML reader that a written spec can reach (the file's size: the node count is bounded by
    it, `test_a_large_spec_miogen_writes_it_reads_back` above, and names, lengths and depths by the model's rules, which the parser
    applies too) has one home, yamlread: a spec over it is refused by the writer with the reader's own message."""
    from ..helpers import fixture_spec

    spec = fixture_spec()
    size = len(dumps(spec).encode())
    out = tmp_path / "3.4.1.yaml"
    monkeypatch.setattr(yamlread, "MAX_YAML_BYTES", size - 1)
    with pytest.raises(SpecError) as written:
        spec_io.dump(spec, out)
    assert not out.exists()
    out.write_text(dumps(spec))
    with pytest.raises(SpecError) as read:
        load(out)
    assert str(written.value) == str(read.value) and f"larger than {size - 1} bytes" in str(read.value)
    monkeypatch.setattr(yamlread, "MAX_YAML_BYTES", size)
    out.unlink()
    spec_io.dump(spec, out)
    assert load(out) == spec


_TEXT_PIECES = st.sampled_from([*"ab Z09:#,-?'\"[]{}&*!|>%@`.~=<+_()/eEx", "yes", "null", "0x1F", "1.5", "2001-01-01",
                                "<<", "---", "...", "\u00b5", "\t"])


@given(st.lists(_TEXT_PIECES, min_size=1, max_size=8).map("".join))
def test_block_text_is_spelt_as_libyaml_spells_it(text: str) -> None:
    """The header's words (any printable text, a block mapping's value): the direct writer spells them exactly as
    libyaml does (plain, or single-quoted), or declines them (then libyaml writes the spec)."""
    import yaml

    from miogen.spec import yamlwrite

    try:
        mine = yamlwrite._block_scalar(text)
    except yamlwrite._Declined:
        return
    assert f"k: {mine}\n" == yaml.dump({"k": text}, Dumper=yaml.CSafeDumper, width=yamlwrite.WIDTH,
                                       allow_unicode=True)


def test_the_direct_reader_reads_every_committed_spec_as_libyaml_does() -> None:
    """Every committed spec (every target's), as miogen wrote it, is read line by line (yamlread's direct reader,
    not declined), to what libyaml reads; the hand-written files (comments, multi-line scalars) go through libyaml."""
    from ..helpers import REPO

    for path in sorted(REPO.glob("specs/*/*.yaml")):
        text = path.read_text(encoding="utf-8")
        direct = yamlread._direct(text)
        if path.name[0].isdigit():
            assert direct is not yamlread._DECLINED, path
        if direct is not yamlread._DECLINED:
            assert direct == yamlread._through_libyaml(text, path.name), path


#: keys and values the direct reader takes, and others near them
_ODD_KEYS = ["on", "null", "1", "x y", "a:b", "'a'", "[a]", "-", "?", "~", "<<", "&x", "a#", "a "]
_KEYS = (st.sampled_from([*"abcdefghijklmnopqrstu", "k_1", "Key2", "_"]), st.sampled_from(_ODD_KEYS))
_VALUE_LISTS = ([
    "x", "y z", "a  b", "1", "-1", "007", "0x1F", "1_000", "1.5", "1.2.3", ".inf", "2001-01-01", "yes", "Off", "null",
    "~", "''", "'q''s'", "'a: b'", "a'b", 'a"b', "a:b", "a#b", "-x", "?x", ":x", "(a) <b> c=d ~e ^f $g /h *i &j",
    "[]", "{}", "[a, b]", "{a: 1, b: [c, 'd']}", "[[a], {b: c}]", "[yes, 0o7, '1', 1.0e+3]", "{'k': v}", "[[], {}]"], [
    "a: b", "a #b", "#c", "-", "- x", "? x", "&a x", "*a", "!!str 1", "|", ">", "%x", "@x", "`x", "---", "...", "a ",
    " a", "'", "'a'b'", "<<", "=", "[a,b]", "[ a]", "[a, ]", "[a: b]", "{a: 1, a: 2}", "{a}", "{a: }", "{1: a}",
    "[a] b", "[a, b", "{a: [b}]", "[a, *b]", "[a}", "{a: b]", "[a, b}}", "{a, b}", "{a: b: c}", "[a, , b]", "[, a]",
    "[a]]", "{[a]: b}", "[a[b]]", "{a: b{c: d}}", "'a' b", "a\tb", "\u00e9", "a\rb", "a\x85b", "a\u2028b", "\ufeffa"])
_VALUES = (st.sampled_from(_VALUE_LISTS[0]), st.sampled_from(_VALUE_LISTS[1]))


@st.composite
def _layout_like(draw: st.DrawFn) -> str:
    """A document in the direct layout (block mappings, sequences not indented in them, items that are mappings)
    of random keys and values (half of the documents only of those the direct reader takes), some lines then
    moved, prefixed or doubled, and a random end."""
    lines: list[str] = []
    odd = draw(st.booleans())
    keys, values = (st.one_of(*_KEYS), st.one_of(*_VALUES)) if odd else (_KEYS[0], _VALUES[0])

    def mapping(indent: str, lead: str, depth: int) -> None:
        for n in range(draw(st.integers(1, 3))):
            head = f"{lead if n == 0 else indent}{draw(keys)}"
            kind = draw(st.sampled_from(["value", "value", "mapping", "sequence"] if depth < 3 else ["value"]))
            if kind == "value":
                lines.append(f"{head}: {draw(values)}")
            else:
                lines.append(f"{head}:")
                if kind == "mapping":
                    mapping(indent + "  ", indent + "  ", depth + 1)
                else:
                    sequence(indent, depth + 1)

    def sequence(indent: str, depth: int) -> None:
        for _ in range(draw(st.integers(1, 3))):
            if depth < 3 and draw(st.booleans()):
                mapping(indent + "  ", indent + "- ", depth + 1)
            else:
                lines.append(f"{indent}- {draw(values)}")

    mapping("", "", 0)
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2]))):
        n = draw(st.integers(0, len(lines) - 1))
        how = draw(st.sampled_from(["indent", "outdent", "item", "double", "bare"]))
        if how == "indent":
            lines[n] = " " * draw(st.integers(1, 2)) + lines[n]
        elif how == "outdent":
            lines[n] = lines[n][2:]
        elif how == "item":
            lines[n] = "- " + lines[n]
        elif how == "double":
            lines.insert(n, lines[n])
        else:
            lines[n] = lines[n].rsplit(": ", 1)[0] + ":"
    return "\n".join(lines) + (draw(st.sampled_from(["\n", "\n", "", "\n\n", "\n# c\n", " \n"])) if odd else "\n")


def test_the_direct_reader_shares_no_container() -> None:
    """One flow collection written twice, and read twice: four containers (a flow read before is copied), so that
    changing one changes no other."""
    text = "a: {b: [c]}\nd: {b: [c]}\n"
    first, second = yamlread._direct(text), yamlread._direct(text)
    tops = [first["a"], first["d"], second["a"], second["d"]]
    inner = [t["b"] for t in tops]
    assert len({id(t) for t in tops}) == len({id(i) for i in inner}) == 4 and first == second


def test_the_direct_reader_reads_each_key_and_value_as_libyaml_does_or_declines() -> None:
    """Each key and value near the layout, alone as a block mapping's entry, a sequence's item and a flow item: the
    direct reader declines it or reads what libyaml reads (which then accepts it)."""
    keys, values = ["a", "_", *_ODD_KEYS], [*_VALUE_LISTS[0], *_VALUE_LISTS[1]]
    texts = [f"{k}: x\n" for k in keys] + [f"k: {v}\n" for v in values] + [f"k:\n- {v}\n" for v in values] + \
        [f"k: [{v}]\n" for v in values] + [f"k: {{a: {v}}}\n" for v in values] + [f"k: {{{k}: x}}\n" for k in keys]
    taken = 0
    for text in texts:
        direct = yamlread._direct(text)
        if direct is not yamlread._DECLINED:
            taken += 1
            assert direct == yamlread._through_libyaml(text, "t.yaml"), text
    assert taken > len(texts) / 3


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_layout_like())
def test_the_direct_reader_reads_what_libyaml_reads_or_declines(text: str) -> None:
    """A text near the layout miogen writes: the direct reader declines it, or reads what yamlread's libyaml reading
    gives (which then accepts it: no duplicate key, no other error)."""
    direct = yamlread._direct(text)
    if direct is not yamlread._DECLINED:
        assert direct == yamlread._through_libyaml(text, "t.yaml"), text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_direct_reader_reads_the_direct_writers_text(data: st.DataObject) -> None:
    """What the direct writer writes of random structures (those of the writer's test above) reads back through
    the direct reader as through libyaml, the flow collections it has read before too."""
    from miogen.spec import yamlwrite
    from miogen.spec.spec_io import _plan

    scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20),
                        st.sampled_from(["a", "b c", "", "1", "yes", "-1", "x-y", "on", "a: b", "it's", "#x"]))
    values = st.recursive(scalars, lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(tuple), st.dictionaries(st.sampled_from(["a", "b", "on", ""]), inner, max_size=3),
        st.builds(_Row, inner, inner), st.builds(_Flows, inner, inner)), max_leaves=12)
    obj = data.draw(st.one_of(st.builds(_Row, values, values), st.builds(_Flows, values, values)))
    text = yamlwrite.direct(obj, _plan)
    if text is not None:
        expected = yamlread._through_libyaml(text, "t.yaml")
        for _ in range(2):
            direct = yamlread._direct(text)
            assert direct is yamlread._DECLINED or direct == expected, text


_NUMBER_PIECES = st.sampled_from([*"0123456789+-._:eExXabfinTtZ ", "0x", "0b", ".inf", ".NaN", "-.Inf", "1e+3",
                                  "2001-12-14", "t21:59:43", "12:30", "\t", "é", "٣"])


@settings(max_examples=500, deadline=None)
@example("08")  # no octal: a string
@example("0")
@example("2001-12-14t21:59:43.10Z")
@example("2001-12-14 21:59:43.10 -5")
@example("1.2.3")
@example("0x1F")
@example("-.Inf")
@example("1e+3")
@example("1.0E+3")
@example("0b101")
@example(".nan")
@example("190:20:30.15")
@given(st.lists(_NUMBER_PIECES, min_size=1, max_size=10).map("".join))
def test_a_string_is_ruled_out_as_a_number_only_where_the_pattern_would_rule_it_out(text: str) -> None:
    """The writer decides whether YAML 1.1 reads a string as a number without its pattern where it can (two dots, a
    letter no number holds, a plain decimal integer): always the pattern's own answer."""
    from miogen.spec import yamlwrite

    if text[0] in "0123456789+-.":  # (the writer asks only for these)
        assert yamlwrite._is_number(text) == (yamlwrite._number().fullmatch(text) is not None)

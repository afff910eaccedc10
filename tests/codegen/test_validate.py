"""No spec, annotation or target file can run code, hang or crash the loader: every string that
reaches generated code is validated on load (codegen/spec/validate.py), free text is escaped, YAML is
bounded; crafted files are refused with the file, line and YAML path, and nothing executes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hypothesis
import pytest
import yaml

from miogen.base.record import replace
from miogen.base import escape
from miogen.spec import literals, model, rules, validate
from miogen.semantics.annotations import Annotations, load_annotations
from miogen.base.errors import CodegenError, SpecError
from miogen.spec.model import CType
from miogen.spec.releases import Version
from miogen.semantics.resolve import resolve
from miogen.base.files import write_tree as write
from miogen.render.package import render
from miogen.spec.spec_io import MAX_YAML_DEPTH, MAX_YAML_NODES, dumps, load, load_as, loads
from miogen.spec.target import Target, load_target

from ..helpers import FIXTURE_ANNOTATIONS, fixture_spec, planned, REPO, SPECS, target


def test_every_string_field_has_a_rule() -> None:
    for root in (model.Spec, Annotations, Target):
        assert validate.unruled_fields(root) == [], root.__name__


@pytest.mark.parametrize("version", ["3.5.0", (3, 5, 0), Version(1_000_000, 0, 0), Version(3, -1, 0)])
def test_a_release_built_in_memory_is_a_version_in_range(version: Any) -> None:
    """The spec holds its release as a Version (read once from X.Y.Z): a spec built in memory with text, a bare
    tuple or numbers the grammar cannot spell is refused before anything is rendered, naming the field."""
    with pytest.raises(SpecError, match=r": version: expected a version X\.Y\.Z \(a Version\)"):
        resolve(replace(fixture_spec(), version=version), load_annotations(FIXTURE_ANNOTATIONS))


# ------------------------------------------------------------------ crafted specs


def _payloads(marker: Path) -> list[str]:
    touch = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    return [
        f'x"; {touch}; "',
        f'x"""\n{touch}\n"""',
        f"x\n{touch}  #",
        f"x'); {touch}; ('",
        "ｍiopenFoo",  # NFKC turns it into miopenFoo: a second spelling of one name
        "miopen\0Foo",
        "miopenFoo\u202e",
    ]


def _first(items: tuple[Any, ...], **changes: Any) -> tuple[Any, ...]:
    return (replace(items[0], **changes), *items[1:])


def _f0(s: model.Spec, **changes: Any) -> model.Spec:
    return replace(s, functions=_first(s.functions, **changes))


def _param0(s: model.Spec, **changes: Any) -> model.Spec:
    f = next(i for i, f in enumerate(s.functions) if f.params)
    fn = s.functions[f]
    return replace(s, functions=(*s.functions[:f], replace(fn, params=_first(fn.params, **changes)),
                                 *s.functions[f + 1:]))


def _record0(s: model.Spec, **changes: Any) -> model.Spec:
    return replace(s, records=_first(s.records, **changes))


SITES: dict[str, tuple[Callable[[model.Spec, str], model.Spec], str]] = {
    "version": (lambda s, v: replace(s, version=v), r"version"),
    "generator_version": (lambda s, v: replace(s, generator_version=v), r"generator_version"),
    "target": (lambda s, v: replace(s, target=v), r"target"),
    "header name": (lambda s, v: replace(s, header=replace(s.header, name=v)), r"header\.name"),
    "parse define": (lambda s, v: replace(s, parse=replace(s.parse, defines=(v,))), r"parse\.defines\[0\]"),
    "enum constant": (lambda s, v: replace(s, enums=_first(s.enums, constants=_first(s.enums[0].constants, name=v))),
                      r"enums\[0\]\.constants\[0\]\.name"),
    "enum name": (lambda s, v: replace(s, enums=_first(s.enums, name=v)), r"enums\[0\]\.name"),
    "enum underlying": (lambda s, v: replace(s, enums=_first(s.enums, underlying=v)), r"enums\[0\]\.underlying"),
    "function group": (lambda s, v: _f0(s, group=v), r"functions\[0\]\.group"),
    "function name": (lambda s, v: _f0(s, name=v), r"functions\[0\]\.name"),
    "param name": (lambda s, v: _param0(s, name=v), r"functions\[\d+\]\.params\[0\]\.name"),
    "param spelling": (lambda s, v: _param0(s, c=v), r"functions\[\d+\]\.params\[0\]\.c"),
    "param default": (lambda s, v: _param0(s, default=v), r"functions\[\d+\]\.params\[0\]\.default"),
    "type name": (lambda s, v: _param0(s, type=replace(s.functions[0].params[0].type, name=v)),
                  r"functions\[\d+\]\.params\[0\]\.type\.name"),
    "record name": (lambda s, v: _record0(s, name=v), r"records\[0\]\.name"),
    "field name": (lambda s, v: _record0(s, fields=_first(s.records[0].fields, name=v)),
                   r"records\[0\]\.fields\[0\]\.name"),
    "handle name": (lambda s, v: replace(s, handles=_first(s.handles, name=v)), r"handles\[0\]\.name"),
    "handle tag": (lambda s, v: replace(s, handles=_first(s.handles, tag=v)), r"handles\[0\]\.tag"),
    "typedef name": (lambda s, v: replace(s, typedefs=_first(s.typedefs, name=v)), r"typedefs\[0\]\.name"),
    "callback name": (lambda s, v: replace(s, callbacks=_first(s.callbacks, name=v)), r"callbacks\[0\]\.name"),
}


@pytest.mark.parametrize("site", sorted(SITES))
def test_crafted_spec_strings_are_refused_and_never_run(site: str, tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    edit, path = SITES[site]
    base = fixture_spec()
    ann = load_annotations(FIXTURE_ANNOTATIONS)
    for payload in _payloads(marker):
        evil = edit(base, payload)
        text = dumps(evil)
        with pytest.raises(SpecError, match=rf"^evil\.yaml:\d+: {path}: ") as e:
            loads(text, "evil.yaml")
        assert len(str(e.value)) < 400  # the message quotes the payload cut short, never whole
        with pytest.raises(CodegenError):  # a spec built in memory gets the same checks before rendering
            render(planned(evil, ann, target(), "# crafted"))
    assert not marker.exists()


@pytest.mark.parametrize("site", ["enum constant", "enum name", "function name", "record name", "field name",
                                  "handle name", "typedef name", "callback name"])
@pytest.mark.parametrize("name", ["__class__", "_fields_", "None", "lambda", "class"])
def test_python_internal_names_are_refused(site: str, name: str) -> None:
    edit, path = SITES[site]
    with pytest.raises(SpecError, match=rf"^n\.yaml:\d+: {path}: "):
        loads(dumps(edit(fixture_spec(), name)), "n.yaml")


def test_free_text_renders_inert_and_reads_back(tmp_path: Path) -> None:
    """Free text that is allowed (printable) is escaped by the templates: rendered, imported, nothing runs."""
    marker = tmp_path / "PWNED"
    touch = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    text = f'a"b\'c{{{touch}}}\\d """ e{touch}'
    spec = replace(fixture_spec(), release='a"b\'c{x}\\d """ e')
    tgt = replace(target(), error_suffix=text, status_hints={"miopenStatusNotImplemented": text})
    files = render(planned(spec, load_annotations(FIXTURE_ANNOTATIONS), tgt, "# free text"))
    write(files, tmp_path / "inert_pkg")
    probe = ("import inert_pkg, sys\n"
             "e = inert_pkg.errors.raise_status\n"
             "try:\n    e(6, 'f', {})\nexcept Exception as exc:\n    sys.stdout.write(str(exc))\n")
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count(text) == 2  # the hint and the suffix, verbatim
    assert not marker.exists()


def test_py_str_reads_back_what_json_cannot() -> None:
    """`tojson` writes surrogate pairs, which Python reads as two lone surrogates: escape.py_str does not."""
    for text in ("😀 emoji", "\ud800 lone", 'q"uo\\te', "{brace}", "nul\0", "tab\tnl\n\u2028"):
        assert eval(escape.py_str(text)) == text  # noqa: S307 - our own literal
        assert escape.py_str(text).isascii()
        assert eval('f"' + escape.fstr_text(text) + '"') == text  # noqa: S307
        assert "\n" not in escape.py_comment(text) and "\\" not in escape.c_comment(text)
    with pytest.raises(CodegenError):
        escape.c_include('a"b.h')


# ------------------------------------------------------------------ crafted target and annotation files


TARGET_SITES = {
    "display_name": 'MIOpen"; x()', "library_env": "MIOPEN_LIBRARY\"+x()+\"", "library_root_env": "ROCM PATH",
    "find_library_name": 'MIOpen")\nx()#', "error_base": "miopen_error", "version_getter": "_get",
    "function_prefix": "miopen;", "status_type": "class", "header": "../miopen.h", "name": "../../tmp",
    "library_names": ["lib\nx.so"], "default_defines": ["A B"], "error_suffix": "bad\nline",
    "status_exceptions": {"miopenStatusBadParm": {"name": "None"}},
    "releases": {"3.0": "rocm"}, "status_hints": {"miopenStatusBadParm": "x\u202ey"},
}


@pytest.mark.parametrize("key", sorted(TARGET_SITES))
def test_crafted_target_files_are_refused(key: str, tmp_path: Path) -> None:
    data = yaml.safe_load((SPECS / "target.yaml").read_text())
    data[key] = TARGET_SITES[key]
    p = tmp_path / "target.yaml"
    p.write_text(yaml.safe_dump(data, allow_unicode=True))
    with pytest.raises(SpecError, match=rf"^{p}:\d+: {key}"):
        load_target(p)


def test_target_exception_names_must_not_collide(tmp_path: Path) -> None:
    data = yaml.safe_load((SPECS / "target.yaml").read_text())
    data["status_exceptions"]["miopenStatusBadParm"]["name"] = "MIOpenInternalError"
    p = tmp_path / "target.yaml"
    p.write_text(yaml.safe_dump(data))
    with pytest.raises(SpecError, match=r"MIOpenInternalError is also status_exceptions"):
        load_target(p)


@pytest.mark.parametrize(("snippet", "message"), [
    ("functions:\n  miopenSetTensor:\n    params:\n      x: {nullable: true}\n  miopenSetTensor:\n    why: again\n",
     r"ann\.yaml:\d+: functions\.miopenSetTensor: duplicate key 'miopenSetTensor' \(first at line \d+\)"),
    ("functions:\n  miopenSetTensor:\n    params:\n      x: {nullable: true, nullable: false}\n",
     r"functions\.miopenSetTensor\.params\.x\.nullable: duplicate key"),
    ("functions:\n  'miopenX\"; import os #':\n    why: x\n", r"ann\.yaml:5: functions\.miopenX\"; import os #: .*not a C identifier"),
    ("functions:\n  miopenX:\n    since: 3.0\n", r"functions\.miopenX\.since: expected a version X\.Y\.Z; got float 3\.0"),
    ("functions:\n  miopenX:\n    since: '3.0.0\\n'\n", r"functions\.miopenX\.since: .*not a version"),
    ("functions:\n  true:\n    why: x\n", r"functions\.True: keys must be strings; got bool True"),
    ("functions:\n  miopenX:\n    params:\n      x: {length: 'a b'}\n", r"params\.x\.length: 'a b': not a C ident"),
])
def test_crafted_annotations_are_refused(snippet: str, message: str, tmp_path: Path) -> None:
    p = tmp_path / "ann.yaml"
    p.write_text("schema_version: 1\nrules: {count_names: [], nullable_buffers: [], scratch_buffers: []}\n"
                 "handles: {}\n" + snippet)
    with pytest.raises(SpecError, match=message):
        load_annotations(p)


# ------------------------------------------------------------------ YAML limits


def _load_text(text: str, tmp_path: Path) -> None:
    p = tmp_path / "x.yaml"
    p.write_text(text)
    load_as(Target, p, skip=("path", "exported_functions"))


@pytest.mark.parametrize(("text", "message"), [
    ("a: 1\na: 2\n", r"x\.yaml:2: a: duplicate key 'a' \(first at line 1\)"),
    ("a: {b: 1, b: 2}\n", r"x\.yaml:1: a\.b: duplicate key"),
    ("1: x\n0x1: y\n", r"duplicate key 1"),
    # depth past our limit but within any YAML parser's own: our check refuses it
    ("[" * 100 + "]" * 100, rf"x\.yaml:1: (\[0\])+: nesting deeper than {MAX_YAML_DEPTH} levels"),
    # far deeper: whichever refuses first (libyaml >= 0.2.6 has a limit of its own), it is our SpecError
    # naming the file, never the parser's exception or a RecursionError
    ("[" * 100_000 + "]" * 100_000, rf"x\.yaml(:1)?: ((\[0\])+: nesting deeper than {MAX_YAML_DEPTH} levels|not valid YAML)"),
    ("a:\n" + "".join(" " * i + "- \n" for i in range(1, 200)), rf"nesting deeper than {MAX_YAML_DEPTH}"),
    ("a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8)),
     rf"more than {MAX_YAML_NODES} YAML nodes"),
    ("a: &a {x: 1}\nb:\n  <<: *a\n", r"x\.yaml:3: b: merge keys"),
    ("? [a, b]\n: 1\n", r"a mapping key must be a plain scalar"),
    ("a: !!int 1" + "0" * 5000 + "\n", r"not valid YAML"),
    ("? !!timestamp 2020-13-45\n: 1\n", r"bad key"),
    ("a: !!python/object:os.system [echo]\n", r"not valid YAML"),
    ("a: b: c\n", r"not valid YAML"),
    ("a: \0\n", r"not valid YAML"),
])
def test_malformed_yaml_is_refused_quickly(text: str, message: str, tmp_path: Path) -> None:
    t0 = time.perf_counter()
    with pytest.raises(SpecError, match=message) as e:
        _load_text(text, tmp_path)
    assert time.perf_counter() - t0 < 10
    assert len(str(e.value)) < 1000


def test_unbounded_values_are_cut_in_messages(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as e:
        _load_text("name: [" + ", ".join(["x" * 1000] * 1000) + "]\n", tmp_path)
    assert len(str(e.value)) < 400


@pytest.mark.parametrize("what", ["directory", "fifo", "/dev/zero", "binary", "huge"])
def test_what_is_not_a_yaml_file(what: str, tmp_path: Path) -> None:
    p = tmp_path / "x.yaml"
    if what == "directory":
        p.mkdir()
    elif what == "fifo":
        os.mkfifo(p)
    elif what == "/dev/zero":
        p = Path("/dev/zero")
    elif what == "binary":
        p.write_bytes(b"\xff\xfe\x00garbage")
    else:
        with p.open("wb") as fh:
            fh.truncate(17 * 1024 * 1024)
    with pytest.raises(SpecError, match=r"not a regular file|not a UTF-8|larger than"):
        load(p)


# ------------------------------------------------------------------ default arguments


@pytest.mark.parametrize(("text", "kind", "name", "expected"), [
    ("010", "int", "int", "8"), ("0x10", "int", "int", "16"), ("0b101", "int", "long", "5"),
    ("1'000'000", "int", "long long", "1000000"), ("42u", "int", "unsigned int", "42"),
    ("42ULL", "int", "unsigned long long", "42"), ("-1", "int", "int", "-1"), ("- -1", "int", "int", "1"),
    ("(-(2))", "int", "int", "-2"), ("true", "int", "int", "1"), ("0", "int", "size_t", "0"),
    ("9223372036854775807LL", "int", "int64_t", "9223372036854775807"),
    ("1.5", "float", "double", "1.5"), ("1.f", "float", "float", "1.0"), ("0.1f", "float", "float", "0.10000000149011612"),
    (".5", "float", "double", "0.5"), ("1e-5", "float", "double", "1e-05"), ("0x1p-2", "float", "double", "0.25"),
    ("0x1.8p1f", "float", "float", "3.0"), ("1", "float", "double", "1.0"), ("3.4e38", "float", "float", "3.4e+38"),
    ("2", "bool", "bool", "true"), ("0", "bool", "bool", "false"), ("0.5", "bool", "bool", "true"),
    ("false", "bool", "bool", "false"),
])
def test_default_literals_are_exact(text: str, kind: str, name: str, expected: str) -> None:
    t = CType(kind=kind, name=name)  # type: ignore[arg-type]
    assert literals.canonical(literals.parse(text), t) == expected
    assert literals.check_canonical(expected, t) is None


@pytest.mark.parametrize(("text", "kind", "name", "message"), [
    ("1e309", "float", "double", "not finite"), ("1e39", "float", "float", "out of range for float"),
    ("-1", "int", "unsigned int", "out of range"), ("2147483648", "int", "int", "out of range"),
    ("18446744073709551616", "int", "unsigned long long", "too large"), ("-1u", "int", "long", "negates an unsigned"),
    ("1.5", "int", "int", "not an integer"), ("'a'", "int", "int", "character"), ("08", "int", "int", "not a literal"),
    ("1 + 1", "int", "int", "not a literal"), ("--1", "int", "int", "not a literal"), ("-true", "bool", "bool", "negates"),
    ("nullptr", "int", "int", "not an integer"), ("x" * 300, "int", "int", "characters"), ("1'", "int", "int", "not"),
    ("0x", "int", "int", "not a literal"), ("1e", "float", "double", "not a literal"), ("inf", "float", "double", "known"),
])
def test_default_literals_refused(text: str, kind: str, name: str, message: str) -> None:
    t = CType(kind=kind, name=name)  # type: ignore[arg-type]
    with pytest.raises(literals.LiteralError, match=message):
        literals.canonical(literals.parse(text), t)


def test_pointer_and_enum_defaults() -> None:
    ptr = CType(kind="void", name="void", depth=1, const=(False, False))
    for text in ("nullptr", "NULL", "0", "(0)"):
        assert literals.canonical(literals.parse(text), ptr) == "nullptr"
    with pytest.raises(literals.LiteralError, match="pointer"):
        literals.canonical(literals.parse("1"), ptr)
    enum = CType(kind="enum", name="miopenMode_t")
    assert literals.canonical(literals.parse("miopenModeHigh"), enum, enum_constants=lambda _: {"miopenModeHigh"}) \
        == "miopenModeHigh"
    with pytest.raises(literals.LiteralError, match="not a constant of"):
        literals.canonical(literals.parse("other"), enum, enum_constants=lambda _: {"miopenModeHigh"})
    with pytest.raises(literals.LiteralError, match="needs a cast"):
        literals.canonical(literals.parse("1"), enum)


def test_spec_defaults_must_be_canonical() -> None:
    text = dumps(fixture_spec())
    assert "default: '-1'" in text
    with pytest.raises(SpecError, match=r"params\[\d+\]\.default: '010': not in canonical form: write '8'"):
        loads(text.replace("default: '-1'", "default: '010'", 1), "d.yaml")
    with pytest.raises(SpecError, match=r"default: '1e309': .*not finite"):
        loads(text.replace("default: '-1'", "default: '1e309'", 1), "d.yaml")


def test_committed_files_load() -> None:
    for p in sorted(SPECS.glob("*.*.*.yaml")):
        load(p)
    for t in sorted((REPO / "specs").glob("*/target.yaml")):
        load_target(t)
    for a in sorted((REPO / "specs").glob("*/annotations.yaml")):
        load_annotations(a)


def test_limits_doc_states_the_real_limits() -> None:
    from miogen.spec import spec_io, yamlread
    from miopen import algo, workspace

    doc = (REPO / "docs" / "limits.md").read_text()
    for text in (f"{yamlread.MAX_YAML_BYTES // (1 << 20)} MiB", f"| nesting depth | {spec_io.MAX_YAML_DEPTH} ",
                 f"{spec_io.MAX_YAML_NODES:,}", f"{spec_io.MAX_YAML_ALIASES:,}", f"at most {rules.MAX_NAME} characters",
                 f"{algo.MAX_BLOB_BYTES // (1 << 20)} MiB", f"pointer depth at most {rules.MAX_POINTER_DEPTH}",
                 f"{rules.MAX_ARRAY:,} elements", f"at most {rules.MAX_TEXT}"):
        assert text in doc, text
    assert workspace.MAX_WORKSPACE_BYTES == 2**63 - 1 and "2^63 − 1" in doc


@hypothesis.given(hypothesis.strategies.text(alphabet=hypothesis.strategies.characters(min_codepoint=0, max_codepoint=0x10FFFF)
                                             | hypothesis.strategies.sampled_from('"\\ ~\x7f\n\t{}')))
def test_py_str_and_docstrings_read_back_as_the_text_on_every_path(text: str) -> None:
    """The class of texts: plain printable ASCII (returned as it is) and anything else (escaped char by char) give
    ASCII literals that read back as the text; a docstring reads back as the text with its lone surrogates
    spelled as escapes."""
    literal = escape.py_str(text)
    assert literal.isascii() and eval(literal) == text  # noqa: S307 - our own literal
    doc = escape.docstring_text(text)
    shown = "".join(f"\\u{ord(c):04x}" if "\ud800" <= c <= "\udfff" else c for c in text)
    assert doc.isascii() and eval(f'"""{doc}"""') == shown  # noqa: S307 - our own literal

"""`python -m miogen audit`: the C++ index, every detection kind, notes, the report format, the CLI.

The implementation under test is tests/fixtures/audit/ (a small MIOpen-shaped header and C++ sources
written for these tests); its report is compared byte for byte with tests/golden/audit_report.md/.json.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from miogen.base.record import replace
from miogen import audit as A
from miogen.audit import cppsrc
from miogen.spec import model
from miogen.semantics.annotations import load_annotations
from miogen.semantics.forms import ElementScalar
from miogen.semantics.resolve import resolve
from miogen.base.errors import CodegenError
from miogen.parse.headers import ParseOptions
from miogen.parse.parser import parse_header
from miogen.spec.spec_io import dump, load
from miogen.semantics.annotations import in_range

from ..helpers import REPO, SPECS, check_golden, target

FX = REPO / "tests" / "fixtures" / "audit"


@functools.cache
def fx_spec() -> model.Spec:
    # a MIOpen-shaped header of a made-up release: what the real library exports beyond its header is not its own
    return parse_header(FX / "include" / "miopen" / "miopen.h", replace(target(), exported_functions=()),
                        ParseOptions(), "9.0.0")


@functools.cache
def fx_report() -> A.AuditReport:
    return A.audit(FX, fx_spec(), load_annotations(FX / "annotations.yaml"), A.load_idioms(FX / "idioms.yaml"),
                   A.load_notes(FX / "notes.yaml"), source_label="fixture", spec_name="fixture.yaml",
                   target_name="MIOpen")


def param(fn: str, name: str) -> A.ParamReport:
    f = next(f for f in fx_report().functions if f.name == fn)
    return next(p for p in f.params if p.name == name)


def kinds(fn: str, name: str) -> set[tuple[str, str]]:
    return {(x.kind, x.detail) for x in param(fn, name).facts}


def check(fn: str, name: str, kind: str) -> A.Check:
    return next(c for c in param(fn, name).checks if c.kind == kind)


# --------------------------------------------------------------------------- the C++ index


def test_clean_blanks_comments_strings_and_keeps_one_if_branch() -> None:
    raw = ('// *p = 1;\nint a = 0; /* p[0] = 2; */\nconst char* s = "p[0] = 3";\n'
           "#if GPU\nint gpu;\n#else\nint cpu;\n#endif\n#ifdef UNKNOWN\nint first;\n#else\nint second;\n#endif\n"
           "#define TWICE(x) ((x) + (x))\n")
    text, macros = cppsrc.clean(raw, {"GPU": 1})
    assert "p = 1" not in text and "p[0]" not in text
    assert "int gpu;" in text and "int cpu;" not in text
    assert "int first;" in text and "int second;" not in text  # unknown conditions keep their first branch
    assert macros == {"TWICE": (["x"], "((x) + (x))")}
    assert text.count("\n") == raw.count("\n")  # line structure kept


def test_macros_expand_in_their_file() -> None:
    text, macros = cppsrc.clean("#define OPT(d) ((d) != nullptr ? f(d) : g)\nint x = OPT(desc);\n")
    assert "((desc) != nullptr ? f(desc) : g)" in cppsrc.expand_macros(text, macros)


def test_definitions_constructors_qualifiers_and_templates() -> None:
    src = (
        "struct S {\n  explicit S(Item it, int n = 2) : a(f(it.p)), b{n} { use(it.p); }\n"
        "  int Get(std::vector<int, A> v, const T& t) const noexcept { return 0; }\n  void Decl(int);\n};\n"
        "auto S::Later(int x) -> int { return x; }\nvoid free_fn(c_view<const int> v, ...) { if(v) { } }\n"
        "bool operator==(const S&, const S&) { return true; }\n")
    _, defs = cppsrc.index_file("a.cpp", src, 0)
    by = {d.qualname: d for d in defs}
    assert sorted(by) == ["Get", "S", "S::Later", "free_fn"]
    s = by["S"]
    assert [p.name for p in s.params] == ["it", "n"] and s.params[1].has_default and s.accepts(1)
    assert src[s.region:].startswith(": a(f(it.p))")  # the init list is analysed with the body
    assert [p.type for p in by["Get"].params] == ["std::vector<int, A>", "const T&"]
    assert by["free_fn"].variadic and by["free_fn"].accepts(5)
    assert by["S::Later"].name == "Later"


def test_unnamed_and_reference_parameters() -> None:
    params, _ = cppsrc.parse_params("miopenHandle_t, const int*, int& out, const T& in, unsigned long long, T&& f")
    assert [p.name for p in params] == [None, None, "out", "in", None, "f"]
    assert [p.mutable_ref for p in params] == [False, False, True, False, False, False]


def test_split_args_respects_templates_and_brackets() -> None:
    text = "a, std::pair<int, int>{1, 2}, f(b, c), x < y, z"
    assert [text[a:b].strip() for a, b in cppsrc.split_args(text)] == \
        ["a", "std::pair<int, int>{1, 2}", "f(b, c)", "x < y", "z"]


def test_skip_dirs_and_sorted_index() -> None:
    idioms = A.load_idioms(FX / "idioms.yaml")
    src = cppsrc.load_source(FX, idioms.source_dirs, idioms.skip_dirs, idioms.extensions, idioms.defines)
    paths = [f.path for f in src.files]
    assert paths == sorted(paths) and not any("kernels" in p for p in paths)
    assert [d.where for d in src.defs["miopenFill"]] == ["src/demo_api.cpp:miopenFill"]
    assert len(src.defs["ScaleImpl"]) == 1  # the #else branch is left out


# --------------------------------------------------------------------------- detection kinds


def test_writes() -> None:
    assert ("write", "assigned") in kinds("miopenCreateTensorDescriptor", "tensorDesc")  # auto& x = deref(p); x = ..
    assert ("write", "assigned") in kinds("miopenGetInfo", "count")  # if(p) *p = ..
    assert ("write", "assigned") in kinds("miopenGetInfo", "bytes")  # deref(p) = ..
    info = param("miopenGetInfo", "dataType").facts  # *p passed to a T& parameter that is assigned
    assert any(x.kind == "write" and x.where == "src/include/demo/tensor.hpp:GetType" and x.depth == 1 for x in info)
    assert ("write", "std::copy destination") in kinds("miopenGetDims", "dims")
    assert ("write", "std::fill_n destination") in kinds("miopenFill", "values")
    assert ("write", "assigned") in kinds("miopenQuery", "size")  # through a callee's pointer parameter
    assert check("miopenFill", "values", "direction").status == "disagree"


def test_receiver_and_namespace_pick_the_callee() -> None:
    assert all("Pool" not in x.where for x in param("miopenGetInfo", "dataType").facts)
    assert all("src/ref/" not in x.where for x in param("miopenNorm", "y").facts)  # ops::Norm, not ref::Norm


def test_device_memory() -> None:
    assert ("device", "DataCast()") in kinds("miopenScale", "y")
    assert check("miopenScale", "y", "memory").status == "agree"


def test_null_handling() -> None:
    assert check("miopenSetDims", "strides", "nullable").impl.startswith("NULL handled: if(strides == NULL)")
    assert ("null-rejects", "if(y == NULL) fails") in kinds("miopenScale", "y")  # one call deep
    assert ("null-rejects", "assert(x != NULL)") in kinds("miopenBlend", "x")
    assert ("null-conditional", "if(workspace == NULL) fails") in kinds("miopenRun", "workspace")  # `&& size != 0`
    assert ("null-accepts", "(meanDesc) != NULL") in kinds("miopenNorm", "meanDesc")  # through a local macro
    assert ("null-unsafe", "std::fill_n") in kinds("miopenFill", "values")
    assert ("null-accepts", "alpha != NULL") in kinds("miopenNorm", "alpha")  # a conditional expression
    assert check("miopenNorm", "meanDesc", "nullable").status == "agree"
    # the logging block's dims[0] does not count: the first thing NULL meets is the range read
    assert check("miopenSetDims", "dims", "nullable").impl.startswith("dereferenced without a NULL test")


def test_scalar_types() -> None:
    assert ("read-as", "element") in kinds("miopenScale", "alpha")
    assert check("miopenScale", "alpha", "scalar-type").status == "agree"  # element_of: yDesc
    assert param("miopenScale", "alpha").view.scalar_type == "scalar-element-type"
    assert ("read-as", "float") in kinds("miopenBlend", "alpha")
    assert check("miopenBlend", "alpha", "scalar-type").status == "agree"  # scalar: float
    assert param("miopenBlend", "alpha").view.scalar_type == "scalar-float"
    assert {("read-as", "float"), ("read-as", "double")} <= kinds("miopenBlend", "beta")  # C-style and static_cast
    assert check("miopenBlend", "beta", "scalar-type").status == "agree"
    assert check("miopenIgnore", "alpha", "scalar-type").impl.startswith("not read")  # unnamed in the callee


def test_lengths_addresses_storage_records() -> None:
    assert ("stride", "4") in kinds("miopenSlice", "slices")
    assert check("miopenSlice", "slices", "length").status == "agree"  # per: 4
    assert ("range", "nbDims") in kinds("miopenSetDims", "dims")
    assert check("miopenRun", "items", "length").status == "agree"
    assert ("write-address", "address of demo::deref(desc).state") in kinds("miopenGetState", "states")
    assert check("miopenGetState", "states", "address").status == "agree"  # holds: address_of_device_pointer
    assert ("stored", "assigned to a member") in kinds("miopenKeep", "buffer")
    fields = {f.field: {x.kind for x in f.facts} for f in fx_report().records}
    assert fields == {"descriptor": {"null-accepts", "null-conditional", "read"}, "buffer": {"device"}}
    assert check("miopenRun", "items", "fields").status == "agree"  # records: miopenItem_t


def test_outputs_annotated_nullable_are_checked() -> None:
    """An output a wrapper may pass as NULL (the element-type query's other outputs): NULL must be accepted."""
    assert check("miopenGetInfo", "count", "nullable").status == "agree"  # if(count != nullptr)
    assert check("miopenGetInfo", "bytes", "nullable").status == "disagree"  # deref(bytes)
    assert not any(c.kind == "nullable" for c in param("miopenGetInfo", "dataType").checks)  # not nullable: not asked


def test_unused_parameters() -> None:
    assert param("miopenIgnore", "beta").facts[0].kind == "unused"
    assert check("miopenIgnore", "beta", "nullable").status == "agree"


# --------------------------------------------------------------------------- notes


def test_notes_explain_name_forms_add_findings_and_report_stale_ones() -> None:
    mean = check("miopenNorm", "mean", "nullable")
    assert mean.status == "explained" and mean.why == "kept required on purpose in the fixture"
    alpha = check("miopenNorm", "alpha", "nullable")  # a finding of a form the annotation states: agreement
    assert (alpha.status, alpha.form, alpha.impl) == ("agree", "nullable-scalar", "NULL means 1.0 (src/ops/norm.cpp:Norm)")
    review = check("miopenQuery", "size", "output")
    assert review.review and review.form == "dropped-output" and review.status == "agree"
    assert fx_report().stale_notes == ("miopenGetDims.dims (memory): the note matches nothing (the check agrees); "
                                       "remove it or scope it with since:/until:",)


@pytest.mark.parametrize("note, message", [
    ("{check: nullable, needs: no-such-form}", "is no known form"),
    ("{check: nullable, why: a, needs: length-multiple}", "exactly one of why: or needs:"),
    ("{check: nullable}", "exactly one of why: or needs:"),
    ("{check: nullable, why: a, impl: b}", "needs where:"),
    ("{check: nothing, why: a}", "expected one of direction"),
    ("{check: nullable, why: a, since: 3.x.0}", r"notes\.miopenX\.p\[0\]\.since: '3\.x\.0': not a version X\.Y\.Z"),
    ("{check: nullable, why: a, until: 3.2}", r"notes\.miopenX\.p\[0\]\.until: expected a version X\.Y\.Z; got float"),
])
def test_bad_notes_are_named(tmp_path: Path, note: str, message: str) -> None:
    path = tmp_path / "notes.yaml"
    path.write_text(f"schema_version: 1\nnotes:\n  miopenX:\n    p:\n      - {note}\n", encoding="utf-8")
    with pytest.raises(CodegenError, match=message):
        A.load_notes(path)


def test_forms_agree_when_stated_disagree_when_not_and_need_vocabulary_when_unsayable(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A form the vocabulary states (EXPRESSIBLE) is an agreement when the annotation says it and a
    disagreement (fix annotations.yaml) when it does not; a form it cannot state needs vocabulary."""
    spec = fx_spec()
    sem = resolve(spec, load_annotations(FX / "annotations.yaml"))
    fs = sem.functions["miopenScale"]
    ps = fs.param("alpha")
    assert isinstance(ps.form, ElementScalar) and ps.element_of == "yDesc"
    facts = param("miopenScale", "alpha").facts
    plain = replace(ps, scalar=None, element_of=None, element_table=None)
    stated = next(c for c in A.compare(fs, ps, facts, {}, []) if c.kind == "scalar-type")
    unstated = next(c for c in A.compare(fs, plain, facts, {}, []) if c.kind == "scalar-type")
    assert (stated.status, unstated.status, unstated.form) == ("agree", "disagree", "scalar-element-type")
    monkeypatch.setitem(A.EXPRESSIBLE, "scalar_type", frozenset({"float-or-double"}))
    assert not A.expressible("scalar-element-type") and A.expressible("out-address")
    unsayable = next(c for c in A.compare(fs, plain, facts, {}, []) if c.kind == "scalar-type")
    assert (unsayable.status, unsayable.form) == ("needs-vocabulary", "scalar-element-type")
    slices = sem.functions["miopenSlice"].param("slices")
    assert slices.per == 4
    strides = replace(slices, per=None)
    got = next(c for c in A.compare(sem.functions["miopenSlice"], strides, param("miopenSlice", "slices").facts, {},
                                    []) if c.kind == "length")
    assert (got.status, got.form) == ("disagree", "length-multiple")
    assert A.view(fs, ps).scalar_type == "scalar-element-type"


# --------------------------------------------------------------------------- the report


def test_report_golden() -> None:
    check_golden("audit_report.md", A.to_markdown(fx_report()))
    check_golden("audit_report.json", A.to_json(fx_report()))


def test_report_is_deterministic_across_hash_seeds(tmp_path: Path) -> None:
    spec_path = tmp_path / "fixture.yaml"
    dump(fx_spec(), spec_path)
    outs = []
    for seed in ("1", "2"):
        out = tmp_path / f"r{seed}.md"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run([sys.executable, "-m", "miogen", "audit", str(FX), "--spec", str(spec_path),
                        "--annotations", str(FX / "annotations.yaml"), "--notes", str(FX / "notes.yaml"),
                        "--idioms", str(FX / "idioms.yaml"), "--source-label", "fixture", "-o", str(out)],
                       check=True, cwd=REPO, env=env, capture_output=True)
        outs.append(out.read_text(encoding="utf-8"))
    assert outs[0] == outs[1] == A.to_markdown(fx_report())


# --------------------------------------------------------------------------- command line


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "miogen", "audit", *args], cwd=REPO, capture_output=True,
                          text=True)


@pytest.fixture(scope="module")
def fx_spec_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("audit") / "fixture.yaml"
    dump(fx_spec(), path)
    return path


def fx_args(spec: Path) -> list[str]:
    return ["--spec", str(spec), "--annotations", str(FX / "annotations.yaml"), "--notes", str(FX / "notes.yaml"),
            "--idioms", str(FX / "idioms.yaml")]


def test_cli_json_check_and_summary(fx_spec_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    r = run_cli(str(FX), *fx_args(fx_spec_file), "--format", "json", "-o", str(out), "--check")
    assert r.returncode == 1, r.stderr  # miopenFill.values and miopenGetInfo.bytes disagree, unexplained
    assert "15/15 functions" in r.stderr and "2 disagree" in r.stderr and "stale note" in r.stderr, r.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["summary"]["checks_disagree"] == 2 and doc["version"] == "9.0.0"


@pytest.mark.parametrize("make, message", [
    (lambda p: p / "missing", "no such directory"),
    (lambda p: p, "no src/ directory here"),
    (lambda p: (p / "src").mkdir() or p, "no source files"),
    (lambda p: (p / "f").write_text("x") and p / "f", "not a directory"),
])
def test_cli_bad_source_dirs_are_clear(fx_spec_file: Path, tmp_path: Path, make, message: str) -> None:  # type: ignore[no-untyped-def]
    r = run_cli(str(make(tmp_path)), *fx_args(fx_spec_file))
    assert r.returncode == 2
    assert message in r.stderr and "Traceback" not in r.stderr


# --------------------------------------------------------------------------- the committed MIOpen files


def test_miopen_idioms_and_notes_load_and_name_real_parameters() -> None:
    A.load_idioms(SPECS / "audit-idioms.yaml")
    notes = A.load_notes(SPECS / "audit-notes.yaml")
    specs = [load(p) for p in sorted(SPECS.glob("[0-9]*.yaml"))]
    for fname, params in notes.notes.items():
        for pname, items in params.items():
            for n in items:
                hits = [s for s in specs if in_range(s.version, n)
                        and any(f.name == fname and any(p.name == pname for p in f.params) for f in s.functions)]
                assert hits, f"audit-notes.yaml: {fname}.{pname} names no parameter of a release in its range"

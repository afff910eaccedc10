"""Docstrings of the generated functions: every parameter with its type and direction, every returned value.

Checked for every function of every committed release, on the docstrings the committed generated/ carries
(generated/ is what the specs render: `make check-generated`), and on the .pyi stubs IDEs read.
"""

from __future__ import annotations

import ast
import functools
import importlib
import pydoc
import re
import pytest

from miogen.base.record import replace
from miogen.semantics.suggest import AnnotationGateError
from miogen.semantics.annotations import FunctionNote, ParamNote, load_annotations
from miogen.semantics.resolved import FunctionSem
from miogen.semantics.resolve import resolve
from miogen.render.planner import plan
from miogen.render.plans import FunctionPlan, Plan
from miogen.render.package import render
from miogen.spec.releases import Version
from miogen.spec.spec_io import load

from ..conftest import Libs
from ..helpers import COMMITTED, FIXTURE_ANNOTATIONS, REPO, SPECS, fixture_spec, planned, target

RELEASES = [str(v) for v in COMMITTED.versions]
_ENTRY = re.compile(r"^ {8}(\S+) \((.*?)\): (.*)$", re.S)


@functools.cache
def _plan(version: str) -> tuple[Plan, dict[str, FunctionSem]]:
    ann = load_annotations(SPECS / "annotations.yaml")
    spec = load(SPECS / f"{version}.yaml")
    sem = resolve(spec, ann)
    return plan(spec, sem, target(), "# test"), sem.functions


def _sections(doc: str) -> dict[str, list[str]]:
    """Section title -> its entries (an entry: its first line at 8 spaces, continuation lines joined)."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in doc.splitlines()[1:]:
        if re.fullmatch(r" {4}[A-Z][a-z]+:", line):
            current = out.setdefault(line.strip()[:-1], [])
        elif current is not None and line.startswith(" " * 9) and current:
            current[-1] += " " + line.strip()
        elif current is not None and line.startswith(" " * 8):
            current.append(line)
    return out


def _check_function(f: FunctionPlan, fs: FunctionSem, doc: str) -> None:
    where = f"{f.py_name} ({f.c_name})"
    assert doc.startswith(f.summary), where
    sections = _sections(doc)
    by_c = {p.name: p for p in fs.params}
    args = {m.group(1): (m.group(2), m.group(3)) for m in map(_ENTRY.match, sections.get("Args", [])) if m}
    for pp in f.params:
        p = by_c[pp.c_name]
        if pp.py:  # in the signature: an Args entry with its type hint and its direction first
            assert pp.py in args, f"{where}: no Args entry for {pp.py}"
            hint, text = args[pp.py]
            assert hint == pp.hint, f"{where}: {pp.py}: {hint} != {pp.hint}"
            memory = "by value" if p.shape == "value" else f"{p.memory} memory"
            assert text.startswith(f"{p.direction}, {memory}"), f"{where}: {pp.py}: {text}"
            if p.nullable:
                assert "None passes NULL" in text, f"{where}: {pp.py}"
                if p.null_means:
                    assert p.null_means in text, f"{where}: {pp.py}"
            if p.shape in ("array", "blob") and p.direction == "in":
                assert "length" in text, f"{where}: {pp.py}: where the length comes from"
        elif not pp.out:  # filled in by the wrapper: named in the Note
            assert f"`{pp.c_name}` ({p.direction}" in doc, f"{where}: {pp.c_name} not described"
    returns = sections.get("Returns", [])
    assert returns, f"{where}: no Returns section"
    fields = [(pp.out_name, pp.out_hint, by_c[pp.c_name]) for pp in f.params if pp.out]
    if f.result_class:
        assert returns[0].strip().startswith(f"{f.result_class}: a NamedTuple"), where
        entries = {m.group(1): (m.group(2), m.group(3)) for m in
                   (re.match(r"^ {12}(\S+) \((.*?)\): (.*)$", line, re.S) for line in _field_lines(doc)) if m}
        assert [n for n, _ in f.result_fields] == list(entries), where
        for name, hint, p in fields:
            assert entries[str(name)][0] == hint, f"{where}: {name}"
            assert entries[str(name)][1].startswith(f"{p.direction}, {p.memory} memory: "), f"{where}: {name}"
    elif fields:
        name, hint, p = fields[0]
        assert returns[0].strip().startswith(f"{hint}: `{name}` ({p.direction}, {p.memory} memory): "), where
    elif f.returns != "None":
        assert returns[0].strip().startswith(f"{f.returns}: `result` (returned by the C function as "), where
    else:
        assert returns[0].strip() == "None.", where


def _field_lines(doc: str) -> list[str]:
    """The NamedTuple fields of a Returns section (first lines at 12 spaces, continuations joined)."""
    lines: list[str] = []
    inside = False
    for line in doc.splitlines():
        if line == "    Returns:":
            inside = True
        elif inside and re.fullmatch(r" {4}\S.*", line):
            break
        elif inside and line.startswith(" " * 16) and lines:
            lines[-1] += " " + line.strip()
        elif inside and line.startswith(" " * 12):
            lines.append(line)
    return lines


@pytest.mark.parametrize("version", RELEASES)
def test_every_function_documents_its_parameters_and_results(version: str) -> None:
    pl, sems = _plan(version)
    api = importlib.import_module(f"miopen._generated.{Version.parse(version).module}.api")
    for f in pl.functions:
        doc = getattr(api, f.py_name).__doc__
        plan_doc = ast.literal_eval('"""' + f.doc + '"""')  # the plan holds the source text (the header's escaped)
        assert doc is not None and doc.rstrip().endswith(plan_doc.strip()), f"{version}: {f.py_name}: docstring is not the plan's"
        _check_function(f, sems[f.c_name], doc)


def test_the_stubs_carry_the_newest_release_docstrings() -> None:
    newest = RELEASES[-1]
    api = importlib.import_module(f"miopen._generated.{Version.parse(newest).module}.api")
    tree = ast.parse((REPO / "generated" / "api.pyi").read_text(encoding="utf-8"))
    stubs = {n.name: ast.get_docstring(n, clean=False) for n in tree.body if isinstance(n, ast.FunctionDef)}
    pl, _ = _plan(newest)
    assert set(stubs) == {f.py_name for f in pl.functions}
    for f in pl.functions:
        assert stubs[f.py_name] == getattr(api, f.py_name).__doc__, f.py_name


def test_the_fixture_docstrings_cover_every_construct() -> None:
    """The fixture's rendered docstrings (its golden files show them whole) pass the same checks."""
    from ..conftest import fixture_files

    pl, files = fixture_files()
    sems = resolve(pl.spec, load_annotations(FIXTURE_ANNOTATIONS)).functions
    tree = ast.parse(files[f"{pl.spec.version.module}/api.py"])
    docs = {n.name: ast.get_docstring(n, clean=False) for n in tree.body if isinstance(n, ast.FunctionDef)}
    for f in pl.functions:
        doc = docs[f.py_name]
        assert doc is not None
        _check_function(f, sems[f.c_name], doc)
    ctx = " ".join((docs["set_allocator"] or "").split())
    assert "allocator_context (int | None): in, host memory: " in ctx and "None passes NULL: the callbacks get NULL." in ctx


def test_help_on_the_package_shows_the_sections(libs: Libs) -> None:
    import miopen

    text = " ".join(pydoc.render_doc(miopen.get_tensor_descriptor, renderer=pydoc.plaintext).split())
    assert "Args:" in text and "tensor_desc (TensorDescriptor): in, by value" in text
    assert "dims_a (list[int]): out, host memory" in text and "miopenGetTensorDescriptorSize, called first" in text
    text = " ".join(pydoc.render_doc(miopen.find_convolution_forward_algorithm, renderer=pydoc.plaintext).split())
    assert "`returnedAlgoCount`" in text and "work_space (DeviceBuffer | None): inout, device memory" in text


def test_null_means_needs_a_nullable_parameter() -> None:
    ann = load_annotations(FIXTURE_ANNOTATIONS)
    broken = replace(ann, functions={**ann.functions, "miopenSetTensor": FunctionNote(params={
        "y": ParamNote(direction="inout", null_means="nothing is written")})})
    with pytest.raises(AnnotationGateError, match=r"miopenSetTensor\.y: null_means is given, but the parameter is not "
                                                  r"nullable"):
        resolve(fixture_spec(), broken)


def test_docstrings_are_safe_for_any_annotation_text() -> None:
    """Quotes and backslashes in null_means cannot end or bend the docstring."""
    ann = load_annotations(FIXTURE_ANNOTATIONS)
    text = 'ends """ here \\ and "quoted"'
    note = replace(ann.functions["miopenSetAllocator"].params["allocatorContext"], null_means=text)
    changed = replace(ann, functions={**ann.functions, "miopenSetAllocator": FunctionNote(params={"allocatorContext": note})})
    pl = planned(fixture_spec(), changed, target(), "# test")

    files = render(pl)
    tree = ast.parse(files[f"{pl.spec.version.module}/api.py"])
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "set_allocator")
    assert text in (ast.get_docstring(fn, clean=False) or "")


@pytest.mark.parametrize("version", RELEASES)
def test_the_header_words_are_in_the_docstrings(version: str) -> None:
    """Each function's docstring quotes the header's words its spec carries: the brief as the first paragraph after
    the summary line, each parameter's text in that parameter's Args or Returns entry (after "Header:"); a
    release whose spec carries none gets no "Header:" at all."""
    spec = load(SPECS / f"{version}.yaml")
    pl, _ = _plan(version)
    api = importlib.import_module(f"miopen._generated.{Version.parse(version).module}.api")
    carried = 0
    for f in pl.functions:
        doc = getattr(api, f.py_name).__doc__
        header = spec.function(f.c_name)
        flat = " ".join(doc.split())
        if header.brief:
            assert doc.split("\n\n")[1].strip().replace("\n    ", " ") == header.brief, f.py_name
        for p, pp in zip(header.params, f.params):
            if p.doc and (pp.py or pp.out):
                carried += 1
                assert f"Header: {p.doc}" in flat, (f.py_name, p.name)
        if not header.brief and not any(p.doc for p in header.params):
            assert "Header:" not in doc, f.py_name
    if not any(fn.brief or any(p.doc for p in fn.params) for fn in spec.functions):
        assert carried == 0

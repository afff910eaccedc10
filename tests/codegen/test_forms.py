"""The forms (codegen/semantics/forms.py, codegen/semantics/annotation_forms.py) against the code and docs/annotations.md.

Every annotation form has one key (the same in annotations.yaml and in the model) and implements each
behaviour the "Adding a form" checklist names as its own method reading that key, called where the
behaviour is built. Every parameter is classified once into a tagged form refining its shape.
"""

from __future__ import annotations

import ast
import inspect
import os
import re
import subprocess
import sys
import textwrap
import typing
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from miogen.base import record
from miogen.semantics import annotation_forms, forms, resolved
from miogen.semantics.annotations import FormNotes, ParamNote, load_annotations
from miogen.semantics.resolved import ParamSem
from miogen.semantics.resolve import resolve
from miogen.audit.vocabulary import FORMS as AUDIT_FORMS
from miogen.spec.model import CType

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "annotations.md").read_text(encoding="utf-8")
IDS = [f.key for f in annotation_forms.FORMS]
#: the code outside the registry that builds each behaviour (where its calls must be)
CALLERS = "\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "codegen").rglob("*.py"))
                     if p.name != "annotation_forms.py" and "support" not in p.parts)


def _reads(fn: object, key: str) -> bool:
    """Whether the function's source reads attribute `key` (p.per, ps.holds, ...)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))  # type: ignore[arg-type]
    return any(isinstance(n, ast.Attribute) and n.attr == key for n in ast.walk(tree))


def test_each_form_is_declared_once_for_yaml_and_model() -> None:
    """The forms' keys are the fields of one declaration (annotations.FormNotes), one each, which both what
    annotations.yaml says (ParamNote) and the resolved model (ParamSem) build on, declaring none again."""
    keys = [k for f in annotation_forms.FORMS for k in (f.key, *f.also_keys)]
    declared = {f.name for f in record.fields(FormNotes)}
    assert len(keys) == len(set(keys)) and set(keys) == declared, "FORMS' keys are not annotations.FormNotes' fields"
    for cls in (ParamNote, ParamSem):
        assert issubclass(cls, FormNotes), f"{cls.__name__} does not build on FormNotes"
        again = set(vars(cls).get("__annotations__", {})) & declared
        assert not again, f"{cls.__name__} declares {sorted(again)} again"


@pytest.mark.parametrize("key", IDS)
def test_every_form_implements_every_behaviour_itself(key: str) -> None:
    """Each behaviour is a method of the form's own class reading its key (or says why it needs none),
    and the planner, docstrings, stub library, driver and audit call it; no behaviour lives elsewhere."""
    form = next(f for f in annotation_forms.FORMS if f.key == key)
    assert getattr(annotation_forms, key.upper()) is form, f"{key}: no registry instance annotation_forms.{key.upper()}"
    assert set(form.nothing) <= set(annotation_forms.BEHAVIOURS) - {"gate", "audit"}, f"{key}: nothing {sorted(form.nothing)}"
    own = vars(type(form))
    for behaviour in annotation_forms.BEHAVIOURS:
        if behaviour in form.nothing:
            assert behaviour not in own, f"{key}.{behaviour}: both implemented and said to be needed nowhere"
            assert len(form.nothing[behaviour]) > 10, f"{key}.{behaviour}: say why it needs nothing"
            continue
        method = own.get(behaviour)
        assert callable(method), f"{key}: no {behaviour}() of its own"
        assert any(_reads(method, field) for field in (key, *form.also_keys, *form.also_reads)), \
            f"{key}.{behaviour}: does not read .{key}"
        if behaviour not in ("gate", "audit"):  # those two run for every form (gate_problems, vocabulary.view)
            assert f"forms.{key.upper()}.{behaviour}(" in CALLERS, f"{key}.{behaviour}: called nowhere"
    assert form.audit_forms and set(form.audit_forms) <= set(AUDIT_FORMS), f"{key}: audit forms {form.audit_forms}"


def test_gates_and_audit_views_run_every_form() -> None:
    assert "form.gate(p, params)" in inspect.getsource(annotation_forms.gate_problems)
    assert "annotation_forms.FORMS" in CALLERS and "form.audit(ps, fs.params)" in CALLERS


@pytest.mark.parametrize("key", IDS)
def test_every_form_is_documented(key: str) -> None:
    form = next(f for f in annotation_forms.FORMS if f.key == key)
    heading = re.search(rf"^### {re.escape(form.heading)}: .*`{re.escape(key)}\b", DOC, re.M)
    assert heading, f"docs/annotations.md: no `### {form.heading}: ... {key}` section"
    assert re.search(rf"^\| `{re.escape(key)}` \|", DOC, re.M), f"docs/annotations.md: no table row for `{key}`"


def test_the_checklist_names_every_behaviour() -> None:
    checklist = DOC.split("### Adding a form", 1)[1].split("\n### ", 1)[0]
    for behaviour in annotation_forms.BEHAVIOURS:
        assert f"**{behaviour}**" in checklist, f"docs/annotations.md 'Adding a form' lacks {behaviour}"


#: a value of each form's key that annotations.yaml may not say (`scalar: element` is the model's reading only)
_UNSAYABLE = {"scalar": "element", "null_means": "[1]", "element_of": "'a b'", "element_table": "'a b'",
              "holds": "the_pointer", "per": "two", "returned": "'yes'"}


@pytest.mark.parametrize("key", [f.name for f in record.fields(FormNotes)])
def test_the_loader_refuses_what_a_form_may_not_say(key: str, tmp_path: Path) -> None:
    """The one declaration types what annotations.yaml may write: anything else is refused by the loader with
    the file, line and YAML path of the value."""
    from miogen.base.errors import SpecError

    p = tmp_path / "ann.yaml"
    p.write_text("schema_version: 1\nrules: {count_names: [], nullable_buffers: [], scratch_buffers: []}\n"
                 f"handles: {{}}\nfunctions:\n  miopenX:\n    params:\n      x:\n        {key}: {_UNSAYABLE[key]}\n")
    with pytest.raises(SpecError, match=rf"^{p}:8: functions\.miopenX\.params\.x\.{key}: "):
        load_annotations(p)


def _param(**kw: object) -> ParamSem:
    base: dict[str, object] = dict(name="x", index=0, type=CType(kind="int", name="int"), direction="in",
                                   memory="host", shape="value", source="type")
    return ParamSem(**{**base, **kw})  # type: ignore[arg-type]


@pytest.mark.parametrize("key", IDS)
def test_a_gate_passes_a_parameter_without_its_form(key: str) -> None:
    """A form absent (the model's default) is never a problem; the same form misplaced is one naming it."""
    form = next(f for f in annotation_forms.FORMS if f.key == key)
    plain = _param()
    assert form.gate(plain, [plain]) is None
    misplaced = {"scalar": "float", "null_means": "zero", "holds": "address_of_device_pointer", "per": 3,
                 "returned": True, "element_of": "y"}[key]
    bad = _param(**{key: misplaced})
    problem = form.gate(bad, [bad])
    assert problem is not None and key in problem


# --------------------------------------------------------------------------- the tagged forms

_TYPES = st.builds(lambda kind, name, depth: CType(kind=kind, name=name, depth=depth, const=(False,) * (depth + 1)),
                   kind=st.sampled_from(["int", "float", "void", "handle", "enum", "char", "struct"]),
                   name=st.sampled_from(["int", "float", "void", "h", "e", "char", "s"]),
                   depth=st.integers(0, 2))


@given(shape=st.sampled_from(["value", "scalar", "array", "buffer", "blob", "string", "opaque", "callback"]),
       direction=st.sampled_from(["in", "out", "inout"]), memory=st.sampled_from(["host", "device"]),
       t=_TYPES, hidden=st.booleans(), element=st.booleans(), scalar=st.sampled_from([None, "float", "double"]),
       per=st.sampled_from([None, 2, 3]), holds=st.sampled_from([None, "address_of_device_pointer"]))
def test_every_parameter_has_one_form_refining_its_shape(shape: str, direction: str, memory: str, t: CType,
                                                         hidden: bool, element: bool, scalar: str | None,
                                                         per: int | None, holds: str | None) -> None:
    """Any parameter (well placed or not) gets exactly one tagged form, of its shape, classified once."""
    p = _param(shape=shape, direction=direction, memory=memory, type=t, hidden=hidden, scalar=scalar, per=per,
               holds=holds, element_of="y" if element else None)
    form = p.form
    assert isinstance(form, forms.ParamForm)  # one of the closed union's leaves
    assert form.shape == shape
    assert p.form is form and resolved.classify(p) == form  # classified once; the same classification again
    if isinstance(form, forms.ByPointer) and not isinstance(form, forms.Count):
        assert isinstance(form, (forms.HostScalar, forms.ElementScalar)) == resolved.is_host_scalar(p)


def test_every_parameter_of_a_release_has_a_form_of_its_shape() -> None:
    from miogen.spec.spec_io import load
    from miogen.spec.target import load_target

    target = load_target()
    sem = resolve(load(ROOT / "specs" / "miopen" / "3.5.2.yaml"), load_annotations(ROOT / "specs" / "miopen" /
                                                                               "annotations.yaml"),
                  prefix=target.function_prefix)
    seen: set[type] = set()
    for fs in sem.functions.values():
        for p in fs.params:
            assert p.form.shape == p.shape, f"{fs.name}.{p.name}: {p.form} for shape {p.shape}"
            seen.add(type(p.form))
    assert {forms.Value, forms.Length, forms.Count, forms.Buffer, forms.HostScalar, forms.ElementScalar,
            forms.InArray, forms.OutArray, forms.OutScalar} <= seen


@pytest.mark.parametrize("counted", ["alpha", "yDesc", "y"])
def test_a_count_must_name_an_out_scalar(counted: str) -> None:
    """`count:` names the out scalar the callee writes its count to (a Count form); anything else is refused,
    naming the parameter, before any form is planned from it."""
    from miogen.base.record import replace

    from miogen.semantics.suggest import AnnotationGateError
    from miogen.semantics.annotations import FunctionNote

    from ..helpers import FIXTURE_ANNOTATIONS, fixture_spec

    ann = load_annotations(FIXTURE_ANNOTATIONS)
    holder = "y" if counted != "y" else "alpha"
    note = FunctionNote(params={holder: ParamNote(count=counted)})
    with pytest.raises(AnnotationGateError, match=f"miopenSetTensor.{holder}: count names '{counted}', which is no out"):
        resolve(fixture_spec(), replace(ann, functions={**ann.functions, "miopenSetTensor": note}))


@given(shape=st.sampled_from([None, "scalar", "buffer", "opaque", "array"]), t=_TYPES)
def test_a_record_field_gets_a_form_or_a_problem(shape: str | None, t: CType) -> None:
    """A record field's annotation either passes the field gate (and has the form of its shape, pointing
    where that form points unless the annotation says) or gets a problem naming the shape to give."""
    problem = forms.field_gate(shape, t)
    if problem is None:
        assert shape is not None and t.depth == 1
        form = forms.classify_field(shape)
        assert form.shape == shape and form.memory in ("host", "device")
        assert isinstance(form, forms.HandleField) == (t.kind == "handle")
    else:
        assert "shape" in problem


# -------------------------------------------------------------- a closed set of forms

#: every consumer of the tagged forms and the function that dispatches on them
CONSUMERS = (
    ("render/planner.py", "param"),  # the wrapper's conversion of each parameter
    ("render/docstrings.py", "arg"),  # its Args entry
    ("render/direct.py", "direct_arg"),  # its argument to a call without argtypes
    ("prove/stublib.py", "function"),  # what the stub logs and writes
    ("prove/callthrough.py", "args_for"),  # what the driver passes
    ("audit/vocabulary.py", "traits"),  # which checks the audit makes
    ("render/docstrings.py", "out"),  # a returned output's Returns entry
    ("prove/callthrough.py", "expected_out"),  # what the driver expects back
    # a record field's form (forms.FieldForm)
    ("render/planner.py", "_field_note"),  # its docstring note
    ("render/planner.py", "record"),  # its Python value
    ("prove/stublib.py", "fmt"),  # what the stub logs of it
    ("prove/callthrough.py", "struct_value"),  # what the driver passes
)


def _function(path: Path, name: str) -> ast.FunctionDef:
    found = [n for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(n, ast.FunctionDef) and n.name == name]
    assert len(found) == 1, f"{path}: {len(found)} functions named {name}"
    return found[0]


def _closed(match: ast.Match) -> bool:
    """The match ends in `case _: assert_never(subject)`."""
    last = match.cases[-1]
    return (isinstance(last.pattern, ast.MatchAs) and last.pattern.pattern is None and last.guard is None
            and any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "assert_never"
                    and ast.dump(n.args[0]) == ast.dump(match.subject) for n in ast.walk(last.body[0])))


@pytest.mark.parametrize("module, name", CONSUMERS)
def test_each_consumer_dispatches_on_the_form_with_a_closed_match(module: str, name: str) -> None:
    """Each consumer's dispatch is a `match` on the form ending in `assert_never`, so `mypy --strict` names a
    consumer that forgets a form (test below)."""
    fn = _function(ROOT / "codegen" / module, name)
    matches = [n for n in ast.walk(fn) if isinstance(n, ast.Match)]
    closed = [m for m in matches if _closed(m)]
    assert closed, f"{module} {name}: no match ending in `case _: assert_never(...)`"
    for m in closed:
        patterns = [ast.unparse(c.pattern) for c in m.cases]
        assert any(p.startswith("forms.") for p in patterns), f"{module} {name}: the match is not on the form"


def _form_tests(test: ast.expr) -> set[str]:
    """The subjects `test` checks the form class of (`isinstance(S, forms.X)`, X a form class)."""
    names = {n for n, v in vars(forms).items() if isinstance(v, type) and v.__module__ == forms.__name__}
    return {ast.dump(n.args[0]) for n in ast.walk(test)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "isinstance"
            and {x.attr if isinstance(x, ast.Attribute) else x.id
                 for x in ast.walk(n.args[1]) if isinstance(x, (ast.Name, ast.Attribute))} & names}


def test_no_consumer_dispatches_on_the_form_with_an_isinstance_chain() -> None:
    """Branching on which form a value has (two or more of its classes tested one after the other: `if` then
    `elif`, or successive `if`s) is a `match` ending in `assert_never`, never an isinstance chain mypy cannot
    check for a forgotten form; a single test of a group (`isinstance(p.form, forms.ByValue)`) is no dispatch."""
    chains = []
    for path in sorted((ROOT / "codegen").rglob("*.py")):
        if "support" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for body in (getattr(node, k, None) for k in ("body", "orelse")):
                if not isinstance(body, list):
                    continue
                for a, b in zip(body, body[1:] + [None]):
                    if not isinstance(a, ast.If):
                        continue
                    nxt = a.orelse[0] if len(a.orelse) == 1 and isinstance(a.orelse[0], ast.If) else b
                    if isinstance(nxt, ast.If) and _form_tests(a.test) & _form_tests(nxt.test):
                        chains.append(f"{path.relative_to(ROOT)}:{a.lineno}")
    assert not chains, f"isinstance chains on a form: {chains}"


def test_the_form_is_a_closed_union_of_frozen_records() -> None:
    members = typing.get_args(forms.ParamForm)
    assert len(members) == len(set(members)) >= 18
    for cls in members:
        assert record.is_frozen(cls), cls
        assert not any(issubclass(other, cls) for other in members if other is not cls), f"{cls} is no leaf"
    assert set(typing.get_args(forms.FieldForm)) == {forms.HandleField, forms.BufferField, forms.AddressField}


def test_mypy_names_a_consumer_that_forgets_a_form(tmp_path: Path) -> None:
    """The exhaustiveness check is real: a match over the forms missing one fails mypy --strict, naming the
    form; the complete one passes."""
    members = [c.__name__ for c in typing.get_args(forms.ParamForm)]
    mod = tmp_path / "consumer.py"

    def source(cases: list[str]) -> str:
        arms = "".join(f"        case forms.{c}():\n            return {c!r}\n" for c in cases)
        return ("from typing import assert_never\n\nfrom miogen.semantics import forms\n\n\n"
                "def f(form: forms.ParamForm) -> str:\n    match form:\n" + arms
                + "        case _:\n            assert_never(form)\n")

    (tmp_path / "miogen").symlink_to(ROOT / "codegen")  # the generator as its package name (as `make typecheck`)

    def mypy() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
                               "--cache-dir", str(tmp_path / "cache"), str(mod)], capture_output=True, text=True,
                              cwd=tmp_path, env={**os.environ, "MYPYPATH": str(tmp_path)})

    mod.write_text(source(members), encoding="utf-8")
    ok = mypy()
    assert ok.returncode == 0, ok.stdout + ok.stderr
    mod.write_text(source([c for c in members if c != "OutBlob"]), encoding="utf-8")
    bad = mypy()
    assert bad.returncode == 1 and "OutBlob" in bad.stdout, bad.stdout + bad.stderr


def test_every_note_key_resolves_to_a_semantics_field() -> None:
    """A parameter note's keys (annotations.ParamNote: its placement, and the forms of FormNotes): resolution
    applies each, and the resolved model has a field of the same name."""
    from miogen.semantics.resolve import APPLIED

    note = {f.name for f in record.fields(ParamNote)}
    assert set(APPLIED) == note - {"since", "until", "why"}
    assert set(APPLIED) <= {f.name for f in record.fields(ParamSem)}

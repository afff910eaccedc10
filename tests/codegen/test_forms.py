"""The forms (codegen/forms.py) against the code and docs/annotations.md.

Every annotation form has one key (the same in annotations.yaml and in the model) and implements each
behaviour the "Adding a form" checklist names as its own method reading that key, called where the
behaviour is built. Every parameter is classified once into a tagged form refining its shape.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from miogen import forms
from miogen.annotate import ParamNote, ParamSem, load_annotations, resolve
from miogen.audit.vocabulary import FORMS as AUDIT_FORMS
from miogen.model import CType

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "annotations.md").read_text(encoding="utf-8")
IDS = [f.key for f in forms.FORMS]
#: the code outside the registry that builds each behaviour (where its calls must be)
CALLERS = "\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "codegen").rglob("*.py"))
                     if p.name != "forms.py" and "support" not in p.parts)


def _reads(fn: object, key: str) -> bool:
    """Whether the function's source reads attribute `key` (p.per, ps.holds, ...)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))  # type: ignore[arg-type]
    return any(isinstance(n, ast.Attribute) and n.attr == key for n in ast.walk(tree))


def test_keys_are_unique_and_named_alike_in_yaml_and_model() -> None:
    assert len(IDS) == len(set(IDS))
    note_fields = {f.name for f in dataclasses.fields(ParamNote)}
    sem_fields = {f.name for f in dataclasses.fields(ParamSem)}
    for key in IDS:
        assert key in note_fields, f"{key}: no annotations.yaml key (annotate.ParamNote)"
        assert key in sem_fields, f"{key}: no field of the same name in the model (annotate.ParamSem)"


@pytest.mark.parametrize("key", IDS)
def test_every_form_implements_every_behaviour_itself(key: str) -> None:
    """Each behaviour is a method of the form's own class reading its key (or says why it needs none),
    and the planner, docstrings, stub library, driver and audit call it; no behaviour lives elsewhere."""
    form = next(f for f in forms.FORMS if f.key == key)
    assert getattr(forms, key.upper()) is form, f"{key}: no registry instance forms.{key.upper()}"
    assert set(form.nothing) <= set(forms.BEHAVIOURS) - {"gate", "audit"}, f"{key}: nothing {sorted(form.nothing)}"
    own = vars(type(form))
    for behaviour in forms.BEHAVIOURS:
        if behaviour in form.nothing:
            assert behaviour not in own, f"{key}.{behaviour}: both implemented and said to be needed nowhere"
            assert len(form.nothing[behaviour]) > 10, f"{key}.{behaviour}: say why it needs nothing"
            continue
        method = own.get(behaviour)
        assert callable(method), f"{key}: no {behaviour}() of its own"
        assert any(_reads(method, field) for field in (key, *form.also_reads)), \
            f"{key}.{behaviour}: does not read .{key}"
        if behaviour not in ("gate", "audit"):  # those two run for every form (gate_problems, vocabulary.view)
            assert f"forms.{key.upper()}.{behaviour}(" in CALLERS, f"{key}.{behaviour}: called nowhere"
    assert form.audit_forms and set(form.audit_forms) <= set(AUDIT_FORMS), f"{key}: audit forms {form.audit_forms}"


def test_gates_and_audit_views_run_every_form() -> None:
    assert "form.gate(p, params)" in inspect.getsource(forms.gate_problems)
    assert "forms.FORMS" in CALLERS and "form.audit(ps, fs.params)" in CALLERS


@pytest.mark.parametrize("key", IDS)
def test_every_form_is_documented(key: str) -> None:
    form = next(f for f in forms.FORMS if f.key == key)
    heading = re.search(rf"^### {re.escape(form.heading)}: .*`{re.escape(key)}\b", DOC, re.M)
    assert heading, f"docs/annotations.md: no `### {form.heading}: ... {key}` section"
    assert re.search(rf"^\| `{re.escape(key)}` \|", DOC, re.M), f"docs/annotations.md: no table row for `{key}`"


def test_the_checklist_names_every_behaviour() -> None:
    checklist = DOC.split("### Adding a form", 1)[1].split("\n### ", 1)[0]
    for behaviour in forms.BEHAVIOURS:
        assert f"**{behaviour}**" in checklist, f"docs/annotations.md 'Adding a form' lacks {behaviour}"


def _param(**kw: object) -> ParamSem:
    base: dict[str, object] = dict(name="x", index=0, type=CType(kind="int", name="int"), direction="in",
                                   memory="host", shape="value", source="type")
    return ParamSem(**{**base, **kw})  # type: ignore[arg-type]


@pytest.mark.parametrize("key", IDS)
def test_a_gate_passes_a_parameter_without_its_form(key: str) -> None:
    """A form absent (the model's default) is never a problem; the same form misplaced is one naming it."""
    form = next(f for f in forms.FORMS if f.key == key)
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
       t=_TYPES, hidden=st.booleans(), element=st.booleans(), scalar=st.sampled_from([None, "float", "double", "element"]),
       per=st.integers(1, 3), holds=st.sampled_from([None, "address_of_device_pointer"]))
def test_every_parameter_has_one_form_refining_its_shape(shape: str, direction: str, memory: str, t: CType,
                                                         hidden: bool, element: bool, scalar: str | None, per: int,
                                                         holds: str | None) -> None:
    """Any parameter (well placed or not) gets exactly one tagged form, of its shape, classified once."""
    p = _param(shape=shape, direction=direction, memory=memory, type=t, hidden=hidden, scalar=scalar, per=per,
               holds=holds, element_of="y" if element else None)
    form = p.form
    assert isinstance(form, forms.ParamForm) and type(form) is not forms.ParamForm
    assert form.shape == shape
    assert p.form is form and forms.classify(p) == form  # classified once; the same classification again
    if isinstance(form, forms.ByPointer) and not isinstance(form, forms.Count):
        assert isinstance(form, (forms.HostScalar, forms.ElementScalar)) == forms.is_host_scalar(p)


def test_every_parameter_of_a_release_has_a_form_of_its_shape() -> None:
    from miogen.spec_io import load
    from miogen.target import load_target

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
    from dataclasses import replace

    from miogen.annotate import AnnotationGateError, FunctionNote

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

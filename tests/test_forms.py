"""The annotation forms' registry (codegen/forms.py) against the code and docs/annotations.md.

Every form has one key (the same in annotations.yaml and in the model), a gate check, and a home
for each behaviour the "Adding a form" checklist names; each home exists and reads the form's key.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import re
import textwrap
from pathlib import Path

import pytest

from miogen import forms
from miogen.annotate import ParamNote, ParamSem
from miogen.audit.vocabulary import FORMS as AUDIT_FORMS
from miogen.model import CType

DOC = (Path(__file__).resolve().parent.parent / "docs" / "annotations.md").read_text(encoding="utf-8")
IDS = [f.key for f in forms.FORMS]


def _resolve(home: str) -> object:
    module, _, qual = home.partition(":")
    obj: object = importlib.import_module(module)
    for part in qual.split("."):
        obj = getattr(obj, part)
    return obj


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
def test_every_form_has_every_behaviour(key: str) -> None:
    form = next(f for f in forms.FORMS if f.key == key)
    assert set(form.homes) == set(forms.BEHAVIOURS) - {"gate"}, f"{key}: behaviours {sorted(form.homes)}"
    gate = _resolve(form.gate) if isinstance(form.gate, str) else form.gate
    assert callable(gate) and _reads(gate, key), f"{key}: its gate does not read p.{key}"
    for behaviour, home in form.homes.items():
        if home.startswith("none: "):
            assert len(home) > len("none: ") + 10, f"{key}.{behaviour}: say why it needs nothing"
            continue
        fn = _resolve(home)
        assert callable(fn), f"{key}.{behaviour}: {home} is no function"
        assert any(_reads(fn, field) for field in (key, *form.also_reads)), \
            f"{key}.{behaviour}: {home} does not read .{key} (the registry points at the wrong home)"
    assert form.audit_forms and set(form.audit_forms) <= set(AUDIT_FORMS), f"{key}: audit forms {form.audit_forms}"


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


@pytest.mark.parametrize("key", [f.key for f in forms.FORMS if not isinstance(f.gate, str)])
def test_a_gate_passes_a_parameter_without_its_form(key: str) -> None:
    """A form absent (the model's default) is never a problem; the same form misplaced is one naming it."""
    form = next(f for f in forms.FORMS if f.key == key)
    assert not isinstance(form.gate, str)
    plain = _param()
    assert form.gate(plain, [plain]) is None
    misplaced = {"scalar": "float", "null_means": "zero", "holds": "address_of_device_pointer", "per": 3,
                 "returned": True}[key]
    bad = _param(**{key: misplaced})
    problem = form.gate(bad, [bad])
    assert problem is not None and key in problem

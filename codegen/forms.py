"""The annotation forms beyond direction, memory, shape and length: one registry entry each.

A form is named by one key, the same in annotations.yaml (`annotate.ParamNote`) and in the resolved
model (`annotate.ParamSem`). Its entry carries the gate check (the rule a misplaced form breaks)
and names where each of its other behaviours lives: the plan (the wrapper's conversion), the
docstring, the stub library, the call-through driver and the audit's view. `tests/test_forms.py`
checks every entry against docs/annotations.md ("Adding a form") and against those homes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from .model import CType

#: what each form says for itself, in this order (docs/annotations.md lists the same)
BEHAVIOURS = ("gate", "plan", "docstring", "stub", "driver", "audit")


class Param(Protocol):
    """The resolved parameter a gate check reads (annotate.ParamSem)."""

    @property
    def name(self) -> str: ...
    @property
    def type(self) -> CType: ...
    @property
    def direction(self) -> str: ...
    @property
    def memory(self) -> str: ...
    @property
    def shape(self) -> str: ...
    @property
    def length(self) -> str | None: ...
    @property
    def count(self) -> str | None: ...
    @property
    def nullable(self) -> bool: ...
    @property
    def null_means(self) -> str | None: ...
    @property
    def scalar(self) -> str | None: ...
    @property
    def holds(self) -> str | None: ...
    @property
    def per(self) -> int: ...
    @property
    def returned(self) -> bool: ...


Gate = Callable[[Param, Sequence[Param]], "str | None"]


@dataclass(frozen=True)
class Form:
    key: str  # the key in annotations.yaml and the field of annotate.ParamSem
    heading: str  # the docs/annotations.md section (### ...) documenting it
    gate: Gate | str  # the check (the problem, or None), or "module:function" where it still lives
    # behaviour -> "module:function" implementing it for this form, or "none: <why>" where the form
    # needs nothing of that behaviour (the generic code handles it)
    homes: dict[str, str]
    audit_forms: tuple[str, ...] = ()  # the audit vocabulary forms (audit.vocabulary.FORMS) it states
    # the other ParamSem fields a home may read instead of `key` (what resolving the form sets)
    also_reads: tuple[str, ...] = ()


def is_host_scalar(p: Param) -> bool:
    """A host `void *` scalar (alpha/beta): what `scalar` and `element_of` are for."""
    return p.shape == "scalar" and p.memory == "host" and p.type.kind == "void" and p.type.depth == 1


def _gate_scalar(p: Param, params: Sequence[Param]) -> str | None:
    if p.scalar in ("float", "double") and not is_host_scalar(p):
        return f"scalar: {p.scalar} is for host `void *` scalars"
    return None


def _gate_null_means(p: Param, params: Sequence[Param]) -> str | None:
    return "null_means needs nullable: true" if p.null_means is not None and not p.nullable else None


def _gate_holds(p: Param, params: Sequence[Param]) -> str | None:
    if p.holds is not None and not (p.direction == "out" and p.shape == "scalar" and p.type.depth == 2
                                    and p.type.kind == "void"):
        return f"holds: {p.holds} is for an out `void **` scalar"
    return None


def _gate_per(p: Param, params: Sequence[Param]) -> str | None:
    if p.per != 1 and not (p.length and p.direction == "in" and p.shape == "array" and p.per >= 2):
        return "per: needs an input array with a length, and a factor >= 2"
    return None


def _gate_returned(p: Param, params: Sequence[Param]) -> str | None:
    if p.returned and not any(o.count == p.name for o in params):
        return "returned: is for an output count (named by another parameter's count:)"
    return None


FORMS: tuple[Form, ...] = (
    Form("scalar", "Host scalars read as float or double", _gate_scalar, {
        "plan": "miogen.planner:_Planner._host_scalar",
        "docstring": "miogen.planner:_Planner._host_scalar",  # the note on the encoding, written with the plan
        "stub": "miogen.stublib:_Stub.function",
        "driver": "none: the driver passes the value the wrapper encodes; the stub decodes it as MIOpen reads it",
        "audit": "miogen.audit.vocabulary:view",
    }, ("scalar-float", "scalar-double")),
    Form("element_of", "Host scalars in a tensor's element type", "miogen.annotate:_check_vocabulary", {
        "plan": "miogen.planner:_Planner._type_value",
        "docstring": "miogen.planner:_Planner.param",
        "stub": "miogen.stublib:_Stub.type_expr",
        "driver": "miogen.callthrough:Driver.args_for",
        "audit": "miogen.audit.vocabulary:view",
    }, ("scalar-element-type",), ("scalar",)),  # resolved: a host scalar's `scalar` becomes "element"
    Form("null_means", "NULL with a meaning", _gate_null_means, {
        "plan": "miogen.planner:_Planner.param",
        "docstring": "miogen.docstrings:_Doc.none_text",
        "stub": "none: the stub records NULL like any pointer",
        "driver": "none: nullable parameters are driven with None by the generic path",
        "audit": "miogen.audit.vocabulary:view",
    }, ("nullable-scalar", "nullable-shared-length"), ("nullable",)),
    Form("holds", "An out pointer receiving an address", _gate_holds, {
        "plan": "miogen.planner:_Planner.param",
        "docstring": "miogen.planner:_Planner.param",
        "stub": "miogen.stublib:_Stub.function",
        "driver": "none: the address the stub writes is checked as an out pointer",
        "audit": "miogen.audit.vocabulary:view",
    }, ("out-address",)),
    Form("per", "Arrays of k values per item", _gate_per, {
        "plan": "miogen.planner:_Planner.param",
        "docstring": "miogen.planner:_Planner.param",
        "stub": "miogen.stublib:_Stub.function",
        "driver": "miogen.callthrough:Driver.args_for",
        "audit": "miogen.audit.vocabulary:view",
    }, ("length-multiple",)),
    Form("returned", "Counts that are data", _gate_returned, {
        "plan": "miogen.planner:_Planner.param",
        "docstring": "miogen.planner:_Planner.param",
        "stub": "none: an output count is written like any out integer",
        "driver": "miogen.callthrough:Driver.expected_out",
        "audit": "miogen.audit.vocabulary:view",
    }, ("dropped-output",)),
)


def gate_problems(p: Param, params: Sequence[Param]) -> list[str]:
    """The problems of `p`'s forms whose gate lives here (in registry order)."""
    out: list[str] = []
    for form in FORMS:
        if not isinstance(form.gate, str):
            problem = form.gate(p, params)
            if problem is not None:
                out.append(problem)
    return out

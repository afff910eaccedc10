"""The forms of a parameter: what the code branches on, classified once (`classify`, `ParamSem.form`),
and the annotation forms beyond direction, memory, shape and length: one registry entry each.

A parameter's tagged form (`ParamForm`; by value: Value, Length; Callback, Opaque, Buffer; String:
InString, OutString; Blob: InBlob, OutBlob; Array: InArray, OutArray, ElementArray; by pointer:
HostScalar, ElementScalar, InScalar, InOutScalar, OutScalar, Count) is the one place its shape, direction, memory and C type are read together;
the planner, docstrings, stub library, call-through driver and direct calls dispatch on it.

A form is named by one key, the same in annotations.yaml (`annotate.ParamNote`) and in the resolved
model (`annotate.ParamSem`). Its entry carries the gate check (the rule a misplaced form breaks)
and names where each of its other behaviours lives: the plan (the wrapper's conversion), the
docstring, the stub library, the call-through driver and the audit's view. `tests/test_forms.py`
checks every entry against docs/annotations.md ("Adding a form") and against those homes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal, Protocol

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
    @property
    def hidden(self) -> bool: ...
    @property
    def element_of(self) -> str | None: ...


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


# --------------------------------------------------------------------------- the tagged forms


@dataclass(frozen=True)
class ParamForm:
    """One parameter's form; `shape` is the annotation shape it refines."""

    shape: ClassVar[str]


@dataclass(frozen=True)
class ByValue(ParamForm):
    """Passed by value (a handle, an enum, a number, a stream, a function pointer)."""

    shape: ClassVar[str] = "value"


@dataclass(frozen=True)
class Value(ByValue):
    """A by-value argument the caller passes."""


@dataclass(frozen=True)
class Length(ByValue):
    """A by-value length the wrapper fills in from the input sequences it sizes."""


@dataclass(frozen=True)
class Callback(ParamForm):
    shape: ClassVar[str] = "callback"


@dataclass(frozen=True)
class Opaque(ParamForm):
    """An address passed through untouched."""

    shape: ClassVar[str] = "opaque"


@dataclass(frozen=True)
class Buffer(ParamForm):
    """A device address (untyped `void *`, or typed: `typed`)."""

    shape: ClassVar[str] = "buffer"
    typed: bool = False


@dataclass(frozen=True)
class String(ParamForm):
    """A NUL-terminated C string."""

    shape: ClassVar[str] = "string"


@dataclass(frozen=True)
class InString(String):
    pass


@dataclass(frozen=True)
class OutString(String):
    """Written by the callee into a buffer the wrapper allocates."""


@dataclass(frozen=True)
class Blob(ParamForm):
    """Bytes with a length."""

    shape: ClassVar[str] = "blob"


@dataclass(frozen=True)
class InBlob(Blob):
    pass


@dataclass(frozen=True)
class OutBlob(Blob):
    """Written by the callee into a buffer the wrapper allocates."""


@dataclass(frozen=True)
class Array(ParamForm):
    shape: ClassVar[str] = "array"


@dataclass(frozen=True)
class InArray(Array):
    """An input sequence with a length; `per` values per unit of it."""

    per: int = 1


@dataclass(frozen=True)
class OutArray(Array):
    """An output (or in-out: `reads`) sequence the wrapper allocates, cut by a count where one is named."""

    reads: bool = False


@dataclass(frozen=True)
class ElementArray(Array):
    """A sequence whose element type another argument gives (`element_of`)."""

    out: bool = False


@dataclass(frozen=True)
class ByPointer(ParamForm):
    """One element passed by pointer."""

    shape: ClassVar[str] = "scalar"


@dataclass(frozen=True)
class HostScalar(ByPointer):
    """A host `void *` scaling factor (alpha/beta), read as `reads` (float, double, or None: what is passed)."""

    reads: Literal["float", "double"] | None = None


@dataclass(frozen=True)
class ElementScalar(ByPointer):
    """A host `void *` scalar in the element type another argument gives (`scalar: element`)."""

    out: bool = False


@dataclass(frozen=True)
class InScalar(ByPointer):
    pass


@dataclass(frozen=True)
class InOutScalar(ByPointer):
    pass


@dataclass(frozen=True)
class OutScalar(ByPointer):
    """An output the wrapper allocates and returns; `holds`: what the written address holds."""

    holds: str | None = None


@dataclass(frozen=True)
class Count(ByPointer):
    """An output count the wrapper passes (it cuts output arrays); `returned`: data of its own too."""

    returned: bool = False


def classify(p: Param) -> ParamForm:
    """The form of `p`: the one reading of shape, direction, memory and type the code branches on."""
    shape, t = p.shape, p.type
    if shape == "value":
        return Length() if p.hidden else Value()
    if p.hidden:  # an output count consumed by output arrays
        return Count(returned=p.returned)
    if shape == "callback":
        return Callback()
    if shape == "opaque":
        return Opaque()
    if shape == "buffer":
        return Buffer(typed=not (t.kind == "void" and t.depth == 1))
    if shape == "string":
        return InString() if p.direction == "in" else OutString()
    if shape == "blob":
        return InBlob() if p.direction == "in" else OutBlob()
    if shape == "array":
        if p.element_of is not None:
            return ElementArray(out=p.direction != "in")
        if p.direction == "in":
            return InArray(per=p.per)
        return OutArray(reads=p.direction == "inout")
    if is_host_scalar(p):
        if p.scalar == "element":
            return ElementScalar(out=p.direction == "out")
        return HostScalar(reads=p.scalar if p.scalar in ("float", "double") else None)  # type: ignore[arg-type]
    if p.direction == "in":
        return InScalar()
    if p.direction == "inout":
        return InOutScalar()
    return OutScalar(holds=p.holds)


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
        "plan": "codegen.planner:_Planner._host_scalar",
        "docstring": "codegen.planner:_Planner._host_scalar",  # the note on the encoding, written with the plan
        "stub": "codegen.stublib:_Stub.function",
        "driver": "none: the driver passes the value the wrapper encodes; the stub decodes it as MIOpen reads it",
        "audit": "codegen.audit.vocabulary:view",
    }, ("scalar-float", "scalar-double")),
    Form("element_of", "Host scalars in a tensor's element type", "codegen.annotate:_check_vocabulary", {
        "plan": "codegen.planner:_Planner._type_value",
        "docstring": "codegen.planner:_Planner.param",
        "stub": "codegen.stublib:_Stub.type_expr",
        "driver": "codegen.callthrough:Driver.args_for",
        "audit": "codegen.audit.vocabulary:view",
    }, ("scalar-element-type",), ("scalar",)),  # resolved: a host scalar's `scalar` becomes "element"
    Form("null_means", "NULL with a meaning", _gate_null_means, {
        "plan": "codegen.planner:_Planner.param",
        "docstring": "codegen.docstrings:_Doc.none_text",
        "stub": "none: the stub records NULL like any pointer",
        "driver": "none: nullable parameters are driven with None by the generic path",
        "audit": "codegen.audit.vocabulary:view",
    }, ("nullable-scalar", "nullable-shared-length"), ("nullable",)),
    Form("holds", "An out pointer receiving an address", _gate_holds, {
        "plan": "codegen.planner:_Planner.param",
        "docstring": "codegen.planner:_Planner.param",
        "stub": "codegen.stublib:_Stub.function",
        "driver": "none: the address the stub writes is checked as an out pointer",
        "audit": "codegen.audit.vocabulary:view",
    }, ("out-address",)),
    Form("per", "Arrays of k values per item", _gate_per, {
        "plan": "codegen.planner:_Planner.param",
        "docstring": "codegen.planner:_Planner.param",
        "stub": "codegen.stublib:_Stub.function",
        "driver": "codegen.callthrough:Driver.args_for",
        "audit": "codegen.audit.vocabulary:view",
    }, ("length-multiple",)),
    Form("returned", "Counts that are data", _gate_returned, {
        "plan": "codegen.planner:_Planner.param",
        "docstring": "codegen.planner:_Planner.param",
        "stub": "none: an output count is written like any out integer",
        "driver": "codegen.callthrough:Driver.expected_out",
        "audit": "codegen.audit.vocabulary:view",
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

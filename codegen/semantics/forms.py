"""The tagged forms of a parameter and of a record's pointer field: what the code branches on.

A parameter's form (by value: Value, Length; Callback, Opaque, Buffer; String: InString, OutString; Blob:
InBlob, OutBlob; Array: InArray, OutArray, ElementArray; by pointer: HostScalar, ElementScalar, InScalar,
InOutScalar, OutScalar, Count) is the one place its shape, direction, memory and C type are read together
(`resolved.classify`, `ParamSem.form`); the planner, docstrings, stub library, call-through driver, direct
calls and audit dispatch on it. A record's pointer fields have forms too (`FieldForm`: HandleField,
BufferField, AddressField; one `field_gate`).
"""

from __future__ import annotations

from typing import ClassVar, Literal, TypeAlias

from ..base.record import record
from ..spec.model import CType

# --------------------------------------------------------------------------- the tagged forms


@record
class _Form:
    """What every parameter form has: `shape`, the annotation shape it refines."""

    shape: ClassVar[str]


@record
class ByValue(_Form):
    """Passed by value (a handle, an enum, a number, a stream, a function pointer)."""

    shape: ClassVar[str] = "value"


@record
class Value(ByValue):
    """A by-value argument the caller passes."""


@record
class Length(ByValue):
    """A by-value length the wrapper fills in from the input sequences it sizes."""


@record
class Callback(_Form):
    """A C function pointer: a Python callable wrapped in the typedef's CFUNCTYPE."""

    shape: ClassVar[str] = "callback"


@record
class Opaque(_Form):
    """An address passed through untouched."""

    shape: ClassVar[str] = "opaque"


@record
class Buffer(_Form):
    """A device address (untyped `void *`, or typed: `typed`)."""

    shape: ClassVar[str] = "buffer"
    typed: bool = False


@record
class String(_Form):
    """A NUL-terminated C string."""

    shape: ClassVar[str] = "string"


@record
class InString(String):
    """Read by the callee: a str encoded (or bytes) passed as it is."""


@record
class OutString(String):
    """Written by the callee into a buffer the wrapper allocates."""


@record
class Blob(_Form):
    """Bytes with a length."""

    shape: ClassVar[str] = "blob"


@record
class InBlob(Blob):
    """Read by the callee: bytes passed with their length."""


@record
class OutBlob(Blob):
    """Written by the callee into a buffer the wrapper allocates."""


@record
class Array(_Form):
    """A sequence of elements."""

    shape: ClassVar[str] = "array"


@record
class InArray(Array):
    """An input sequence with a length; `per` values per unit of it."""

    per: int = 1


@record
class OutArray(Array):
    """An output (or in-out: `reads`) sequence the wrapper allocates, cut by a count where one is named."""

    reads: bool = False


@record
class ElementArray(Array):
    """A sequence whose element type another argument gives (`element_of`)."""

    out: bool = False


@record
class ByPointer(_Form):
    """One element passed by pointer."""

    shape: ClassVar[str] = "scalar"


@record
class HostScalar(ByPointer):
    """A host `void *` scaling factor (alpha/beta), read as `reads` (float, double, or None: what is passed)."""

    reads: Literal["float", "double"] | None = None


@record
class ElementScalar(ByPointer):
    """A host `void *` scalar in the element type another argument gives (`scalar: element`)."""

    out: bool = False


@record
class InScalar(ByPointer):
    """An input value the wrapper passes by pointer."""


@record
class InOutScalar(ByPointer):
    """A value passed by pointer that the callee reads and updates; the wrapper returns the new one."""


@record
class OutScalar(ByPointer):
    """An output the wrapper allocates and returns; `holds`: what the written address holds."""

    holds: str | None = None


@record
class Count(ByPointer):
    """An output count the wrapper passes (it cuts output arrays); `returned`: data of its own too."""

    returned: bool = False


#: a parameter's form: a closed union (consumers `match` on it and end in `assert_never`, so mypy names one that
#: forgets a form); the classes above it (ByValue, String, Blob, Array, ByPointer) group forms in patterns
ParamForm: TypeAlias = (Value | Length | Callback | Opaque | Buffer | InString | OutString | InBlob | OutBlob | InArray
                        | OutArray | ElementArray | HostScalar | ElementScalar | InScalar | InOutScalar | OutScalar
                        | Count)


# --------------------------------------------------------------------------- forms of record fields


@record
class _FieldForm:
    """The form of a pointer field of a record the API takes by pointer (annotations.FieldNote's shape)."""

    shape: ClassVar[str]
    memory: ClassVar[Literal["host", "device"]]  # where it points unless the annotation says


@record
class HandleField(_FieldForm):
    """A pointer to one handle (a descriptor variable): the caller gives the handle object."""

    shape: ClassVar[str] = "scalar"
    memory: ClassVar[Literal["host", "device"]] = "host"


@record
class BufferField(_FieldForm):
    """A `void *` to device memory."""

    shape: ClassVar[str] = "buffer"
    memory: ClassVar[Literal["host", "device"]] = "device"


@record
class AddressField(_FieldForm):
    """A `void *` host address passed through."""

    shape: ClassVar[str] = "opaque"
    memory: ClassVar[Literal["host", "device"]] = "host"


#: a record field's form: a closed union
FieldForm: TypeAlias = HandleField | BufferField | AddressField

_FIELD_FORMS: dict[str, FieldForm] = {f.shape: f for f in (HandleField(), BufferField(), AddressField())}


def classify_field(shape: str) -> FieldForm:
    return _FIELD_FORMS[shape]


def field_gate(shape: str | None, t: CType) -> str | None:
    """The problem of a record field annotated with `shape`, or None."""
    if shape is None:
        return "give its shape (scalar, buffer or opaque)"
    if shape not in _FIELD_FORMS:
        return f"shape: {shape} is no field shape ({', '.join(_FIELD_FORMS)})"
    match _FIELD_FORMS[shape]:
        case HandleField() if not (t.depth == 1 and t.kind == "handle"):
            return f"shape: {shape} is for a pointer to one handle (a descriptor variable); the field is {t.spelling()}"
        case BufferField() | AddressField() if not (t.depth == 1 and t.kind == "void"):
            return f"shape: {shape} is for a `void *` field"
    return None

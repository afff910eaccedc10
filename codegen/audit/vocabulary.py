"""The annotation vocabulary as the audit sees it: a normalised view of each resolved parameter
(`AnnView`) and the forms a finding may need (`FORMS`)."""

from __future__ import annotations

from typing import Any, Literal, assert_never

from ..base.record import record
from ..semantics.resolved import FunctionSem, ParamSem
from ..semantics import annotation_forms, forms


#: Forms beyond direction/memory/shape/length that a finding can be about. A form the vocabulary cannot
#: state is reported as "needs vocabulary: <form>"; one it can state (EXPRESSIBLE, read from the resolved
#: parameter by `view()`) is an agreement when the annotation states it and a disagreement otherwise.
FORMS: dict[str, str] = {
    "scalar-element-type": "host scalar in the element type of a named tensor descriptor",
    "scalar-float": "host scalar read as float whatever the tensor type",
    "scalar-double": "host scalar read as double whatever the tensor type",
    "nullable-scalar": "host scalar that may be NULL, with what NULL means",
    "nullable-shared-length": "input array that may be NULL while another array fixes the shared length, "
                              "with what NULL means",
    "out-address": "out pointer that receives an address (the device pointer is one dereference further)",
    "length-multiple": "array whose length is k × a count parameter",
    "record-pointer-fields": "pointers inside structs passed by the caller (handles by address, device buffers)",
    "dropped-output": "an output the binding does not return",
}


@record
class AnnView:
    """The resolved annotation of one parameter, normalised for comparison with the implementation."""

    direction: str
    memory: str
    shape: str
    nullable: bool
    length: str | None = None  # the spec parameter holding the length (or `call:F`, `unsized`)
    length_factor: int = 1  # elements per unit of `length`
    shared_length: bool = False  # another input array has the same length parameter
    scalar_type: str | None = None  # host `void *` scalars: how the binding encodes them
    writes_address: bool = False
    fields: bool = False  # the binding understands pointer fields of the pointee record
    returned: bool = True  # an output the binding returns
    count_of: str | None = None  # an output count consumed by this out array (it only cuts the returned list)

    def brief(self) -> str:
        parts = [self.direction, self.memory, self.shape]
        if self.nullable:
            parts.append("nullable")
        if self.length:
            parts.append(f"length {self.length}" + (f" × {self.length_factor}" if self.length_factor != 1 else ""))
        if self.scalar_type:
            parts.append(f"as {self.scalar_type}")
        return " ".join(parts)


#: Values the vocabulary can state, per AnnView attribute (see FORMS); "*" for any value.
EXPRESSIBLE: dict[str, frozenset[Any]] = {
    "scalar_type": frozenset({"float-or-double", "scalar-float", "scalar-double", "scalar-element-type"}),
    "length_factor": frozenset({"*"}),  # `per: k`
    "writes_address": frozenset({False, True}),  # `holds: address_of_device_pointer`
    "fields": frozenset({False, True}),  # `records:`
    "returned": frozenset({False, True}),  # `returned: true`, typed outputs (`element_of`)
    "nullable_scalar": frozenset({False, True}),  # `nullable` (+ `null_means`) on host scalars
    "nullable_shared": frozenset({False, True}),  # `nullable` on arrays sharing a length
}

#: form -> (the AnnView attribute stating it, the value that states it)
_FORM_ATTR: dict[str, tuple[str, Any]] = {
    "scalar-element-type": ("scalar_type", "scalar-element-type"),
    "scalar-float": ("scalar_type", "scalar-float"),
    "scalar-double": ("scalar_type", "scalar-double"),
    "nullable-scalar": ("nullable_scalar", True),
    "nullable-shared-length": ("nullable_shared", True),
    "out-address": ("writes_address", True),
    "length-multiple": ("length_factor", "*"),
    "record-pointer-fields": ("fields", True),
    "dropped-output": ("returned", True),
}


def expressible(form: str) -> bool:
    """Whether the annotation vocabulary can state `form`."""
    attr, value = _FORM_ATTR[form]
    values = EXPRESSIBLE.get(attr, frozenset())
    return value in values or "*" in values


def expresses(v: AnnView, form: str) -> bool:
    """Whether the annotation (its view) states `form`."""
    if not expressible(form):
        return False
    if form == "nullable-scalar":
        return v.nullable and v.scalar_type is not None
    if form == "nullable-shared-length":
        return v.nullable and v.shared_length
    if form == "length-multiple":
        return v.length_factor != 1
    attr, value = _FORM_ATTR[form]
    return bool(getattr(v, attr) == value)


def _missing(form: str) -> Literal["disagree", "needs-vocabulary"]:
    """The status of a finding of `form` the annotation does not state: fix it, or grow the vocabulary."""
    return "disagree" if expressible(form) else "needs-vocabulary"


@record
class Traits:
    """What a parameter's form means to the audit's checks."""

    by_value: bool = False  # a value or handle: only NULL is checked
    provided: bool = False  # the caller passes it whatever its direction (a device buffer, a callback)
    address: bool = False  # an address passed as it is (a callback, an opaque pointer): no memory check
    passed_through: bool = False  # an opaque pointer: its direction is checked even in device memory
    sized: bool = False  # an array or blob: an input's length is checked


def traits(form: forms.ParamForm) -> Traits:
    """The audit's reading of each form (mypy names a form this match forgets)."""
    match form:
        case forms.Value() | forms.Length():
            return Traits(by_value=True)
        case forms.Buffer():
            return Traits(provided=True)
        case forms.Callback():
            return Traits(provided=True, address=True)
        case forms.Opaque():
            return Traits(address=True, passed_through=True)
        case forms.InArray() | forms.OutArray() | forms.ElementArray() | forms.InBlob() | forms.OutBlob():
            return Traits(sized=True)
        case (forms.InString() | forms.OutString() | forms.HostScalar() | forms.ElementScalar() | forms.InScalar()
              | forms.InOutScalar() | forms.OutScalar() | forms.Count()):
            return Traits()
        case _:
            assert_never(form)


def view(fs: FunctionSem, ps: ParamSem) -> AnnView:
    """Normalise a resolved parameter (each annotation form states its own attributes: annotation_forms.FORMS)."""
    length = ps.length or (f"call:{ps.length_call.call}" if ps.length_call else None) or \
        ("unsized" if ps.unsized else None)
    shared = bool(ps.length) and any(
        o.name != ps.name and o.length == ps.length and o.direction == "in" and traits(o.form).sized
        for o in fs.params)
    stated: dict[str, Any] = {}
    for form in annotation_forms.FORMS:
        stated.update(form.audit(ps, fs.params))
    return AnnView(direction=ps.direction, memory=ps.memory, shape=ps.shape, length=length, shared_length=shared,
                   fields=ps.fields, **stated)

"""The frozen plans a template reads: everything it needs, computed by codegen/render/planner.py."""

from __future__ import annotations



from ..base.record import record
from ..spec.ctypes_map import ctype
from ..spec.model import Spec
from ..spec.target import Target


@record
class ParamPlan:
    """How the typed wrapper takes, converts, passes and returns one C parameter."""

    c_name: str
    py: str  # Python parameter name ("" when not in the signature)
    hint: str  # type hint in the signature
    default: str | None  # Python default expression
    pre: tuple[str, ...]  # statements before the call: checks and conversions of arguments
    mid: tuple[str, ...]  # then: lengths filled in from the converted input sequences
    alloc: tuple[str, ...]  # then: output storage
    arg: str  # the C argument expression
    out: str | None  # expression of the returned value
    out_hint: str | None
    out_name: str | None  # field name in a result tuple
    late: tuple[str, ...] = ()  # after mid, before alloc: values encoded in a type other arguments choose
    note: str | None = None  # a line for the docstring (what None means, how the value is encoded)


@record
class FunctionPlan:
    """One typed wrapper: its parameters' plans, ctypes prototype, result and docstring."""

    c_name: str
    py_name: str
    params: tuple[ParamPlan, ...]
    returns: str  # return type hint
    result_class: str | None  # NamedTuple for several outputs
    result_fields: tuple[tuple[str, str], ...]
    return_expr: str
    restype: str
    argtypes: tuple[str, ...]
    # the C call's arguments in the form a function without argtypes passes as it is (raw.DIRECT), or None
    # where a parameter has no such form (a struct by value, ...): that call goes through the prototype
    direct_args: tuple[str, ...] | None
    status: bool  # returns the status type
    summary: str  # `name(args)` line for the docstring
    group: str | None
    beta: bool
    deprecated: bool
    undeclared: bool  # exported by the library, not declared by its header (the target's exported.yaml)
    added_in: str | None
    destroys: str | None  # the handle class this function destroys (its wrapper closes the object)
    destroys_param: str | None
    keep: tuple[str, ...]  # C-side callback objects to keep alive after the call
    keep_on: str | None  # ... on this handle argument
    # the docstring after its summary line: Args/Returns sections, indented for a function body
    # (codegen/render/docstrings.py); templates paste it right before the closing quotes
    doc: str = ""

    @property
    def signature(self) -> str:
        return ", ".join(f"{p.py}: {p.hint}" + (f" = {p.default}" if p.default is not None else "")
                         for p in self.params if p.py)

    @property
    def arg_names(self) -> tuple[str, ...]:
        return tuple(p.py for p in self.params if p.py)


@record
class EnumPlan:
    """An IntEnum of the typed API: its ctypes type and members."""

    c_name: str
    py_name: str
    ctype: str
    members: tuple[tuple[str, int], ...]


@record
class FieldPlan:
    """A field of a record's Python NamedTuple and its conversion from ctypes."""

    name: str
    ctype: str
    py_hint: str
    convert: str  # expression converting `c.<name>` to Python


@record
class RecordPlan:
    """A ctypes Structure/Union and its Python NamedTuple."""

    c_name: str
    py_name: str
    kind: str
    fields: tuple[tuple[str, str], ...]  # (name, ctype) for _fields_
    anonymous: tuple[str, ...]
    nested: tuple[RecordPlan, ...]
    flat: tuple[FieldPlan, ...]  # fields of the Python record, anonymous members flattened
    size: int
    align: int
    alias: str | None = None  # the typedef name, when it differs from the struct's name


@record
class HandlePlan:
    """A handle class: the functions that create it and the one that destroys it."""

    c_name: str
    py_name: str
    create: tuple[str, ...]
    destroy: str | None
    owner: str | None


@record
class CallbackPlan:
    """A CFUNCTYPE of a function-pointer typedef."""

    c_name: str
    py_name: str
    restype: str
    argtypes: tuple[str, ...]


@record
class TablePlan:
    """An element table of the release: module constants `_ET_<name>` (value -> encoding) and `_EN_<name>`
    (value -> constant name)."""

    name: str
    types: str  # dict literal
    names: str  # dict literal


@record
class QueryPlan:
    """A module helper reading the element type of a descriptor (rules.element_queries)."""

    helper: str
    handle: str  # C handle type
    call: str
    result_ctype: str
    args: str  # the call's arguments, `desc` and `_byref(_t)` in place
    arg_names: str  # the status error's argument mapping


@record
class ExtentPlan:
    """A module helper reading the bytes a descriptor spans (rules.extent_queries), for the buffer checks."""

    helper: str
    handle: str  # C handle type
    call: str
    call_py: str  # the typed wrapper of `call`
    type_field: str  # its result's fields: element type, dims, strides
    dims_field: str
    strides_field: str
    table: str  # the element table sizing the type


@record
class Plan:
    """Everything the templates render of one release."""

    spec: Spec
    target: Target
    banner_info: str
    enums: tuple[EnumPlan, ...]
    records: tuple[RecordPlan, ...]
    handles: tuple[HandlePlan, ...]
    callbacks: tuple[CallbackPlan, ...]
    opaque_typedefs: tuple[str, ...]
    functions: tuple[FunctionPlan, ...]
    status_enum: str
    status_class: str
    tables: tuple[TablePlan, ...] = ()
    queries: tuple[QueryPlan, ...] = ()
    extents: tuple[ExtentPlan, ...] = ()

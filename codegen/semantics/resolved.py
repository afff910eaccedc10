"""Resolved semantics: a release's spec and its annotations read together (what the planner, the stub
library, the driver and the audit read), and the tagged form each parameter is classified into once."""

from __future__ import annotations

from functools import cached_property
from typing import Literal

from ..base.record import field, record
from ..spec import model
from . import forms
from .forms import (Buffer, Callback, Count, ElementArray, ElementScalar, HostScalar, InArray, InBlob, InOutScalar,
                    InScalar, InString, Length, Opaque, OutArray, OutBlob, OutScalar, OutString, Value)
from .annotations import ElementQuery, ExtentQuery, FormNotes, LengthCall


@record
class ParamSem(FormNotes):
    """Final semantics of one parameter (by-value ones get shape `value`), with its annotation forms (FormNotes;
    `element_table` resolved to the default table where none is named)."""

    name: str
    index: int
    type: model.CType
    direction: Literal["in", "out", "inout"]
    memory: Literal["host", "device"]
    shape: model.Shape | Literal["value"]
    source: str  # type / doc / name / rule / annotation
    length: str | None = None
    length_call: LengthCall | None = None
    count: str | None = None
    unsized: bool = False
    nullable: bool = False
    default: str | None = None
    hidden: bool = False  # filled in by the wrapper (a length of an input array)
    fields: bool = False  # the pointee record has field semantics (Semantics.records)

    @cached_property
    def form(self) -> forms.ParamForm:
        """The tagged form the planner, docstrings, stub library and driver dispatch on (classified once)."""
        return classify(self)


@record
class FunctionSem:
    """A function of one release with its parameters' resolved meaning."""

    name: str
    params: tuple[ParamSem, ...]
    creates: str | None = None  # the handle type this function creates (owned result)

    def param(self, name: str) -> ParamSem:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)


@record
class HandleSem:
    """A handle type of one release with its resolved lifetime."""

    name: str
    tag: str
    create: tuple[str, ...]
    destroy: str | None
    owner: str | None


@record
class FieldSem:
    """A pointer field of a record with its resolved meaning."""

    name: str
    type: model.CType
    shape: Literal["scalar", "buffer", "opaque"]
    memory: Literal["host", "device"]
    nullable: bool
    null_means: str | None = None

    @cached_property
    def form(self) -> forms.FieldForm:
        return forms.classify_field(self.shape)


@record
class RecordSem:
    """A record whose pointer fields have semantics: the typed API converts them element by element."""

    name: str
    fields: dict[str, FieldSem]


@record
class TableSem:
    """An element table of one release: enum value -> encoding (constants of this release only)."""

    name: str
    enum: str
    types: dict[int, str]
    names: dict[int, str]  # enum value -> constant name


@record
class Semantics:
    """A release's spec and the annotations, resolved together (what the planner reads)."""

    functions: dict[str, FunctionSem]
    handles: dict[str, HandleSem]
    records: dict[str, RecordSem] = field(default_factory=dict)
    tables: dict[str, TableSem] = field(default_factory=dict)
    queries: dict[str, ElementQuery] = field(default_factory=dict)  # handle type -> query (in this release)
    extents: dict[str, ExtentQuery] = field(default_factory=dict)  # handle type -> extent query (in this release)
    sizes: dict[str, tuple[str, ...]] = field(default_factory=dict)  # rules.buffer_sizes (in this release)


def is_host_scalar(p: ParamSem) -> bool:
    """A host `void *` scalar (alpha/beta): what `scalar` and `element_of` are for."""
    return p.shape == "scalar" and p.memory == "host" and p.type.kind == "void" and p.type.depth == 1


def classify(p: ParamSem) -> forms.ParamForm:
    """The form of `p`: the one reading of shape, direction, memory and type the code branches on."""
    shape, t = p.shape, p.type
    if shape == "value":
        return Length() if p.hidden else Value()
    if p.hidden and shape == "scalar":  # an output count consumed by output arrays
        return Count(returned=bool(p.returned))
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
            return InArray(per=1 if p.per is None else p.per)
        return OutArray(reads=p.direction == "inout")
    if is_host_scalar(p):
        if p.element_of is not None:
            return ElementScalar(out=p.direction == "out")
        return HostScalar(reads=p.scalar)
    if p.direction == "in":
        return InScalar()
    if p.direction == "inout":
        return InOutScalar()
    return OutScalar(holds=p.holds)

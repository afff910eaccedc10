"""The annotations file (annotations.yaml): what the header cannot say, as written, with its loader.

General rules (the `rules:` section) and per-function, per-handle and per-record notes; resolving them
against one release is `resolve.py`'s job.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Protocol

from ..base.record import field, record
from ..base.errors import CodegenError
from ..spec import model, validate
from ..spec.releases import Version
from ..spec.spec_io import load_as

#: how one value of a run-time chosen type is laid out (rules.element_tables; _support encodes/decodes them)
Encoding = Literal["float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32",
                   "uint32", "int64", "uint64", "bool", "pointer"]
ENCODINGS: tuple[str, ...] = ("float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32",
                              "uint32", "int64", "uint64", "bool", "pointer")


# --------------------------------------------------------------------------- the file


@record
class LengthCall:
    """An array whose length comes from another call (e.g. GetTensorDescriptorSize).

    The call's inputs are this function's same-named arguments, or those `args` maps them to
    (callee parameter -> this function's parameter).
    """

    call: str
    result: str
    args: dict[str, str] = field(default_factory=dict)


@record(kw_only=True)
class FormNotes:
    """The annotation forms (annotation_forms.FORMS: one `Form.key` each), declared here once: a parameter's note
    (ParamNote, what annotations.yaml says) and its resolved semantics (resolved.ParamSem) both carry them, under
    the same key and type, None where the annotation says nothing; resolution copies them over by name."""

    # what NULL means to MIOpen (a nullable host scalar or array): shown in the wrapper's docstring
    null_means: str | None = None
    # a host `void *` scalar read as float or double whatever the tensor type
    scalar: Literal["float", "double"] | None = None
    # a host scalar or array whose element type is chosen at run time by another parameter: a data-type
    # enum (in or out), or a descriptor whose type rules.element_queries reads (over any `scalar:`, so that a
    # variant can give it)
    element_of: str | None = None
    element_table: str | None = None  # the rules.element_tables entry (default: resolved to the table marked default)
    holds: Literal["address_of_device_pointer"] | None = None  # an out pointer receiving &field (void **)
    per: int | None = None  # an input array of `per` elements for each unit of `length` (None: one)
    returned: bool | None = None  # an output count that is also returned as a value of its own


@record
class ParamNote(FormNotes):
    """A hand-written note on one parameter (annotations.yaml): what its header cannot tell."""

    direction: Literal["in", "out", "inout"] | None = None
    memory: Literal["host", "device"] | None = None
    shape: model.Shape | None = None
    length: str | None = None  # a by-value integer parameter holding the element count
    length_call: LengthCall | None = None
    count: str | None = None  # an output receiving how many elements were filled
    unsized: bool | None = None  # an input array whose length MIOpen derives itself (no length argument)
    nullable: bool | None = None
    since: Version | None = None  # first release where the function has this parameter
    until: Version | None = None  # last release where it has it
    why: str | None = None


@record
class Variant:
    """Parameter annotations for some releases only (their implementation differs): merged over `params`,
    key by key, for the releases from `since` to `until`."""

    since: Version | None = None
    until: Version | None = None
    params: dict[str, ParamNote] = field(default_factory=dict)
    why: str | None = None


@record
class FunctionNote:
    """A function's notes: its parameters', the releases declaring it, its variants."""

    params: dict[str, ParamNote] = field(default_factory=dict)
    since: Version | None = None  # first release declaring the function
    until: Version | None = None  # last release declaring it
    variants: tuple[Variant, ...] = ()
    why: str | None = None


@record
class Ownership:
    """A handle type's lifetime: the functions creating and destroying it, the handle owning it."""

    create: tuple[str, ...] = ()
    destroy: str | None = None
    owner: str | None = None  # destroyed together with this other handle type
    since: Version | None = None  # first release declaring the handle type
    until: Version | None = None  # last release declaring it
    why: str | None = None


@record
class ElementTable:
    """How MIOpen lays out one value of each constant of a type enum (e.g. what `visit_float` reads for
    miopenHalf): the encoding of each constant. Constants a release lacks are skipped; a constant
    absent from `types` has no host form (the wrapper refuses it)."""

    enum: str
    types: dict[str, Encoding]
    default: bool = False  # the table for `element_of` parameters of this enum that name none
    why: str | None = None


@record
class ElementQuery:
    """How a wrapper reads the element type of a descriptor: `call` with the descriptor, its out enum
    `result`, and NULL for every other pointer parameter (which must be annotated nullable)."""

    call: str
    result: str
    why: str | None = None


@record
class ExtentQuery:
    """How a wrapper reads the bytes a descriptor spans, to check a buffer it describes (the parameter named as the
    buffer plus `suffix`): `call` with the descriptor gives its element type (`type`, sized by the element table
    `table`), dims and strides (`dims`, `strides`, in elements)."""

    call: str
    type: str
    dims: str
    strides: str
    table: str
    suffix: str
    why: str | None = None


@record
class FieldNote:
    """Semantics of one pointer field of a record the API takes by pointer (the vocabulary of parameters)."""

    shape: Literal["scalar", "buffer", "opaque"] | None = None  # scalar: a pointer to one handle (in)
    memory: Literal["host", "device"] | None = None
    nullable: bool | None = None
    null_means: str | None = None
    why: str | None = None


@record
class RecordNote:
    """A record's notes: its fields' and the releases declaring it."""

    fields: dict[str, FieldNote] = field(default_factory=dict)
    since: Version | None = None  # first release declaring the record
    until: Version | None = None
    why: str | None = None


@record
class Rules:
    """Rules that apply to every function (counts, nullable and scratch buffers, element tables)."""

    count_names: tuple[str, ...]  # by-value integers that count an adjacent array
    nullable_buffers: tuple[str, ...]  # device buffers that may be null (workspaces)
    scratch_buffers: tuple[str, ...]  # device buffers the call reads and writes
    # direction of a non-const `void *` device buffer that has no doc tag (None: an annotation decides)
    untagged_buffers: Literal["in", "out", "inout"] | None = None
    element_tables: dict[str, ElementTable] = field(default_factory=dict)
    element_queries: dict[str, ElementQuery] = field(default_factory=dict)  # handle type -> its type query
    extent_queries: dict[str, ExtentQuery] = field(default_factory=dict)  # handle type -> its extent query
    # device buffer -> the by-value byte counts a call may pass with it (the buffer must hold that many)
    buffer_sizes: dict[str, tuple[str, ...]] = field(default_factory=dict)


@record
class Annotations:
    """The target's annotations.yaml."""

    schema_version: int
    rules: Rules
    handles: dict[str, Ownership]
    functions: dict[str, FunctionNote]
    records: dict[str, RecordNote] = field(default_factory=dict)


def load_annotations(path: Path) -> Annotations:
    ann = load_as(Annotations, path)
    if ann.schema_version != 1:
        raise CodegenError(f"{path}: schema_version: expected 1; got {ann.schema_version}")
    validate.mark_valid(ann)  # load_as applied the rules already
    return ann


class Ranged(Protocol):
    """Something annotated for a range of releases: `since` the first, `until` the last (None: unbounded)."""

    @property
    def since(self) -> Version | None: ...

    @property
    def until(self) -> Version | None: ...


def in_range(version: Version, note: Ranged) -> bool:
    """Whether `version` is in the note's since/until range (both ends included)."""
    return not (note.since and version < note.since) and not (note.until and version > note.until)

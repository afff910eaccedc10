"""The API model: frozen records (codegen/base/record.py) that a spec YAML file serialises one to one.

Everything here is derived from a header by the parser (names, types, values, layout,
flags); the only prose is the header's own words for a function and its parameters (`Function.brief`,
`Param.doc`: optional, one line each, carried into the docstrings).
"""

# no `from __future__ import annotations`: the fields' annotations are objects made with the classes, so the spec's
# readers and checks take them from `typing.get_type_hints` without compiling ~80 strings each process

from typing import Literal

from ..base.record import field, record
from .releases import Version

SCHEMA_VERSION = 1

#: Kind of the innermost (named) type of a C type.
BaseKind = Literal[
    "void", "bool", "char", "int", "float", "enum", "struct", "union", "handle", "callback", "opaque", "incomplete"
]
Direction = Literal["in", "out", "inout", "unknown"]
Memory = Literal["host", "device", "unknown"]
#: a pointer parameter's shape, as the annotations state it
Shape = Literal["scalar", "array", "buffer", "string", "blob", "callback", "opaque"]
#: the shape the parser's heuristics give a role: one of Shape's, or "unknown"
RoleShape = Literal["scalar", "array", "buffer", "callback", "opaque", "unknown"]
#: Where a proposed role came from: the C type, the doc tag, the target's name rules,
#: nothing yet (an annotation must decide), or a hand-written annotation.
Provenance = Literal["type", "doc", "name", "none", "annotation"]
DocTag = Literal["in", "out", "inout"]


def _meta(
    *, key: str | None = None, omit_default: bool = False, flow: bool = False, flow_items: bool = False
) -> dict[str, object]:
    """YAML layout of a field: its key, whether a default value is left out, flow style."""
    return {"key": key, "omit_default": omit_default, "flow": flow, "flow_items": flow_items}


@record
class CType:
    """A normalised C type: a named base type under `depth` pointers.

    `const[0]` is the constness of the base, `const[i]` that of the i-th pointer level
    (counting outward), so `const void *const *` is depth 2, const (True, True, False).
    """

    kind: BaseKind
    name: str
    depth: int = field(default=0, metadata=_meta(omit_default=True))
    const: tuple[bool, ...] = field(default=(False,), metadata=_meta(omit_default=True, flow=True))
    array: int | None = field(default=None, metadata=_meta(omit_default=True))

    @property
    def is_pointer(self) -> bool:
        return self.depth > 0

    @property
    def pointee_const(self) -> bool:
        """Constness of what the outermost pointer points to."""
        return self.depth > 0 and self.const[self.depth - 1]

    def pointee(self) -> "CType":
        """The type one pointer level down (`int **` -> `int *`; a non-pointer stays itself)."""
        return CType(kind=self.kind, name=self.name, depth=max(self.depth - 1, 0),
                     const=self.const[: max(self.depth, 1)])

    def spelling(self) -> str:
        """A C spelling of the type, e.g. `const void *const *`."""
        text = ("const " if self.const[0] else "") + self.name
        for level in range(1, self.depth + 1):
            text += " *" + ("const" if self.const[level] else "")
        return text + (f"[{self.array}]" if self.array is not None else "")


@record
class RoleSource:
    """Provenance of each part of a `Role`."""

    direction: Provenance
    memory: Provenance
    shape: Provenance


@record
class Role:
    """Proposed role of a pointer parameter, each part with its provenance."""

    direction: Direction
    memory: Memory
    shape: RoleShape
    source: RoleSource


@record
class Param:
    """A parameter: its name (None where the header gives none), C spelling, type, default argument, doc tag,
    proposed role and the header's `@param` text."""

    name: str | None
    c: str
    type: CType = field(metadata=_meta(flow=True))
    default: str | None = field(default=None, metadata=_meta(omit_default=True))
    doc_tag: DocTag | None = field(default=None, metadata=_meta(omit_default=True))
    doc_optional: bool = field(default=False, metadata=_meta(omit_default=True))
    role: Role | None = field(default=None, metadata=_meta(omit_default=True, flow=True))
    doc: str | None = field(default=None, metadata=_meta(omit_default=True))


@record
class Function:
    """An API function: its return type and parameters, Doxygen group, beta and deprecated flags, and the header's
    description of it (its `@brief`)."""

    name: str
    returns: CType = field(metadata=_meta(flow=True))
    params: tuple[Param, ...]
    group: str | None = field(default=None, metadata=_meta(omit_default=True))
    beta: bool = field(default=False, metadata=_meta(omit_default=True))
    deprecated: bool = field(default=False, metadata=_meta(omit_default=True))
    #: exported by the library but not declared by its header (declared in the target's exported.yaml)
    undeclared: bool = field(default=False, metadata=_meta(omit_default=True))
    brief: str | None = field(default=None, metadata=_meta(omit_default=True))


@record
class EnumConstant:
    """One constant of an enum; `alias_of` names the constant it is defined as (`A = B`)."""

    name: str
    value: int
    alias_of: str | None = field(default=None, metadata=_meta(omit_default=True))
    beta: bool = field(default=False, metadata=_meta(omit_default=True))
    deprecated: bool = field(default=False, metadata=_meta(omit_default=True))


@record
class Enum:
    """An enum: its underlying integer type and constants in header order."""

    name: str
    underlying: str
    constants: tuple[EnumConstant, ...] = field(metadata=_meta(flow_items=True))
    group: str | None = field(default=None, metadata=_meta(omit_default=True))
    beta: bool = field(default=False, metadata=_meta(omit_default=True))


@record
class Field:
    """A struct/union member; an anonymous nested record has `name` None and `record` set."""

    name: str | None
    offset: int
    type: CType | None = field(default=None, metadata=_meta(omit_default=True, flow=True))
    c: str | None = field(default=None, metadata=_meta(omit_default=True))
    record: "Record | None" = field(default=None, metadata=_meta(omit_default=True))


@record
class Record:
    """A struct or union with its layout as clang computes it (bytes)."""

    name: str | None
    kind: Literal["struct", "union"]
    size: int
    align: int
    fields: tuple[Field, ...]
    tag: str | None = field(default=None, metadata=_meta(omit_default=True))
    typedef: str | None = field(default=None, metadata=_meta(omit_default=True))
    group: str | None = field(default=None, metadata=_meta(omit_default=True))
    beta: bool = field(default=False, metadata=_meta(omit_default=True))


# Field's one forward reference, made an object now that Record exists (from the string, `typing.get_type_hints`
# would compile it: the first compile of a process costs a millisecond or two)
Field.__annotations__["record"] = Record | None


@record
class Callback:
    """A function-pointer typedef."""

    name: str
    returns: CType = field(metadata=_meta(flow=True))
    params: tuple[Param, ...]
    beta: bool = field(default=False, metadata=_meta(omit_default=True))


@record
class Handle:
    """An opaque handle: `typedef struct <tag> *<name>` over an empty struct."""

    name: str
    tag: str
    group: str | None = field(default=None, metadata=_meta(omit_default=True))
    beta: bool = field(default=False, metadata=_meta(omit_default=True))


@record
class Typedef:
    """Any other typedef the API uses (e.g. the accelerator queue)."""

    name: str
    type: CType = field(metadata=_meta(flow=True))
    c: str = ""


@record
class HeaderInfo:
    """The parsed header: its file name and the sha256 of its bytes."""

    name: str
    sha256: str


@record
class ParseInfo:
    """How the header was parsed: the language and the macros defined."""

    language: str
    beta: bool
    defines: tuple[str, ...] = field(metadata=_meta(flow=True))


@record
class Spec:
    """One release's API as parsed from its header (the spec YAML's root)."""

    schema_version: int
    generator_version: str
    target: str
    version: Version  # the release, X.Y.Z in the YAML
    release: str | None
    header: HeaderInfo
    parse: ParseInfo
    handles: tuple[Handle, ...]
    typedefs: tuple[Typedef, ...]
    enums: tuple[Enum, ...]
    records: tuple[Record, ...]
    callbacks: tuple[Callback, ...]
    functions: tuple[Function, ...]

    def function(self, name: str) -> Function:
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(name)

    def enum(self, name: str) -> Enum:
        for e in self.enums:
            if e.name == name:
                return e
        raise KeyError(name)

    def record(self, name: str) -> Record:
        for r in self.records:
            if r.name == name:
                return r
        raise KeyError(name)

def flat_fields(r: Record) -> list[tuple[str, CType]]:
    """(name, type) of every field, anonymous members flattened (the order of the generated NamedTuple)."""
    return [(n, t) for n, t, _ in flat_fields_grouped(r)]


def flat_fields_grouped(r: Record, group: str | None = None) -> list[tuple[str, CType, str | None]]:
    """Fields with anonymous members flattened; members of one anonymous union share a group name."""
    out: list[tuple[str, CType, str | None]] = []
    for i, f in enumerate(r.fields):
        if f.record is not None:
            inner = f"{group or ''}u{i}" if f.record.kind == "union" else group
            out += flat_fields_grouped(f.record, inner)
        elif f.name is not None and f.type is not None:
            out.append((f.name, f.type, group))
    return out

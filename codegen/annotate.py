"""Declarative semantics: what the header cannot say, from general rules plus `annotations.yaml`.

The spec proposes a role for every pointer parameter from its C type (and doc tag). This
module resolves each parameter to final semantics: direction, host/device memory, shape,
array length links, nullability, and the create/destroy pair of every opaque handle type.
General rules (below, parameterised by the `rules:` section) cover the common cases; the
file's `functions:` section holds the exceptions. The gate lists every pointer parameter
still unclassified and every annotation naming something absent from the spec.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from . import forms, model, naming, validate
from .errors import CodegenError, NamingError, SpecError
from .releases import Version
from .spec_io import load_as

#: how one value of a run-time chosen type is laid out (rules.element_tables; _support encodes/decodes them)
Encoding = Literal["float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32",
                   "uint32", "int64", "uint64", "bool", "pointer"]
ENCODINGS: tuple[str, ...] = ("float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32",
                              "uint32", "int64", "uint64", "bool", "pointer")


# --------------------------------------------------------------------------- the file


@dataclass(frozen=True)
class LengthCall:
    """An array whose length comes from another call (e.g. GetTensorDescriptorSize).

    The call's inputs are this function's same-named arguments, or those `args` maps them to
    (callee parameter -> this function's parameter).
    """

    call: str
    result: str
    args: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ParamNote:
    """A hand-written note on one parameter (annotations.yaml): what its header cannot tell."""

    direction: Literal["in", "out", "inout"] | None = None
    memory: Literal["host", "device"] | None = None
    shape: model.Shape | None = None
    length: str | None = None  # a by-value integer parameter holding the element count
    length_call: LengthCall | None = None
    count: str | None = None  # an output receiving how many elements were filled
    unsized: bool | None = None  # an input array whose length MIOpen derives itself (no length argument)
    nullable: bool | None = None
    # what NULL means to MIOpen (a nullable host scalar or array): shown in the wrapper's docstring
    null_means: str | None = None
    # a host `void *` scalar read as float or double whatever the tensor type
    scalar: Literal["float", "double"] | None = None
    # a host scalar or array whose element type is chosen at run time by another parameter: a data-type
    # enum (in or out), or a descriptor whose type rules.element_queries reads
    element_of: str | None = None
    element_table: str | None = None  # the rules.element_tables entry (default: the table marked default)
    holds: Literal["address_of_device_pointer"] | None = None  # an out pointer receiving &field (void **)
    per: int | None = None  # an input array of `per` elements for each unit of `length`
    returned: bool | None = None  # an output count that is also returned as a value of its own
    since: str | None = None  # first release where the function has this parameter
    until: str | None = None  # last release where it has it
    why: str | None = None


@dataclass(frozen=True)
class Variant:
    """Parameter annotations for some releases only (their implementation differs): merged over `params`,
    key by key, for the releases from `since` to `until`."""

    since: str | None = None
    until: str | None = None
    params: dict[str, ParamNote] = field(default_factory=dict)
    why: str | None = None


@dataclass(frozen=True)
class FunctionNote:
    """A function's notes: its parameters', the releases declaring it, its variants."""

    params: dict[str, ParamNote] = field(default_factory=dict)
    since: str | None = None  # first release declaring the function
    until: str | None = None  # last release declaring it
    variants: tuple[Variant, ...] = ()
    why: str | None = None


@dataclass(frozen=True)
class Ownership:
    """A handle type's lifetime: the functions creating and destroying it, the handle owning it."""

    create: tuple[str, ...] = ()
    destroy: str | None = None
    owner: str | None = None  # destroyed together with this other handle type
    since: str | None = None  # first release declaring the handle type
    until: str | None = None  # last release declaring it
    why: str | None = None


@dataclass(frozen=True)
class ElementTable:
    """How MIOpen lays out one value of each constant of a type enum (e.g. what `visit_float` reads for
    miopenHalf): the encoding of each constant. Constants a release lacks are skipped; a constant
    absent from `types` has no host form (the wrapper refuses it)."""

    enum: str
    types: dict[str, Encoding]
    default: bool = False  # the table for `element_of` parameters of this enum that name none
    why: str | None = None


@dataclass(frozen=True)
class ElementQuery:
    """How a wrapper reads the element type of a descriptor: `call` with the descriptor, its out enum
    `result`, and NULL for every other pointer parameter (which must be annotated nullable)."""

    call: str
    result: str
    why: str | None = None


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class FieldNote:
    """Semantics of one pointer field of a record the API takes by pointer (the vocabulary of parameters)."""

    shape: Literal["scalar", "buffer", "opaque"] | None = None  # scalar: a pointer to one handle (in)
    memory: Literal["host", "device"] | None = None
    nullable: bool | None = None
    null_means: str | None = None
    why: str | None = None


@dataclass(frozen=True)
class RecordNote:
    """A record's notes: its fields' and the releases declaring it."""

    fields: dict[str, FieldNote] = field(default_factory=dict)
    since: str | None = None  # first release declaring the record
    until: str | None = None
    why: str | None = None


@dataclass(frozen=True)
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


@dataclass(frozen=True)
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


# --------------------------------------------------------------------------- resolved semantics


@dataclass(frozen=True)
class ParamSem:
    """Final semantics of one parameter (by-value ones get shape `value`)."""

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
    null_means: str | None = None  # what None (NULL) does, in our words (annotations.yaml)
    default: str | None = None
    hidden: bool = False  # filled in by the wrapper (a length of an input array)
    # host `void *` scalars: float / double whatever the tensor type, the element type of `element_of`,
    # or None (the default: float, or what the caller passes as ctypes.c_float / c_double)
    scalar: Literal["float", "double", "element"] | None = None
    element_of: str | None = None  # the parameter choosing the element type (scalar element, arrays)
    element_table: str | None = None  # resolved: the rules.element_tables entry
    holds: Literal["address_of_device_pointer"] | None = None
    per: int = 1  # elements per unit of `length`
    returned: bool = False  # an output count returned as a value of its own
    fields: bool = False  # the pointee record has field semantics (Semantics.records)

    @cached_property
    def form(self) -> forms.ParamForm:
        """The tagged form the planner, docstrings, stub library and driver dispatch on (classified once)."""
        return forms.classify(self)


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class HandleSem:
    """A handle type of one release with its resolved lifetime."""

    name: str
    tag: str
    create: tuple[str, ...]
    destroy: str | None
    owner: str | None


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class RecordSem:
    """A record whose pointer fields have semantics: the typed API converts them element by element."""

    name: str
    fields: dict[str, FieldSem]


@dataclass(frozen=True)
class TableSem:
    """An element table of one release: enum value -> encoding (constants of this release only)."""

    name: str
    enum: str
    types: dict[int, str]
    names: dict[int, str]  # enum value -> constant name


@dataclass(frozen=True)
class Semantics:
    """A release's spec and the annotations, resolved together (what the planner reads)."""

    functions: dict[str, FunctionSem]
    handles: dict[str, HandleSem]
    records: dict[str, RecordSem] = field(default_factory=dict)
    tables: dict[str, TableSem] = field(default_factory=dict)
    queries: dict[str, ElementQuery] = field(default_factory=dict)  # handle type -> query (in this release)
    extents: dict[str, ExtentQuery] = field(default_factory=dict)  # handle type -> extent query (in this release)
    sizes: dict[str, tuple[str, ...]] = field(default_factory=dict)  # rules.buffer_sizes


@dataclass(frozen=True)
class OpenParam:
    """A pointer parameter the rules leave open: what an annotation must decide."""

    function: str
    param: str
    c: str
    missing: tuple[str, ...]  # direction / memory / shape / length


class AnnotationGateError(CodegenError):
    """Generation must stop: parameters left unclassified or annotations that match nothing.

    The message ends with the annotations to add (valid for the spec at hand); `across(specs)` gives
    the message with a suggestion valid for every release in `specs`."""

    def __init__(self, problems: str, open_params: tuple[OpenParam, ...] = (), ann: Annotations | None = None,
                 spec: model.Spec | None = None) -> None:
        self.problems, self.open_params, self.ann = problems, open_params, ann
        super().__init__(self.across([spec] if spec is not None else []))

    def across(self, specs: list[model.Spec]) -> str:
        if not (self.open_params and self.ann and specs):
            return self.problems
        return self.problems + "\n" + suggestion(self.open_params, self.ann, specs)


_INT_NAMES = {"int", "unsigned int", "long", "unsigned long", "long long", "unsigned long long", "short",
              "unsigned short", "size_t", "int32_t", "uint32_t", "int64_t", "uint64_t"}


def _is_count(p: model.Param) -> bool:
    return p.type.depth == 0 and p.type.kind == "int" and p.type.name in _INT_NAMES


def _version_key(v: str) -> Version:
    try:
        return Version.parse(v)
    except CodegenError:
        raise CodegenError(f"annotations: since/until must be versions like 3.2.0; got {v!r}") from None


def _in_range(version: str, note: FunctionNote | Ownership | ParamNote | RecordNote | Variant) -> bool:
    v = _version_key(version)
    if note.since and v < _version_key(note.since):
        return False
    return not (note.until and v > _version_key(note.until))


def resolve(spec: model.Spec, ann: Annotations, *, strict: bool = True, prefix: str | None = None,
            target: Any = None) -> Semantics:
    """Apply the rules and the annotations to `spec`; raise the gate error if anything is left open.

    First the spec itself is checked (codegen/validate.py: names, strings, types, defaults; a spec
    built in memory gets the same checks as a loaded one); afterwards the Python names the renderer
    will make (collisions raise NamingError naming the C names). `target` (the target facts) adds
    the exception class names to that check.
    """
    for what, obj in ((f"spec {spec.target} {spec.version}", spec), ("annotations", ann)):
        try:
            validate.ensure_valid(obj)
        except validate.Violation as exc:
            raise SpecError(f"{what}: {exc.path}: {exc.message}", path=exc.path) from None
    problems: list[str] = []
    names = {f.name: f for f in spec.functions}
    for fname, note in sorted(ann.functions.items()):
        if fname not in names:
            if _in_range(spec.version, note) and (note.since or note.until):
                problems.append(f"annotation for {fname}: not in {spec.target} {spec.version} although its "
                                f"since/until range includes it")
            elif not (note.since or note.until):
                problems.append(f"annotation for {fname}: no such function in {spec.target} {spec.version} "
                                f"(typo, or add since:/until: to scope it)")
            continue
        pnames = {p.name for p in names[fname].params}
        for vk, variant in enumerate(note.variants):
            if not (variant.since or variant.until):
                problems.append(f"annotation for {fname}: variants[{vk}] needs since: or until:")
            if not _in_range(spec.version, variant):
                continue
            for pname in sorted(set(variant.params) - pnames):
                problems.append(f"annotation for {fname}: variants[{vk}].{pname}: no such parameter in {spec.target} "
                                f"{spec.version} although the variant's since/until range includes it")
        for pname, pnote in sorted(note.params.items()):
            if pname in pnames:
                continue
            has = ", ".join(str(p.name) for p in names[fname].params)
            if not (pnote.since or pnote.until):
                problems.append(f"annotation for {fname}.{pname}: no such parameter (has: {has}; typo, or add "
                                f"since:/until: to the parameter to scope it)")
            elif _in_range(spec.version, pnote):
                problems.append(f"annotation for {fname}.{pname}: no such parameter in {spec.target} "
                                f"{spec.version} although its since/until range includes it (has: {has})")
    functions: dict[str, FunctionSem] = {}
    unclassified: list[OpenParam] = []
    for f in spec.functions:
        sem, open_params, open_notes = _resolve_function(f, ann, spec.version)
        if open_params and not strict:  # exploring: what is unclassified passes as an opaque pointer
            sem = replace(sem, params=tuple(
                replace(p, shape="opaque", memory="host", direction="in")
                if p.shape in ("array", "blob") and not (p.length or p.length_call) else p
                for p in sem.params))
        functions[f.name] = sem
        problems += open_params
        unclassified += open_notes
    for fs in functions.values():
        for ps in fs.params:
            lc = ps.length_call
            if lc is None:
                continue
            if lc.call not in names:
                problems.append(f"{fs.name}.{ps.name}: length_call {lc.call} is not in {spec.target} {spec.version}")
                continue
            callee = names[lc.call]
            mine = {p.name for p in names[fs.name].params}
            theirs = {p.name for p in callee.params}
            if lc.result not in theirs:
                problems.append(f"{fs.name}.{ps.name}: {lc.call} has no parameter {lc.result!r}")
            for k, v in lc.args.items():
                if k not in theirs or v not in mine:
                    problems.append(f"{fs.name}.{ps.name}: length_call args {k}: {v} names a missing parameter")
            missing = [p.name for p in callee.params
                       if p.name != lc.result and lc.args.get(str(p.name), p.name) not in mine]
            if missing:
                problems.append(f"{fs.name}.{ps.name}: {lc.call} needs {', '.join(map(str, missing))}, "
                                f"which {fs.name} does not have")
    if prefix is None:
        from .target import target_for

        prefix = target_for(spec.target).function_prefix
    handles = _resolve_handles(spec, ann, functions, problems, prefix)
    functions = {
        n: replace(fs, creates=next((h.name for h in handles.values() if n in h.create), None))
        for n, fs in functions.items()
    }
    tables = _resolve_tables(spec, ann, problems)
    queries = _resolve_queries(spec, ann, functions, problems)
    functions = _check_vocabulary(spec, ann, functions, tables, queries, problems)
    records, functions = _resolve_records(spec, ann, functions, problems)
    extents = _resolve_extents(spec, ann, functions, tables, problems)
    result = Semantics(functions=functions, handles=handles, records=records, tables=tables, queries=queries,
                       extents=extents, sizes=dict(ann.rules.buffer_sizes))
    naming_problems = naming.check_names(spec, prefix, result, target)
    if naming_problems:
        raise NamingError(f"{spec.target} {spec.version}: {len(naming_problems)} Python naming problem(s):\n  "
                          + "\n  ".join(naming_problems))
    if problems and strict:
        raise AnnotationGateError(
            f"annotation gate: {len(problems)} problem(s) in {spec.target} {spec.version} "
            f"(fix specs/{spec.target}/annotations.yaml):\n  " + "\n  ".join(problems),
            tuple(unclassified), ann, spec,
        )
    return result


def _merged_params(note: FunctionNote, version: str) -> dict[str, ParamNote]:
    """The parameter annotations for `version`: `params`, with the variants whose range includes it on top."""
    params = dict(note.params)
    for variant in note.variants:
        if not _in_range(version, variant):
            continue
        for pname, pnote in variant.params.items():
            base = params.get(pname, ParamNote())
            params[pname] = replace(base, **{f.name: getattr(pnote, f.name) for f in dataclasses.fields(pnote)
                                             if getattr(pnote, f.name) is not None})
    return params


def _resolve_function(f: model.Function, ann: Annotations, version: str
                      ) -> tuple[FunctionSem, list[str], list[OpenParam]]:
    note = ann.functions.get(f.name, FunctionNote())
    if note.variants:
        note = replace(note, params=_merged_params(note, version))
    rules = ann.rules
    problems: list[str] = []
    open_notes: list[OpenParam] = []
    params: list[ParamSem] = []
    by_name = {p.name: p for p in f.params}
    for i, p in enumerate(f.params):
        name = p.name or f"arg{i}"
        pn = note.params.get(name, ParamNote())
        if p.role is None:
            sem = ParamSem(name=name, index=i, type=p.type, direction="in", memory="host", shape="value",
                           source="type", default=p.default)
            if pn != ParamNote():
                sem = _apply(sem, pn)
            if sem.null_means is not None and not sem.nullable:
                problems.append(f"{f.name}.{name}: null_means is given, but the parameter is not nullable")
            params.append(sem)
            continue
        r = p.role
        direction, memory, shape = r.direction, r.memory, r.shape
        source: str = r.source.direction
        nullable = p.doc_optional
        if shape == "buffer" and name in rules.scratch_buffers and direction == "unknown":
            direction, source = "inout", "rule"
        if shape == "buffer" and direction == "unknown" and rules.untagged_buffers is not None:
            direction, source = rules.untagged_buffers, "rule"
        if shape == "buffer" and name in rules.nullable_buffers:
            nullable = True
        if p.type.kind == "void" and r.memory == "host" and shape == "scalar" and p.type.depth == 1:
            shape = "scalar"  # a host scalar typed by the data type (alpha/beta)
        if p.type.kind == "callback":
            nullable = True  # null callbacks restore defaults
        sem = ParamSem(
            name=name, index=i, type=p.type,
            direction=direction if direction != "unknown" else "in",
            memory=memory if memory != "unknown" else "host",
            shape=shape if shape != "unknown" else "scalar",
            source=source, nullable=nullable, default=p.default,
        )
        unknown = [k for k, v in (("direction", direction), ("memory", memory), ("shape", shape)) if v == "unknown"]
        if pn != ParamNote():
            sem = _apply(sem, pn)
            unknown = [k for k in unknown if getattr(pn, k) is None]
        if sem.shape == "array" and sem.direction == "in" and not (sem.length or sem.length_call or sem.unsized):
            count = _adjacent_count(f, i, rules)
            if count:
                sem = replace(sem, length=count, source=sem.source if pn.length else "rule")
        if sem.shape in ("array", "blob") and not (sem.length or sem.length_call or sem.unsized):
            unknown.append("length")
        if sem.null_means is not None and not sem.nullable:
            problems.append(f"{f.name}.{name}: null_means is given, but the parameter is not nullable")
        if sem.unsized and sem.direction != "in":
            problems.append(f"{f.name}.{name}: only input arrays can be unsized")
        if unknown:
            problems.append(f"{f.name}.{name} ({p.c}): unclassified {', '.join(unknown)}")
            open_notes.append(OpenParam(f.name, name, p.c, tuple(unknown)))
        params.append(sem)
    # lengths of input arrays are filled in from the sequences: hide them from the Python signature
    hidden = {s.length for s in params if s.length and s.direction == "in" and s.shape in ("array", "blob")}
    for s in params:
        for link in (s.length, s.count):
            if link and link not in by_name:
                problems.append(f"{f.name}.{s.name}: links to {link!r}, which is not a parameter")
        if s.length_call and s.length_call.call == f.name:
            problems.append(f"{f.name}.{s.name}: length_call names the function itself")
        counted = next((o for o in params if o.name == s.count), None)
        if counted is not None and not (counted.shape == "scalar" and counted.direction == "out"):
            problems.append(f"{f.name}.{s.name}: count names {s.count!r}, which is no out scalar (the count the "
                            f"callee writes)")
    params = [replace(s, hidden=True) if s.name in hidden and s.shape == "value" else s for s in params]
    counts = {s.count for s in params if s.count}
    params = [replace(s, hidden=True) if s.name in counts else s for s in params]
    return FunctionSem(name=f.name, params=tuple(params)), problems, open_notes


def _apply(sem: ParamSem, pn: ParamNote) -> ParamSem:
    changes: dict[str, object] = {"source": "annotation"}
    for k in ("direction", "memory", "shape", "length", "length_call", "count", "unsized", "nullable", "null_means",
              "element_of", "element_table", "holds", "scalar", "per", "returned"):
        v = getattr(pn, k)
        if v is not None:
            changes[k] = v
    out = replace(sem, **changes)  # type: ignore[arg-type]
    if pn.element_of is not None and forms.is_host_scalar(out):
        out = replace(out, scalar="element")
    return out


# --------------------------------------------------------------------------- run-time element types, records


def _resolve_tables(spec: model.Spec, ann: Annotations, problems: list[str]) -> dict[str, TableSem]:
    enums = {e.name: e for e in spec.enums}
    out: dict[str, TableSem] = {}
    defaults: dict[str, list[str]] = {}
    for name, table in sorted(ann.rules.element_tables.items()):
        e = enums.get(table.enum)
        if e is None:
            continue  # an enum of other releases: the table is unused here
        if table.default:
            defaults.setdefault(table.enum, []).append(name)
        values = {c.name: c.value for c in e.constants}
        types = {values[c]: enc for c, enc in table.types.items() if c in values}
        out[name] = TableSem(name=name, enum=table.enum, types=dict(sorted(types.items())),
                             names={v: c for c, v in sorted(values.items(), key=lambda kv: kv[1])})
    for enum, names in defaults.items():
        if len(names) > 1:
            problems.append(f"rules.element_tables: {', '.join(names)} are all the default table of {enum}")
    return out


def _resolve_queries(spec: model.Spec, ann: Annotations, functions: dict[str, FunctionSem],
                     problems: list[str]) -> dict[str, ElementQuery]:
    handles = {h.name for h in spec.handles}
    out: dict[str, ElementQuery] = {}
    for hname, q in sorted(ann.rules.element_queries.items()):
        if hname not in handles:
            continue
        fs = functions.get(q.call)
        if fs is None:
            problems.append(f"rules.element_queries.{hname}: {q.call} is not in {spec.target} {spec.version}")
            continue
        mine = [p for p in fs.params if isinstance(p.form, forms.ByValue) and p.type.kind == "handle"
                and p.type.name == hname]
        try:
            result = fs.param(q.result)
        except KeyError:
            problems.append(f"rules.element_queries.{hname}: {q.call} has no parameter {q.result!r}")
            continue
        if len(mine) != 1:
            problems.append(f"rules.element_queries.{hname}: {q.call} must take exactly one {hname} by value")
            continue
        if not (result.direction == "out" and result.type.kind == "enum" and result.type.depth == 1):
            problems.append(f"rules.element_queries.{hname}: {q.call}.{q.result} must be an out enum pointer")
            continue
        others = [p.name for p in fs.params if p is not mine[0] and p is not result
                  and (isinstance(p.form, forms.ByValue) or not p.nullable)]
        if others:
            problems.append(f"rules.element_queries.{hname}: {q.call} is called with NULL for everything but the "
                            f"descriptor and {q.result}, so {', '.join(others)} must be nullable pointers")
            continue
        out[hname] = q
    return out


def _resolve_extents(spec: model.Spec, ann: Annotations, functions: dict[str, FunctionSem],
                     tables: dict[str, TableSem], problems: list[str]) -> dict[str, ExtentQuery]:
    """The extent queries of this release: each call must take the descriptor by value and return its element
    type, dims and strides as outputs (a release without the call or the handle has none)."""
    handles = {h.name for h in spec.handles}
    out: dict[str, ExtentQuery] = {}
    for hname, q in sorted(ann.rules.extent_queries.items()):
        where = f"rules.extent_queries.{hname}"
        if hname not in handles:
            continue
        fs = functions.get(q.call)
        if fs is None:
            problems.append(f"{where}: {q.call} is not in {spec.target} {spec.version}")
            continue
        if q.table not in tables:
            problems.append(f"{where}: table {q.table!r} is not a rules.element_tables entry")
            continue
        names = {p.name: p for p in fs.params}
        wrong = [n for n in (q.type, q.dims, q.strides) if n not in names or names[n].direction != "out"]
        if wrong or sum(isinstance(p.form, forms.ByValue) and p.type.name == hname for p in fs.params) != 1:
            problems.append(f"{where}: {q.call} must take one {hname} by value and give {q.type}, {q.dims} and "
                            f"{q.strides} as outputs")
            continue
        out[hname] = q
    return out


def _enum_of(fs: FunctionSem, p: ParamSem, queries: dict[str, ElementQuery],
             functions: dict[str, FunctionSem]) -> str | None:
    """The type enum that `p.element_of` yields: an enum parameter's, or the query result of a descriptor."""
    assert p.element_of is not None
    src = fs.param(p.element_of)
    if src.type.kind == "enum" and (isinstance(src.form, forms.ByValue) or src.direction == "out" and src.type.depth == 1):
        return src.type.name
    if isinstance(src.form, forms.ByValue) and src.type.kind == "handle" and src.type.name in queries:
        q = queries[src.type.name]
        return functions[q.call].param(q.result).type.name
    return None


def _check_vocabulary(spec: model.Spec, ann: Annotations, functions: dict[str, FunctionSem],
                      tables: dict[str, TableSem], queries: dict[str, ElementQuery],
                      problems: list[str]) -> dict[str, FunctionSem]:
    """Check the forms beyond direction/memory/shape/length and resolve default element tables."""
    out: dict[str, FunctionSem] = {}
    for fname, fs in functions.items():
        params = list(fs.params)
        for i, p in enumerate(params):
            where = f"{fname}.{p.name}"
            problems += [f"{where}: {problem}" for problem in forms.gate_problems(p, params)]
            if p.element_of is None or forms.ELEMENT_OF.gate(p, params) is not None:
                continue
            enum = _enum_of(fs, p, queries, functions)
            if enum is None:
                problems.append(f"{where}: element_of: {p.element_of} must be a data-type enum parameter (by value, "
                                f"or an out pointer) or a descriptor with a rules.element_queries entry")
                continue
            name = p.element_table
            if name is None:
                found = [t for t, ts in tables.items() if ts.enum == enum
                         and ann.rules.element_tables[t].default]
                name = found[0] if len(found) == 1 else None
                if name is None:
                    problems.append(f"{where}: no default element table of {enum}: name one with element_table:")
                    continue
            elif name not in ann.rules.element_tables:
                problems.append(f"{where}: element_table: {name} is not in rules.element_tables")
                continue
            elif name not in tables or tables[name].enum != enum:
                problems.append(f"{where}: element_table: {name} is a table of "
                                f"{ann.rules.element_tables[name].enum}, but {p.element_of} gives a {enum}")
                continue
            params[i] = replace(p, element_table=name)
        out[fname] = replace(fs, params=tuple(params))
    return out


def _resolve_records(spec: model.Spec, ann: Annotations, functions: dict[str, FunctionSem],
                     problems: list[str]) -> tuple[dict[str, RecordSem], dict[str, FunctionSem]]:
    records = {n: r for r in spec.records for n in (r.name, r.typedef) if n}
    out: dict[str, RecordSem] = {}
    for rname, note in sorted(ann.records.items()):
        rec = records.get(rname)
        if rec is None:
            if not (note.since or note.until):
                problems.append(f"annotation for record {rname}: no such record in {spec.target} "
                                f"{spec.version} (typo, or add since:/until: to scope it)")
            elif _in_range(spec.version, note):
                problems.append(f"annotation for record {rname}: not in {spec.target} {spec.version} although "
                                f"its since/until range includes it")
            continue
        fields = {f.name: f for f in rec.fields if f.name is not None and f.type is not None}
        sems: dict[str, FieldSem] = {}
        for fname, fnote in sorted(note.fields.items()):
            fl = fields.get(fname)
            if fl is None or fl.type is None:
                problems.append(f"annotation for record {rname}.{fname}: no such field (has: {', '.join(fields)})")
                continue
            t = fl.type
            if fnote.null_means is not None and not fnote.nullable:
                problems.append(f"annotation for record {rname}.{fname}: null_means needs nullable: true")
            shape = fnote.shape
            problem = forms.field_gate(shape, t)
            if problem is not None or shape is None:
                problems.append(f"annotation for record {rname}.{fname}: {problem}")
                continue
            memory = fnote.memory or forms.classify_field(shape).memory
            sems[fname] = FieldSem(name=fname, type=t, shape=shape, memory=memory, nullable=bool(fnote.nullable),
                                   null_means=fnote.null_means)
        if sems:
            for n in (rec.name, rec.typedef):
                if n:
                    out[n] = RecordSem(name=n, fields=sems)
    if not out:
        return out, functions
    return out, {n: replace(fs, params=tuple(
        replace(p, fields=True) if p.type.kind in ("struct", "union") and p.type.depth == 1 and p.type.name in out
        and isinstance(p.form, forms.Array) and p.direction == "in" else p for p in fs.params)) for n, fs in functions.items()}


def _adjacent_count(f: model.Function, i: int, rules: Rules) -> str | None:
    """The count of the array at `i`: a by-value integer named like a count, before or right after it."""
    candidates = [p for p in f.params[:i] if _is_count(p) and p.name in rules.count_names]
    if i + 1 < len(f.params):
        nxt = f.params[i + 1]
        if _is_count(nxt) and nxt.name in rules.count_names:
            return nxt.name
    return candidates[-1].name if candidates else None


def _resolve_handles(
    spec: model.Spec, ann: Annotations, functions: dict[str, FunctionSem], problems: list[str], prefix: str
) -> dict[str, HandleSem]:
    names = {f.name for f in spec.functions}
    known = {h.name for h in spec.handles}
    for hname, hnote in sorted(ann.handles.items()):
        if hname in known:
            continue
        if not (hnote.since or hnote.until):
            problems.append(f"annotation for handle {hname}: no such handle type in {spec.target} {spec.version} "
                            f"(typo, or add since:/until: to scope it)")
        elif _in_range(spec.version, hnote):
            problems.append(f"annotation for handle {hname}: not in {spec.target} {spec.version} although its "
                            f"since/until range includes it")
    out: dict[str, HandleSem] = {}
    for h in spec.handles:
        base = h.name[len(prefix):] if h.name.startswith(prefix) else h.name
        base = base[:-2] if base.endswith("_t") else base
        note = ann.handles.get(h.name)
        if note is not None:
            for fn in (*note.create, *((note.destroy,) if note.destroy else ())):
                if fn not in names and fn not in ann.functions:
                    problems.append(f"annotation for handle {h.name}: {fn} is no function of {spec.target} "
                                    f"{spec.version} (typo? a function of other releases needs a "
                                    f"functions: entry with since:/until:)")
                elif fn not in names and _in_range(spec.version, ann.functions[fn]):
                    problems.append(f"annotation for handle {h.name}: {fn} is not in {spec.target} "
                                    f"{spec.version} although its since/until range includes it")
            if note.owner and note.owner not in known:
                problems.append(f"annotation for handle {h.name}: owner {note.owner} is no handle type")
            create = tuple(c for c in note.create if c in names)
            destroy = note.destroy if note.destroy in names else None  # added in a later release: none here
            owner = note.owner
        else:
            create = tuple(
                n for n, fs in functions.items()
                if n.startswith(f"{prefix}Create") and any(
                    s.type.kind == "handle" and s.type.name == h.name and s.type.depth == 1 and s.direction == "out"
                    for s in fs.params
                )
            )
            destroy = f"{prefix}Destroy{base}" if f"{prefix}Destroy{base}" in names else None
            owner = None
            if create and destroy is None:
                problems.append(f"handle {h.name}: no {prefix}Destroy{base}; annotate its destroy function "
                                f"(or `destroy: null` with owner/why)")
        out[h.name] = HandleSem(name=h.name, tag=h.tag, create=create, destroy=destroy, owner=owner)
    return out


# --------------------------------------------------------------------------- what to add


_CHOICES = {
    "direction": "in | out | inout",
    "memory": "host | device",
    "shape": "scalar | array | buffer | string | blob | callback | opaque",
    "length": "the by-value count parameter, or length_call: {call: F, result: P}, or unsized: true",
}


def _range_of(name: str, releases: list[tuple[str, set[str]]]) -> tuple[str | None, str | None, list[str]]:
    """since/until for something present in some of `releases` (oldest first): (since or None when the
    oldest has it, until or None when the newest has it, releases inside that range lacking it)."""
    present = [v for v, names in releases if name in names]
    if not present:
        return None, None, []
    versions = [v for v, _ in releases]
    lo, hi = versions.index(present[0]), versions.index(present[-1])
    gaps = [v for v, names in releases[lo:hi + 1] if name not in names]
    return (present[0] if lo > 0 else None), (present[-1] if hi < len(releases) - 1 else None), gaps


def suggestion(open_params: tuple[OpenParam, ...], ann: Annotations, specs: list[model.Spec]) -> str:
    """The annotations to add for `open_params`, as one YAML block under `functions:` that is valid for
    every spec in `specs` (all committed releases plus a new one): a function or parameter that only
    some releases declare gets since:/until:. Values left to decide read `...`, with the choices."""
    if not open_params:
        return ""
    ordered = sorted(specs, key=lambda sp: _version_key(sp.version))
    fn_releases = [(sp.version, {f.name for f in sp.functions}) for sp in ordered]
    by_fn: dict[str, list[OpenParam]] = {}
    for op in open_params:
        if op.param not in [p.param for p in by_fn.get(op.function, [])]:
            by_fn.setdefault(op.function, []).append(op)
    path = f"specs/{ordered[-1].target}/annotations.yaml"
    lines = [f"add to {path}, under `functions:` (replace each `...`; valid for "
             f"{'releases ' if len(fn_releases) > 1 else 'release '}{', '.join(v for v, _ in fn_releases)}):"]
    notes: list[str] = []
    for fname in sorted(by_fn):
        existing = ann.functions.get(fname)
        since, until, gaps = _range_of(fname, fn_releases)
        lines.append(f"  {fname}:" + ("  # already annotated: merge into its entry" if existing else ""))
        if existing is None:
            if since:
                lines.append(f"    since: {since}")
            if until:
                lines.append(f"    until: {until}")
            if gaps:
                notes.append(f"{fname} is absent from {', '.join(gaps)} inside its since/until range; since/until "
                             f"cannot leave a gap, so the gate will report those releases")
        lines.append("    params:")
        with_fn = [(sp.version, {str(p.name) for p in sp.function(fname).params})
                   for sp in ordered if fname in {f.name for f in sp.functions}]
        for op in by_fn[fname]:
            keys = ", ".join(f"{k}: ..." for k in op.missing)
            choices = "; ".join(f"{k}: {_CHOICES.get(k, '...')}" for k in op.missing)
            psince, puntil, pgaps = _range_of(op.param, with_fn)
            scope = "".join(f", {k}: {v}" for k, v in (("since", psince), ("until", puntil)) if v)
            lines.append(f"      {op.param}: {{{keys}{scope}, why: ...}}  # {op.c}: {choices}")
            if pgaps:
                notes.append(f"{fname}.{op.param} is absent from {', '.join(pgaps)} inside its since/until range")
    lines += [f"note: {n}" for n in notes]
    return "\n".join(lines)

"""Declarative semantics: what the header cannot say, from general rules plus `annotations.yaml`.

The spec proposes a role for every pointer parameter from its C type (and doc tag). This
module resolves each parameter to final semantics: direction, host/device memory, shape,
array length links, nullability, and the create/destroy pair of every opaque handle type.
General rules (below, parameterised by the `rules:` section) cover the common cases; the
file's `functions:` section holds the exceptions. The gate lists every pointer parameter
still unclassified and every annotation naming something absent from the spec.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from . import model, validate
from .errors import CodegenError, NamingError, SpecError
from .spec_io import load_as

Shape = Literal["scalar", "array", "buffer", "string", "blob", "callback", "opaque"]


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
    direction: Literal["in", "out", "inout"] | None = None
    memory: Literal["host", "device"] | None = None
    shape: Shape | None = None
    length: str | None = None  # a by-value integer parameter holding the element count
    length_call: LengthCall | None = None
    count: str | None = None  # an output receiving how many elements were filled
    unsized: bool | None = None  # an input array whose length MIOpen derives itself (no length argument)
    nullable: bool | None = None
    none_means: str | None = None  # what passing None (NULL) does, for the docstrings; only with nullable
    since: str | None = None  # first release where the function has this parameter
    until: str | None = None  # last release where it has it
    why: str | None = None


@dataclass(frozen=True)
class FunctionNote:
    params: dict[str, ParamNote] = field(default_factory=dict)
    since: str | None = None  # first release declaring the function
    until: str | None = None  # last release declaring it
    why: str | None = None


@dataclass(frozen=True)
class Ownership:
    create: tuple[str, ...] = ()
    destroy: str | None = None
    owner: str | None = None  # destroyed together with this other handle type
    since: str | None = None  # first release declaring the handle type
    until: str | None = None  # last release declaring it
    why: str | None = None


@dataclass(frozen=True)
class Rules:
    count_names: tuple[str, ...]  # by-value integers that count an adjacent array
    nullable_buffers: tuple[str, ...]  # device buffers that may be null (workspaces)
    scratch_buffers: tuple[str, ...]  # device buffers the call reads and writes
    # direction of a non-const `void *` device buffer that has no doc tag (None: an annotation decides)
    untagged_buffers: Literal["in", "out", "inout"] | None = None


@dataclass(frozen=True)
class Annotations:
    schema_version: int
    rules: Rules
    handles: dict[str, Ownership]
    functions: dict[str, FunctionNote]


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
    shape: Shape | Literal["value"]
    source: str  # type / doc / name / rule / annotation
    length: str | None = None
    length_call: LengthCall | None = None
    count: str | None = None
    unsized: bool = False
    nullable: bool = False
    none_means: str | None = None  # what None (NULL) does, in our words (annotations.yaml)
    default: str | None = None
    hidden: bool = False  # filled in by the wrapper (a length of an input array)


@dataclass(frozen=True)
class FunctionSem:
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
    name: str
    tag: str
    create: tuple[str, ...]
    destroy: str | None
    owner: str | None


@dataclass(frozen=True)
class Semantics:
    functions: dict[str, FunctionSem]
    handles: dict[str, HandleSem]


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


def _version_key(v: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in v.split("."))
    except ValueError:
        raise CodegenError(f"annotations: since/until must be versions like 3.2.0; got {v!r}") from None


def _in_range(version: str, note: FunctionNote | Ownership | ParamNote) -> bool:
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
    for what, obj in ((f"spec {spec.target} {spec.miopen_version}", spec), ("annotations", ann)):
        try:
            validate.ensure_valid(obj)
        except validate.Violation as exc:
            raise SpecError(f"{what}: {exc.path}: {exc.message}", path=exc.path) from None
    problems: list[str] = []
    names = {f.name: f for f in spec.functions}
    for fname, note in sorted(ann.functions.items()):
        if fname not in names:
            if _in_range(spec.miopen_version, note) and (note.since or note.until):
                problems.append(f"annotation for {fname}: not in {spec.target} {spec.miopen_version} although its "
                                f"since/until range includes it")
            elif not (note.since or note.until):
                problems.append(f"annotation for {fname}: no such function in {spec.target} {spec.miopen_version} "
                                f"(typo, or add since:/until: to scope it)")
            continue
        pnames = {p.name for p in names[fname].params}
        for pname, pnote in sorted(note.params.items()):
            if pname in pnames:
                continue
            has = ", ".join(str(p.name) for p in names[fname].params)
            if not (pnote.since or pnote.until):
                problems.append(f"annotation for {fname}.{pname}: no such parameter (has: {has}; typo, or add "
                                f"since:/until: to the parameter to scope it)")
            elif _in_range(spec.miopen_version, pnote):
                problems.append(f"annotation for {fname}.{pname}: no such parameter in {spec.target} "
                                f"{spec.miopen_version} although its since/until range includes it (has: {has})")
    functions: dict[str, FunctionSem] = {}
    unclassified: list[OpenParam] = []
    for f in spec.functions:
        sem, open_params, open_notes = _resolve_function(f, ann)
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
                problems.append(f"{fs.name}.{ps.name}: length_call {lc.call} is not in {spec.target} {spec.miopen_version}")
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
    naming_problems = validate.check_names(spec, prefix, Semantics(functions=functions, handles=handles), target)
    if naming_problems:
        raise NamingError(f"{spec.target} {spec.miopen_version}: {len(naming_problems)} Python naming problem(s):\n  "
                          + "\n  ".join(naming_problems))
    if problems and strict:
        raise AnnotationGateError(
            f"annotation gate: {len(problems)} problem(s) in {spec.target} {spec.miopen_version} "
            f"(fix specs/{spec.target}/annotations.yaml):\n  " + "\n  ".join(problems),
            tuple(unclassified), ann, spec,
        )
    return Semantics(functions=functions, handles=handles)


def _resolve_function(f: model.Function, ann: Annotations) -> tuple[FunctionSem, list[str], list[OpenParam]]:
    note = ann.functions.get(f.name, FunctionNote())
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
            if sem.none_means is not None and not sem.nullable:
                problems.append(f"{f.name}.{name}: none_means is given, but the parameter is not nullable")
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
        if sem.none_means is not None and not sem.nullable:
            problems.append(f"{f.name}.{name}: none_means is given, but the parameter is not nullable")
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
    params = [replace(s, hidden=True) if s.name in hidden and s.shape == "value" else s for s in params]
    counts = {s.count for s in params if s.count}
    params = [replace(s, hidden=True) if s.name in counts else s for s in params]
    return FunctionSem(name=f.name, params=tuple(params)), problems, open_notes


def _apply(sem: ParamSem, pn: ParamNote) -> ParamSem:
    changes: dict[str, object] = {"source": "annotation"}
    for k in ("direction", "memory", "shape", "length", "length_call", "count", "unsized", "nullable", "none_means"):
        v = getattr(pn, k)
        if v is not None:
            changes[k] = v
    return replace(sem, **changes)  # type: ignore[arg-type]


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
            problems.append(f"annotation for handle {hname}: no such handle type in {spec.target} {spec.miopen_version} "
                            f"(typo, or add since:/until: to scope it)")
        elif _in_range(spec.miopen_version, hnote):
            problems.append(f"annotation for handle {hname}: not in {spec.target} {spec.miopen_version} although its "
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
                                    f"{spec.miopen_version} (typo? a function of other releases needs a "
                                    f"functions: entry with since:/until:)")
                elif fn not in names and _in_range(spec.miopen_version, ann.functions[fn]):
                    problems.append(f"annotation for handle {h.name}: {fn} is not in {spec.target} "
                                    f"{spec.miopen_version} although its since/until range includes it")
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
    ordered = sorted(specs, key=lambda sp: _version_key(sp.miopen_version))
    fn_releases = [(sp.miopen_version, {f.name for f in sp.functions}) for sp in ordered]
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
        with_fn = [(sp.miopen_version, {str(p.name) for p in sp.function(fname).params})
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

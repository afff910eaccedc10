"""Resolution: the general rules and the annotations applied to one release's spec, and the gate (every
pointer parameter classified, every annotation naming something the spec has).

The spec proposes a role for every pointer parameter from its C type (and doc tag). Each parameter is
resolved to final semantics: direction, host/device memory, shape, array length links, nullability, and the
create/destroy pair of every opaque handle type. General rules (parameterised by the `rules:` section) cover
the common cases; the file's `functions:` section holds the exceptions.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

from ..base.record import fields, replace
from ..base.errors import NamingError, SpecError
from ..spec import model, validate
from ..spec.releases import Version
from ..spec.rules import Violation
from . import annotation_forms, forms, naming
from .annotations import (Annotations, ElementQuery, ExtentQuery, FunctionNote, ParamNote,
                          Rules, in_range)
from .resolved import FieldSem, FunctionSem, HandleSem, ParamSem, RecordSem, Semantics, TableSem
from .suggest import AnnotationGateError, OpenParam

_INT_NAMES = {"int", "unsigned int", "long", "unsigned long", "long long", "unsigned long long", "short",
              "unsigned short", "size_t", "int32_t", "uint32_t", "int64_t", "uint64_t"}


def _is_count(p: model.Param) -> bool:
    return p.type.depth == 0 and p.type.kind == "int" and p.type.name in _INT_NAMES


def resolve(spec: model.Spec, ann: Annotations, *, strict: bool = True, prefix: str | None = None,
            target: Any = None) -> Semantics:
    """Apply the rules and the annotations to `spec`; raise the gate error if anything is left open.

    First the spec itself is checked (codegen/spec/validate.py: names, strings, types, defaults; a spec
    built in memory gets the same checks as a loaded one); afterwards the Python names the renderer
    will make (collisions raise NamingError naming the C names). `target` (the target facts) adds
    the exception class names to that check.
    """
    for what, obj in ((f"spec {spec.target} {spec.version}", spec), ("annotations", ann)):
        try:
            validate.ensure_valid(obj)
        except Violation as exc:
            raise SpecError(f"{what}: {exc.path}: {exc.message}", path=exc.path) from None
    problems: list[str] = []
    names = {f.name: f for f in spec.functions}
    for fname, note in sorted(ann.functions.items()):
        if fname not in names:
            if in_range(spec.version, note) and (note.since or note.until):
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
            if not in_range(spec.version, variant):
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
            elif in_range(spec.version, pnote):
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
        from ..spec.target import target_for

        prefix = target_for(spec.target).function_prefix
    handles = _resolve_handles(spec, ann, functions, problems, prefix)
    functions = {
        n: replace(fs, creates=next((h.name for h in handles.values() if n in h.create), None))
        for n, fs in functions.items()
    }
    tables = _resolve_tables(spec, ann, problems)
    queries = _resolve_calls(spec, ann.rules.element_queries, "rules.element_queries", functions, problems,
                             _element_query_problem)
    functions = _check_vocabulary(spec, ann, functions, tables, queries, problems)
    records, functions = _resolve_records(spec, ann, functions, problems)
    extents = _resolve_calls(spec, ann.rules.extent_queries, "rules.extent_queries", functions, problems,
                             partial(_extent_query_problem, tables))
    sizes = _resolve_sizes(ann, functions, problems)
    result = Semantics(functions=functions, handles=handles, records=records, tables=tables, queries=queries,
                       extents=extents, sizes=sizes)
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


def _merged_params(note: FunctionNote, version: Version) -> dict[str, ParamNote]:
    """The parameter annotations for `version`: `params`, with the variants whose range includes it on top."""
    params = dict(note.params)
    for variant in note.variants:
        if not in_range(version, variant):
            continue
        for pname, pnote in variant.params.items():
            base = params.get(pname, ParamNote())
            params[pname] = replace(base, **{f.name: getattr(pnote, f.name) for f in fields(pnote)
                                             if getattr(pnote, f.name) is not None})
    return params


def _resolve_function(f: model.Function, ann: Annotations, version: Version
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


#: what a parameter note may set (every key of annotations.yaml's parameter entries but its release range and why),
#: read off ParamNote: its placement (direction, memory, shape, length, ...) and its forms (annotations.FormNotes,
#: which ParamSem carries too), each copied by name
APPLIED: tuple[str, ...] = tuple(f.name for f in fields(ParamNote) if f.name not in ("since", "until", "why"))


def _apply(sem: ParamSem, pn: ParamNote) -> ParamSem:
    changes: dict[str, object] = {"source": "annotation"}
    for k in APPLIED:
        v = getattr(pn, k)
        if v is not None:
            changes[k] = v
    return replace(sem, **changes)


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


_Query = TypeVar("_Query", ElementQuery, ExtentQuery)


def _resolve_calls(spec: model.Spec, table: dict[str, _Query], where: str, functions: dict[str, FunctionSem],
                   problems: list[str], check: Callable[[str, _Query, FunctionSem], str | None]) -> dict[str, _Query]:
    """The entries of the rules table `where` (handle type -> a query calling `call` with that descriptor) this
    release has: a handle type it lacks is skipped, a call it lacks is a problem, and so is what `check` says of
    the call's parameters."""
    handles = {h.name for h in spec.handles}
    out: dict[str, _Query] = {}
    for hname, q in sorted(table.items()):
        if hname not in handles:
            continue
        fs = functions.get(q.call)
        problem = f"{q.call} is not in {spec.target} {spec.version}" if fs is None else check(hname, q, fs)
        if problem is None:
            out[hname] = q
        else:
            problems.append(f"{where}.{hname}: {problem}")
    return out


def _element_query_problem(hname: str, q: ElementQuery, fs: FunctionSem) -> str | None:
    """An element query's call takes the descriptor by value and writes the type enum; NULL goes everywhere else."""
    mine = [p for p in fs.params if isinstance(p.form, forms.ByValue) and p.type.kind == "handle"
            and p.type.name == hname]
    try:
        result = fs.param(q.result)
    except KeyError:
        return f"{q.call} has no parameter {q.result!r}"
    if len(mine) != 1:
        return f"{q.call} must take exactly one {hname} by value"
    if not (result.direction == "out" and result.type.kind == "enum" and result.type.depth == 1):
        return f"{q.call}.{q.result} must be an out enum pointer"
    others = [p.name for p in fs.params if p is not mine[0] and p is not result
              and (isinstance(p.form, forms.ByValue) or not p.nullable)]
    if others:
        return (f"{q.call} is called with NULL for everything but the descriptor and {q.result}, so "
                f"{', '.join(others)} must be nullable pointers")
    return None


def _extent_query_problem(tables: dict[str, TableSem], hname: str, q: ExtentQuery, fs: FunctionSem) -> str | None:
    """An extent query's call takes the descriptor by value and gives its element type, dims and strides as
    outputs; its table is an element table."""
    if q.table not in tables:
        return f"table {q.table!r} is not a rules.element_tables entry"
    names = {p.name: p for p in fs.params}
    wrong = [n for n in (q.type, q.dims, q.strides) if n not in names or names[n].direction != "out"]
    if wrong or sum(isinstance(p.form, forms.ByValue) and p.type.name == hname for p in fs.params) != 1:
        return f"{q.call} must take one {hname} by value and give {q.type}, {q.dims} and {q.strides} as outputs"
    return None


def _resolve_sizes(ann: Annotations, functions: dict[str, FunctionSem], problems: list[str]
                   ) -> dict[str, tuple[str, ...]]:
    """The buffer sizes of this release: per device buffer some function takes, the byte counts a function passes
    beside it, each a by-value integer (a buffer no function of the release takes, or a count none passes with it,
    is of other releases: dropped)."""
    out: dict[str, tuple[str, ...]] = {}
    for buffer, counts in sorted(ann.rules.buffer_sizes.items()):
        passed: dict[str, bool] = {}  # count -> whether every function passing it beside the buffer passes an integer
        for fs in functions.values():
            if not any(p.name == buffer and isinstance(p.form, forms.Buffer) for p in fs.params):
                continue
            for p in fs.params:
                if p.name in counts:
                    ok = isinstance(p.form, forms.Value) and p.type.kind == "int" and p.type.depth == 0
                    if not ok:
                        problems.append(f"rules.buffer_sizes.{buffer}: {fs.name}.{p.name} is passed beside {buffer} "
                                        f"but is no by-value integer (a byte count)")
                    passed[p.name] = passed.get(p.name, True) and ok
        kept = tuple(c for c in counts if passed.get(c))
        if kept:
            out[buffer] = kept
    return out


def _enum_of(fs: FunctionSem, p: ParamSem, queries: dict[str, ElementQuery],
             functions: dict[str, FunctionSem]) -> str | None:
    """The type enum that `p.element_of` yields: an enum parameter's, or the query result of a descriptor."""
    assert p.element_of is not None
    src = fs.param(p.element_of)
    match annotation_forms.element_source(src):
        case "descriptor" if src.type.name in queries:
            q = queries[src.type.name]
            return functions[q.call].param(q.result).type.name
        case "enum" if src.type.kind == "enum":
            return src.type.name
        case "pointer" if src.type.kind == "enum" and src.direction == "out" and src.type.depth == 1:
            return src.type.name
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
            problems += [f"{where}: {problem}" for problem in annotation_forms.gate_problems(p, params)]
            if p.element_of is None or annotation_forms.ELEMENT_OF.gate(p, params) is not None:
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
            elif in_range(spec.version, note):
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
        elif in_range(spec.version, hnote):
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
                elif fn not in names and in_range(spec.version, ann.functions[fn]):
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

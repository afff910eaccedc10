"""Semantic audit: what a library's C++ implementation does with each pointer parameter,
compared with the resolved annotations.

`python -m codegen audit SRC --spec S --annotations A` indexes the sources (`codegen.cppsrc`),
finds the definition of every C function of the spec, and traces each pointer (and opaque
handle) parameter through its body and, up to `--depth` calls deep, through the functions it is
passed to (resolved by name and argument count). Each use becomes a `Fact` (written, read as a
given type, passed as device memory, NULL accepted or rejected, read in groups of k, ...).

The facts are then compared with a normalised view of the resolved annotation (`AnnView`):
each comparison is a `Check` that agrees, disagrees, or needs vocabulary the annotations do not
have yet (a `Form`). A committed notes file explains deliberate disagreements, names the form a
finding needs, and adds findings the heuristics cannot make. Library idioms (its NULL-checking
dereference, its device-pointer cast, its throw macros, its logging calls) come from the target's
idioms file, not from this module. docs/audit.md explains the method and its limits.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from . import model
from .annotate import Annotations, FunctionSem, ParamSem, resolve
from .cppsrc import KEYWORDS, CppDef, Source, SourceFile, load_source, split_args
from .errors import CodegenError
from .spec_io import load_as

# --------------------------------------------------------------------------- the target's idioms


@dataclass(frozen=True)
class ReadIdiom:
    """A library helper that reads a host scalar: `pattern` (a regex, `{p}` = the pointer) reads it `as`."""

    pattern: str
    read_as: str  # a scalar type name, `element` (the tensor's element type) or `float-or-double`


@dataclass(frozen=True)
class Idioms:
    schema_version: int
    source_dirs: tuple[str, ...]  # where the implementation lives, relative to the source root
    skip_dirs: tuple[str, ...]  # directory names never indexed (device kernels, vendored code)
    extensions: tuple[str, ...]
    deref: tuple[str, ...]  # functions returning the pointee and throwing on NULL
    tie_deref: tuple[str, ...]  # the same for several pointers at once, assigned as a tuple
    device_casts: tuple[str, ...]  # functions turning a `void *` into a device-memory handle
    throws: tuple[str, ...]  # regexes of statements that fail the call
    throw_if: tuple[str, ...]  # macros/functions failing when their first argument (a condition) holds
    asserts: tuple[str, ...]  # macros/functions failing unless their first argument holds
    ignore_calls: tuple[str, ...]  # regexes of calls whose arguments are not uses (logging)
    ignore_if: tuple[str, ...]  # regexes of `if` conditions whose blocks are not uses (logging)
    array_views: tuple[str, ...] = ()  # `view{pointer, count}`: the pointer is an array of `count` elements
    root_namespaces: tuple[str, ...] = ()  # namespaces every definition shares (no help in telling overloads apart)
    defines: dict[str, int] = field(default_factory=dict)  # preprocessor settings picking #if branches
    reads: tuple[ReadIdiom, ...] = ()
    scalar_types: dict[str, str] = field(default_factory=dict)  # C++ type -> element name


def load_idioms(path: Path) -> Idioms:
    if not path.is_file():
        raise CodegenError(f"{path}: no idioms file (the target's audit idioms, e.g. specs/miopen/audit-idioms.yaml)")
    idioms = load_as(Idioms, path)
    if idioms.schema_version != 1:
        raise CodegenError(f"{path}: schema_version: expected 1; got {idioms.schema_version}")
    for rx in (*idioms.throws, *idioms.ignore_calls, *idioms.ignore_if, *(r.pattern for r in idioms.reads)):
        try:
            re.compile(rx.replace("{p}", "p"))
        except re.error as exc:
            raise CodegenError(f"{path}: bad regex {rx!r}: {exc}") from None
    return idioms


# --------------------------------------------------------------------------- notes


CheckKind = Literal["direction", "memory", "nullable", "scalar-type", "length", "address", "fields", "output"]
CHECK_KINDS: tuple[str, ...] = ("direction", "memory", "nullable", "scalar-type", "length", "address", "fields", "output")


@dataclass(frozen=True)
class AuditNote:
    """Our judgement on one check of one parameter (`specs/<target>/audit-notes.yaml`)."""

    check: CheckKind
    why: str | None = None  # the disagreement is explained: deliberate, harmless, or outside the binding
    needs: str | None = None  # the vocabulary form this finding needs (see FORMS)
    impl: str | None = None  # a finding the heuristics cannot make: what the implementation does
    where: str | None = None  # file:function of that finding
    since: str | None = None
    until: str | None = None


@dataclass(frozen=True)
class AuditNotes:
    schema_version: int
    notes: dict[str, dict[str, tuple[AuditNote, ...]]] = field(default_factory=dict)


def load_notes(path: Path | None) -> AuditNotes:
    if path is None or not path.exists():
        return AuditNotes(schema_version=1)
    notes = load_as(AuditNotes, path)
    if notes.schema_version != 1:
        raise CodegenError(f"{path}: schema_version: expected 1; got {notes.schema_version}")
    for fname, params in sorted(notes.notes.items()):
        for pname, items in sorted(params.items()):
            for n in items:
                if n.needs is not None and n.needs not in FORMS:
                    raise CodegenError(f"{path}: {fname}.{pname}: needs: {n.needs!r} is no known form "
                                       f"(one of {', '.join(sorted(FORMS))})")
                if (n.why is None) == (n.needs is None):
                    raise CodegenError(f"{path}: {fname}.{pname} ({n.check}): give exactly one of why: or needs:")
                if n.impl is not None and n.where is None:
                    raise CodegenError(f"{path}: {fname}.{pname} ({n.check}): a finding (impl:) needs where:")
    return notes


# --------------------------------------------------------------------------- vocabulary forms

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


@dataclass(frozen=True)
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


_SCALAR_TYPES = {"float": "scalar-float", "double": "scalar-double", "element": "scalar-element-type"}


def view(fs: FunctionSem, ps: ParamSem) -> AnnView:
    """Normalise a resolved parameter."""
    length = ps.length or (f"call:{ps.length_call.call}" if ps.length_call else None) or \
        ("unsized" if ps.unsized else None)
    shared = bool(ps.length) and any(
        o.name != ps.name and o.length == ps.length and o.direction == "in" and o.shape in ("array", "blob")
        for o in fs.params)
    scalar_type = None
    if ps.shape == "scalar" and ps.memory == "host" and ps.type.kind == "void" and ps.type.depth == 1:
        scalar_type = _SCALAR_TYPES.get(ps.scalar_type or "", "float-or-double")
    count_of = next((o.name for o in fs.params if o.count == ps.name), None)
    return AnnView(
        direction=ps.direction, memory=ps.memory, shape=ps.shape, nullable=ps.nullable, length=length,
        length_factor=ps.length_factor, shared_length=shared, scalar_type=scalar_type,
        writes_address=ps.holds == "address_of_device_pointer", fields=ps.fields,
        returned=not (ps.direction == "out" and ps.shape == "opaque") and (count_of is None or ps.also_returned),
        count_of=count_of if not ps.also_returned else None,
    )


# --------------------------------------------------------------------------- facts


@dataclass(frozen=True)
class Fact:
    """One thing the implementation does with a parameter."""

    kind: str  # see FACT_KINDS
    detail: str
    where: str  # file:function
    depth: int  # 0: the C function itself; n: n calls deep


FACT_KINDS = {
    "write": "written through the pointer",
    "write-address": "receives an address",
    "read": "read through the pointer on the host",
    "read-as": "read as a scalar of a given type",
    "device": "passed on as device memory",
    "null-accepts": "NULL tested and handled",
    "null-conditional": "NULL rejected only together with another condition",
    "null-rejects": "NULL rejected with an error",
    "null-unsafe": "dereferenced without a NULL test",
    "stride": "indexed in groups of k",
    "range": "read as a range of n elements",
    "stored": "kept in an object after the call",
    "unused": "not used by the implementation",
}
_NULL_EVENTS = ("null-accepts", "null-conditional", "null-rejects", "null-unsafe")
_HOST = ("write", "write-address", "read", "read-as", "stride", "range", "null-unsafe")

_STD_ALGOS: dict[str, dict[int, str]] = {  # argument index -> read/write
    "copy": {0: "read", 1: "read", 2: "write"},
    "copy_n": {0: "read", 2: "write"},
    "copy_backward": {0: "read", 1: "read", 2: "write"},
    "fill": {0: "write", 1: "write"},
    "fill_n": {0: "write"},
    "memcpy": {0: "write", 1: "read"},
    "memmove": {0: "write", 1: "read"},
    "memset": {0: "write"},
    "strcpy": {0: "write", 1: "read"},
    "strncpy": {0: "write", 1: "read"},
    "transform": {0: "read", 1: "read", 2: "write"},
    "iota": {0: "write", 1: "write"},
    "accumulate": {0: "read", 1: "read"},
    "all_of": {0: "read", 1: "read"},
    "any_of": {0: "read", 1: "read"},
    "equal": {0: "read", 1: "read", 2: "read"},
}
_ASSIGN = re.compile(r"\s*(?:[-+*/%|&^]|<<|>>)?=(?!=)")
_ASSIGN_ONLY = re.compile(r"\s*=(?!=)")
_ELSE = re.compile(r"\s*else\b")
_IF = re.compile(r"\bif\s*\(")
_MEMBERS = re.compile(r"(?:\s*(?:\.|->)\s*[A-Za-z_]\w*|\s*\[[^\[\]]*\])*")
_CAST = re.compile(r"(static_cast|reinterpret_cast|const_cast)\s*<\s*(?:const\s+)?([\w:]+)\s*(?:const\s*)?(\*+)\s*>\s*$")
_CSTYLE = re.compile(r"\(\s*(?:const\s+)?([A-Za-z_][\w:]*)\s*(?:const\s*)?(\*+)\s*\)\s*$")
_NOT_DECL = frozenset({"return", "else", "case", "new", "throw", "delete", "co_return", "and", "or", "not", "goto"})


@dataclass
class _Ctx:
    d: CppDef
    f: SourceFile
    lo: int
    hi: int
    depth: int
    ignored: list[tuple[int, int]]


class Analyzer:
    """Traces names through definitions; results are memoised per (definition, name, level, depth)."""

    def __init__(self, source: Source, idioms: Idioms, max_depth: int = 2, max_candidates: int = 6) -> None:
        self.source = source
        self.idioms = idioms
        self.max_depth = max_depth
        self.max_candidates = max_candidates
        self._memo: dict[tuple[int, int, str, int, int], tuple[Fact, ...]] = {}
        self._active: set[tuple[int, int, str, int]] = set()
        self._ignored: dict[tuple[int, int], list[tuple[int, int]]] = {}
        self._throws = re.compile("|".join(f"(?:{t})" for t in idioms.throws)) if idioms.throws else None
        self._ignore_calls = re.compile(
            r"(?<![\w$])(?:\w+::)*(?:" + "|".join(idioms.ignore_calls) + r")\b\s*(?:<[^;(){}]*>)?\s*(?:[A-Za-z_]\w*\s*)?[({]"
        ) if idioms.ignore_calls else None
        self._ignore_if = re.compile("|".join(f"(?:{t})" for t in idioms.ignore_if)) if idioms.ignore_if else None

    # ------------------------------------------------------------------ entry points

    def trace(self, d: CppDef, name: str, level: int = 0, depth: int = 0) -> tuple[Fact, ...]:
        key = (d.file, d.body, name, level, depth)
        if key in self._memo:
            return self._memo[key]
        active = key[:4]
        if active in self._active:  # recursion
            return ()
        self._active.add(active)
        try:
            ctx = _Ctx(d=d, f=self.source.files[d.file], lo=d.region, hi=d.end, depth=depth,
                       ignored=self._ignored_spans(d))
            facts = self._occurrences(ctx, name, level, ctx.lo)
        finally:
            self._active.discard(active)
        result = tuple(facts)
        self._memo[key] = result
        return result

    def trace_param(self, d: CppDef, index: int) -> tuple[Fact, ...]:
        p = d.params[index] if index < len(d.params) else None
        if p is None or p.name is None:
            return (Fact("unused", "unnamed in the definition", d.where, 0),)
        facts = self.trace(d, p.name)
        if not facts and not self._mentions(d, p.name):
            return (Fact("unused", "never mentioned", d.where, 0),)
        return facts

    def _mentions(self, d: CppDef, name: str) -> bool:
        ctx = _Ctx(d=d, f=self.source.files[d.file], lo=d.region, hi=d.end, depth=0, ignored=self._ignored_spans(d))
        return any(not self._is_ignored(ctx, m.start()) for m in self._find(ctx, name, ctx.lo))

    # ------------------------------------------------------------------ occurrences

    @staticmethod
    def _name_regex(name: str) -> re.Pattern[str]:
        parts = [re.escape(p) for p in name.split(".")]
        return re.compile(r"(?<![\w.$])(?<!->)(?<!::)" + r"\s*\.\s*".join(parts) + r"(?![\w$])(?!\s*::)")

    def _find(self, ctx: _Ctx, name: str, start: int) -> list[re.Match[str]]:
        return list(self._name_regex(name).finditer(ctx.f.text, start, ctx.hi))

    def _ignored_spans(self, d: CppDef) -> list[tuple[int, int]]:
        key = (d.file, d.body)
        if key in self._ignored:
            return self._ignored[key]
        f = self.source.files[d.file]
        t, pairs = f.text, f.pairs
        spans: list[tuple[int, int]] = []
        if self._ignore_calls is not None:
            for m in self._ignore_calls.finditer(t, d.region, d.end):
                close = pairs.get(m.end() - 1, -1)
                if close > m.start():
                    spans.append((m.start(), close + 1))
        if self._ignore_if is not None:
            for m in _IF.finditer(t, d.region, d.end):
                close = pairs.get(m.end() - 1, -1)
                if close < 0 or not self._ignore_if.search(t, m.end(), close):
                    continue
                _, stmt_end = self._statement_after(f, close + 1, d.end)
                spans.append((m.start(), stmt_end))
        spans.sort()
        self._ignored[key] = spans
        return spans

    @staticmethod
    def _is_ignored(ctx: _Ctx, pos: int) -> bool:
        return any(a <= pos < b for a, b in ctx.ignored)

    def _occurrences(self, ctx: _Ctx, name: str, level: int, start: int) -> list[Fact]:
        facts: list[Fact] = []
        for m in self._find(ctx, name, start):
            if self._is_ignored(ctx, m.start()):
                continue
            if self._is_declaration(ctx, m.start(), m.end()):
                continue
            found = _collapse_null(self._idiom_reads(ctx, name, m.start(), m.end())
                                   + self._expr(ctx, name, m.start(), m.end(), level))
            if any(f.kind in ("null-rejects", "null-unsafe") for f in found) and \
                    self._under_condition(ctx, m.start(), name):
                found = [replace(f, kind="null-conditional", detail=f"{f.detail}, under a condition")
                         if f.kind in ("null-rejects", "null-unsafe") else f for f in found]
            facts += found
        return facts

    def _under_condition(self, ctx: _Ctx, pos: int, name: str) -> bool:
        """Whether `pos` runs only in some cases: in one branch of an if/else (the other not mentioning `name`),
        a switch, or a conditional expression."""
        t, pairs = ctx.f.text, ctx.f.pairs
        rx = self._name_regex(name)
        p = pos
        while True:
            enc = self._enclosing(ctx, p)
            if enc is None:
                return False
            o = enc[0]
            if t[o] in "([" or (t[o] == "{" and self._brace_init(ctx, o)):
                if self._ternary_branch(ctx, o + 1, p):
                    return True
                p = o
                continue
            # p sits in the block {...} at o: the statement holding it (an if/else chain counts as one)
            i = p - 1
            while i > o:
                c = t[i]
                if c in ")]" or c == "}":
                    j = pairs.get(i, -1)
                    if o < j < i and (c != "}" or re.compile(r"\s*(?:[),;]|else\b)").match(t, i + 1)):
                        i = j - 1
                        continue
                if c in ";{}":
                    break
                i -= 1
            stmt_lo = i + 1
            stmt = t[stmt_lo:p]
            head = re.match(r"\s*(if|switch|case|default)\b", stmt)
            if head and head.group(1) == "if":
                ho = t.find("(", stmt_lo + head.end())
                hc = pairs.get(ho, p) if ho >= 0 else p
                if hc < p:
                    ts, te = self._statement_after(ctx.f, hc + 1, ctx.hi)
                    els = _ELSE.match(t, te)
                    other = ""
                    if p < te:  # in the then-branch
                        if els:
                            es, ee = self._statement_after(ctx.f, els.end(), ctx.hi)
                            other = t[es:ee]
                    else:
                        other = t[ts:te]
                    if not rx.search(other):
                        return True
            elif head:
                return True
            if self._ternary_branch(ctx, stmt_lo, p):
                return True
            if o <= ctx.d.body:
                return False
            p = o

    def _brace_init(self, ctx: _Ctx, o: int) -> bool:
        before = ctx.f.text[max(ctx.lo, o - 80):o].rstrip()
        return bool(re.search(r"(?:[\w>]|[=(,]|\breturn)$", before)) and not re.search(r"\b(?:else|do|try)$", before)

    @staticmethod
    def _ternary_branch(ctx: _Ctx, lo: int, p: int) -> bool:
        """A `?` at the top level of t[lo:p]: p is in a branch of a conditional expression."""
        t, pairs = ctx.f.text, ctx.f.pairs
        i = lo
        while i < p:
            c = t[i]
            if c in "([{":
                j = pairs.get(i, -1)
                if i < j < p:
                    i = j + 1
                    continue
                return False
            if c == "?":
                return True
            i += 1
        return False

    def _is_declaration(self, ctx: _Ctx, s: int, e: int) -> bool:
        """A new variable of the same name (a lambda parameter, a shadowing local)."""
        t = ctx.f.text
        before = t[max(ctx.lo, s - 80):s]
        after = t[e:e + 40]
        return bool(re.search(r"(?:\bauto|\bconst\s+auto|[\w>]\s*[&*]+|\bint|\bsize_t|\bvoid\s*\*)\s*$", before)) and \
            bool(re.match(r"\s*[,)=;]", after)) and not re.search(r"[=(,]\s*\*+\s*$", before) and \
            bool(re.search(r"[\w>]\s*[&*]*\s*$", before))

    def _fact(self, ctx: _Ctx, kind: str, detail: str) -> Fact:
        return Fact(kind, detail, ctx.d.where, ctx.depth)

    # ------------------------------------------------------------------ one expression

    def _idiom_reads(self, ctx: _Ctx, name: str, s: int, e: int) -> list[Fact]:
        out: list[Fact] = []
        t = ctx.f.text
        window_lo, window_hi = max(ctx.lo, s - 200), min(ctx.hi, e + 200)
        name_rx = r"\s*\.\s*".join(re.escape(p) for p in name.split("."))
        for idiom in self.idioms.reads:
            rx = re.compile(idiom.pattern.replace("{p}", name_rx))
            for m in rx.finditer(t, window_lo, window_hi):
                if m.start() <= s and e <= m.end():
                    out.append(self._fact(ctx, "read-as", idiom.read_as))
                    break
        return out

    def _expr(self, ctx: _Ctx, name: str, xs: int, xe: int, level: int) -> list[Fact]:
        """Classify the expression t[xs:xe], which denotes the traced pointer after `level` dereferences."""
        t = ctx.f.text
        pre = t[max(ctx.lo, xs - 200):xs]
        post = t[xe:min(ctx.hi, xe + 200)]
        facts: list[Fact] = []
        if level == 0:
            test = self._null_test(ctx, xs, xe, pre, post)
            if test is not None:
                return [test]
            rng = re.match(r"\s*,\s*" + re.escape(t[xs:xe].strip()) + r"\s*\+\s*([^,;(){}]+|[\w:]+\([^()]*\))\s*[,)}]",
                           post)
            if rng:
                facts.append(self._fact(ctx, "range", " ".join(rng.group(1).split())))
                facts.append(self._fact(ctx, "null-unsafe", "read as a range"))
        enc = self._enclosing(ctx, xs)
        # p + k: an offset pointer, the same level; classified as a whole
        plus = re.match(r"\s*\+\s*[\w.:]+(?:\s*\([^()]*\))?(?=\s*[,)\]};])", post)
        if plus and level == 0:
            return facts + self._expr(ctx, name, xs, xe + plus.end(), level)
        # wrappers: deref(x), DataCast(x), casts, parentheses
        if enc is not None and t[enc[0]] == "(" and t[enc[0] + 1:xs].strip() == "" and t[xe:enc[1]].strip() == "":
            open_, close = enc
            callee, cstart, ctemplate = self._callee(ctx, open_)
            if callee in self.idioms.deref:
                if level == 0:
                    facts.append(self._fact(ctx, "null-rejects", f"{callee}()"))
                return facts + self._expr(ctx, name, cstart, close + 1, level + 1)
            if callee in self.idioms.device_casts:
                facts.append(self._fact(ctx, "device", f"{callee}()"))
                return facts + self._expr(ctx, name, cstart, close + 1, level)
            if callee in ("static_cast", "reinterpret_cast", "const_cast") and ctemplate:
                cm = _CAST.search(t[cstart:open_])
                star = re.search(r"\*\s*\(?\s*$", t[max(ctx.lo, cstart - 8):cstart])
                if cm and star and level == 0:
                    ctype = self.idioms.scalar_types.get(cm.group(2), cm.group(2))
                    assigned = re.compile(r"\s*\)?\s*(?:[-+*/%|&^]|<<|>>)?=(?!=)").match(t, close + 1)
                    kind = "write" if assigned else "read-as"
                    facts.append(self._fact(ctx, kind, ctype if kind == "read-as" else f"*({cm.group(2)} *) ="))
                    return facts + [self._fact(ctx, "null-unsafe", "typed dereference")]
                if cm and re.compile(r"\s*\[").match(t, close + 1) and level == 0:
                    ctype = self.idioms.scalar_types.get(cm.group(2), cm.group(2))
                    return facts + [self._fact(ctx, "read-as", ctype), self._fact(ctx, "null-unsafe", "typed index")]
                return facts + self._expr(ctx, name, cstart, close + 1, level)
            if callee is None and not re.search(r"[\w)\]>]\s*$", t[max(ctx.lo, open_ - 4):open_]):
                return facts + self._expr(ctx, name, open_, close + 1, level)
        # C-style typed dereference: *(const float *)p
        cs = _CSTYLE.search(pre)
        if cs and level == 0 and re.search(r"\*\s*\(?\s*$", pre[:cs.start()]):
            ctype = self.idioms.scalar_types.get(cs.group(1), cs.group(1))
            return facts + [self._fact(ctx, "read-as", ctype), self._fact(ctx, "null-unsafe", "typed dereference")]
        # unary *
        star = re.search(r"(?:^|[^\w)\]\s]|\breturn|\belse)\s*\*\s*$", pre)
        if star is None:
            hdr = re.search(r"\)\s*\*\s*$", pre)
            if hdr:
                close_at = xs - len(pre) + hdr.start()
                open_at = ctx.f.pairs.get(close_at, -1)
                if 0 <= open_at < close_at and self._callee(ctx, open_at)[0] in ("if", "while", "for"):
                    star = hdr
        if star and level >= 0:
            if level == 0:
                facts.append(self._fact(ctx, "null-unsafe", "*p"))
            sstart = t.rfind("*", max(ctx.lo, xs - len(pre) + star.start()), xs)
            return facts + self._expr(ctx, name, sstart, xe, level + 1)
        # subscript
        sub = re.match(r"\s*\[", post)
        if sub:
            ob = xe + sub.end() - 1
            cb = ctx.f.pairs.get(ob, -1)
            if cb > ob:
                index = t[ob + 1:cb]
                k = re.match(r"\s*(\d+)\s*\*\s*\(?[A-Za-z_][\w.]*\)?\s*(?:\+.*)?$|\s*\(?[A-Za-z_][\w.]*\)?\s*\*\s*(\d+)"
                             r"\s*(?:\+.*)?$", index, re.S)
                if k and int(k.group(1) or k.group(2)) > 1:
                    facts.append(self._fact(ctx, "stride", str(int(k.group(1) or k.group(2)))))
                if level == 0:
                    facts.append(self._fact(ctx, "null-unsafe", "p[i]"))
                return facts + self._expr(ctx, name, xs, cb + 1, level + 1)
        # member access
        mem = re.match(r"\s*(->|\.)\s*[A-Za-z_]\w*", post)
        if mem and not re.match(r"\s*(?:->|\.)\s*[A-Za-z_]\w*\s*\(", post):
            deref_level = level + (1 if mem.group(1) == "->" else 0)
            if mem.group(1) == "->" and level == 0:
                facts.append(self._fact(ctx, "null-unsafe", "p->"))
            chain = _MEMBERS.match(post)
            rest = post[chain.end():] if chain else post
            if deref_level >= 1:
                if _ASSIGN.match(rest):
                    return facts + [self._fact(ctx, "write", "member assigned")]
                return facts + [self._fact(ctx, "read", "member")]
            return facts
        if mem and level >= 1:
            return facts + [self._fact(ctx, "read", "method call")]
        # assignment through the pointer
        if level >= 1 and _ASSIGN.match(post):
            rhs = post[_ASSIGN.match(post).end():]  # type: ignore[union-attr]
            if re.match(r"\s*&(?!&)", rhs):
                return facts + [self._fact(ctx, "write-address", "address of " + " ".join(rhs.split(";")[0].split())[1:60])]
            return facts + [self._fact(ctx, "write", "assigned")]
        # an alias: `auto& x = <expr>;`, `T* p = <expr>;`
        decl = re.search(r"(?:^|[;{}])\s*(?:const\s+)?(?:[\w:]+(?:\s*<[^;{}]*>)?)\s*(?:const\s*)?([&*]*)\s*([A-Za-z_]\w*)\s*=\s*$",
                         pre)
        if decl and re.match(r"\s*;", post):
            alias, ref = decl.group(2), decl.group(1)
            if "&" in ref or level == 0:
                return facts + self._occurrences(ctx, alias, level, xe)
            return facts + [self._fact(ctx, "read", "copied")]
        # stored in an object
        if level == 0 and re.search(r"(?:\.|->)\s*[A-Za-z_]\w*\s*=\s*$", pre) and re.match(r"\s*;", post):
            return facts + [self._fact(ctx, "stored", "assigned to a member")]
        if enc is not None:
            return facts + self._call_arg(ctx, name, xs, xe, level, enc)
        if level >= 1:
            return facts + [self._fact(ctx, "read", "value used")]
        return facts

    # ------------------------------------------------------------------ NULL tests

    def _null_test(self, ctx: _Ctx, xs: int, xe: int, pre: str, post: str) -> Fact | None:
        t = ctx.f.text
        m1 = re.match(r"\s*(==|!=)\s*(?:nullptr|NULL|0)\b(?!\.)", post)
        m2 = re.search(r"(?:\bnullptr|\bNULL)\s*(==|!=)\s*$", pre)
        bang = re.search(r"(?<![!=<>])!\s*$", pre) and not re.match(r"\s*(?:\(|\[|\.|->|=)", post)
        enc = self._enclosing(ctx, xs)
        truthy = False
        if not (m1 or m2 or bang) and not re.match(r"\s*(?:\(|\[|\.|->|\+|-|=[^=]|\*)", post):
            if re.match(r"\s*(?:&&|\|\||\?)", post) or re.search(r"(?:&&|\|\|)\s*$", pre):
                truthy = True
            elif enc is not None and t[enc[0]] == "(" and t[enc[0] + 1:xs].strip() == "" and t[xe:enc[1]].strip() == "":
                callee, _, _ = self._callee(ctx, enc[0])
                truthy = callee in ("if", "while")
        if not (m1 or m2 or bang or truthy):
            return None
        is_null = bool((m1 and m1.group(1) == "==") or (m2 and m2.group(1) == "==") or bang)
        test = t[xs:xe] + (" == NULL" if is_null else " != NULL")
        # the condition this test is part of
        pos = xs
        while True:
            enc = self._enclosing(ctx, pos)
            if enc is None or t[enc[0]] != "(":
                break
            callee, cstart, _ = self._callee(ctx, enc[0])
            open_, close = enc
            if callee in ("if", "while"):
                cond = t[open_ + 1:close]
                then_s, then_e = self._statement_after(ctx.f, close + 1, ctx.hi)
                then = t[then_s:then_e]
                else_m = _ELSE.match(t, then_e)
                other = ""
                if else_m:
                    es, ee = self._statement_after(ctx.f, else_m.end(), ctx.hi)
                    other = t[es:ee]
                if is_null and self._fails(then):
                    kind = "null-conditional" if "&&" in cond else "null-rejects"
                elif not is_null and self._fails(other):
                    kind = "null-conditional" if "||" in cond else "null-rejects"
                else:
                    kind = "null-accepts"
                return self._fact(ctx, kind, f"if({' '.join(test.split())})" + (" fails" if kind != "null-accepts"
                                                                                   else ""))
            if callee in self.idioms.throw_if and self._arg_index(ctx, enc, pos)[0] == 0:
                kind = ("null-conditional" if "&&" in t[open_ + 1:close].split(",")[0] else "null-rejects") \
                    if is_null else "null-accepts"
                return self._fact(ctx, kind, f"{callee}({' '.join(test.split())})")
            if callee in self.idioms.asserts and self._arg_index(ctx, enc, pos)[0] == 0:
                kind = "null-rejects" if not is_null else "null-accepts"
                return self._fact(ctx, kind, f"{callee}({' '.join(test.split())})")
            if callee is not None and callee not in KEYWORDS:
                break  # a test passed as an argument
            pos = open_
        return self._fact(ctx, "null-accepts", " ".join(test.split()))

    def _fails(self, text: str) -> bool:
        return bool(text) and self._throws is not None and bool(self._throws.search(text))

    @staticmethod
    def _statement_after(f: SourceFile, pos: int, hi: int) -> tuple[int, int]:
        t = f.text
        while pos < hi and t[pos].isspace():
            pos += 1
        if pos < hi and t[pos] == "{":
            end = f.pairs.get(pos, hi - 1)
            return pos, end + 1
        i = pos
        while i < hi:
            c = t[i]
            if c in "([{":
                j = f.pairs.get(i, -1)
                if j < i:
                    return pos, hi
                i = j + 1
                continue
            if c == ";":
                return pos, i + 1
            if c == "}":
                return pos, i
            i += 1
        return pos, hi

    # ------------------------------------------------------------------ brackets and calls

    def _enclosing(self, ctx: _Ctx, pos: int) -> tuple[int, int] | None:
        """The innermost bracket pair of the definition containing `pos`."""
        t, pairs = ctx.f.text, ctx.f.pairs
        i = pos - 1
        while i >= ctx.lo:
            c = t[i]
            if c in ")]}":
                j = pairs.get(i, -1)
                if 0 <= j < i:
                    i = j - 1
                    continue
            elif c in "([{":
                j = pairs.get(i, -1)
                if j > pos:
                    return i, j
            i -= 1
        return None

    def _callee(self, ctx: _Ctx, open_: int) -> tuple[str | None, int, str]:
        """(name, start of the call expression, template arguments) of the bracket at `open_`."""
        t = ctx.f.text
        lo = max(ctx.lo, open_ - 240)
        seg = t[lo:open_]
        m = re.search(r"([A-Za-z_~]\w*)\s*(<[^;(){}]*>)?\s*$", seg)
        if not m:
            return None, open_, ""
        name = m.group(1)
        start = lo + m.start()
        before = seg[:m.start()]
        if name in KEYWORDS and name not in ("static_cast", "reinterpret_cast", "const_cast"):
            return name, start, ""
        # qualified names: ns::f, obj.f, obj->f
        q = re.search(r"((?:[A-Za-z_]\w*\s*::\s*)+)$", before)
        if q:
            start = lo + q.start()
            before = seg[:q.start()]
        decl = re.search(r"([A-Za-z_]\w*)\s*(<[^;(){}]*>)?\s*[&*]*\s*$", before)
        if t[open_] == "{" or decl:
            if decl and decl.group(1) not in _NOT_DECL and decl.group(1) not in KEYWORDS and \
                    not re.search(r"(?:\.|->)\s*$", before[:decl.start()]):
                return decl.group(1), start, ""  # `Type var(args)`: Type's constructor
            if decl and decl.group(1) == "new":
                return name, start, m.group(2) or ""
            if t[open_] == "{" and re.search(r"[=(,{]\s*$|return\s*$", before) and not m.group(2):
                return name, start, ""  # `Type{args}`
            if t[open_] == "{":
                return None, open_, ""
        return name, start, m.group(2) or ""

    def _arg_index(self, ctx: _Ctx, enc: tuple[int, int], pos: int) -> tuple[int, int, tuple[int, int]]:
        """(index of the argument holding `pos`, number of arguments, its span)."""
        open_, close = enc
        inner = ctx.f.text[open_ + 1:close]
        spans = split_args(inner)
        for i, (a, b) in enumerate(spans):
            if open_ + 1 + a <= pos < open_ + 1 + b + 1:
                return i, len(spans), (open_ + 1 + a, open_ + 1 + b)
        return -1, len(spans), (pos, pos)

    def _call_arg(self, ctx: _Ctx, name: str, xs: int, xe: int, level: int, enc: tuple[int, int]) -> list[Fact]:
        t = ctx.f.text
        open_, close = enc
        callee, cstart, _ = self._callee(ctx, open_)
        if callee is None or callee in KEYWORDS:
            return [self._fact(ctx, "read", "value used")] if level >= 1 else []
        index, nargs, (a, b) = self._arg_index(ctx, enc, xs)
        whole = t[a:b].strip() == t[xs:xe].strip()
        if callee in _STD_ALGOS and index in _STD_ALGOS[callee]:
            how = _STD_ALGOS[callee][index]
            if level == 0:
                used = [self._fact(ctx, "write" if how == "write" else "read", f"std::{callee} "
                                   + ("destination" if how == "write" else "source"))]
                if callee in ("copy_n", "fill_n") and index == 0 and nargs > 1:
                    na, nb = split_args(t[open_ + 1:close])[1]
                    used.append(self._fact(ctx, "range", " ".join(t[open_ + 1 + na:open_ + 1 + nb].split())))
                return used + [self._fact(ctx, "null-unsafe", f"std::{callee}")]
            return []
        if not whole or index < 0:
            return [self._fact(ctx, "read", "value used")] if level >= 1 else []
        if t[open_] == "(" and _ASSIGN_ONLY.match(t, close + 1) and callee in self.idioms.tie_deref:
            return [self._fact(ctx, "null-rejects", f"{callee}()"), self._fact(ctx, "write", f"{callee}() =")] \
                if level == 0 else []
        if callee in self.idioms.tie_deref:
            return [self._fact(ctx, "null-rejects", f"{callee}()"), self._fact(ctx, "read", f"{callee}()")] \
                if level == 0 else []
        if callee == "tie" and level >= 1:  # std::tie(*a, *b) = ...
            assigned = t[open_] == "(" and _ASSIGN_ONLY.match(t, close + 1)
            return [self._fact(ctx, "write" if assigned else "read", "std::tie")]
        if callee in self.idioms.array_views and index == 0 and nargs >= 2 and level == 0:
            na, nb = split_args(t[open_ + 1:close])[1]
            return [self._fact(ctx, "range", " ".join(t[open_ + 1 + na:open_ + 1 + nb].split())),
                    self._fact(ctx, "read", f"{callee} (a view of the array)")]
        if callee in (*self.idioms.deref, *self.idioms.device_casts, *self.idioms.tie_deref, *self.idioms.throw_if,
                      *self.idioms.asserts):
            return []
        if ctx.depth >= self.max_depth:
            return []
        candidates = self._receiver_filter(ctx, cstart, self.source.lookup(callee, nargs))
        if not candidates or len(candidates) > self.max_candidates:
            return [self._fact(ctx, "read", "value used")] if level >= 1 else []
        argmap = self._argmap(ctx, enc)
        facts: list[Fact] = []
        for cand in candidates:
            if index >= len(cand.params):
                continue
            p = cand.params[index]
            if p.name is None:
                facts.append(Fact("unused", f"ignored by {cand.qualname}", cand.where, ctx.depth + 1))
                continue
            if level >= 1 and not p.mutable_ref:
                facts.append(self._fact(ctx, "read", f"passed by value to {callee}"))
                continue
            sub = self.trace(cand, p.name, level, ctx.depth + 1)
            names = {q.name: argmap[i] for i, q in enumerate(cand.params) if q.name and i < len(argmap)}
            facts += [_rename(f, names) for f in sub]
        return facts

    def _receiver_filter(self, ctx: _Ctx, cstart: int, candidates: list[CppDef]) -> list[CppDef]:
        """Of several candidates: for `ns::f(...)` those in namespace/directory ns; for `obj.f(...)` those whose
        class names the receiver's type."""
        t = ctx.f.text
        if len(candidates) < 2:
            return candidates
        qual = re.compile(r"((?:[A-Za-z_]\w*\s*::\s*)+)").match(t, cstart)
        if qual:
            parts = [q.strip() for q in qual.group(1).split("::") if q.strip()]
            parts = [q for q in parts if q not in self.idioms.root_namespaces and q != "std"]
            if parts:  # the innermost namespace or class: in the definition's qualified name or its directories
                inner = parts[-1]
                kept = [d for d in candidates
                        if inner in d.qualname.split("::")[:-1] or inner in d.path.split("/")[:-1]]
                if kept:
                    return kept
        classes = {d.qualname.split("::")[-2] for d in candidates if "::" in d.qualname}
        if not classes:
            return candidates
        head = t[:cstart].rstrip()
        if not head.endswith((".", "->")) or len(head) <= ctx.lo:
            return candidates
        head = head[:-2] if head.endswith("->") else head[:-1]
        head = head.rstrip()
        recv = ""
        if head.endswith(")"):
            open_ = ctx.f.pairs.get(len(head) - 1, -1)
            if 0 <= open_ < len(head):
                recv = t[max(ctx.lo, open_ - 60):len(head)]
        else:
            m = re.search(r"[A-Za-z_]\w*$", head[-200:])
            recv = m.group(0) if m else ""
        types: list[str] = []
        for ident in re.findall(r"[A-Za-z_]\w*", recv):
            types += [p.type for p in ctx.d.params if p.name == ident]
            decl = re.search(r"([A-Za-z_][\w:]*)\s*(?:<[^;{}]*>)?\s*[&*]*\s*\b" + ident + r"\s*[=;({]",
                             t[ctx.lo:cstart])
            if decl and decl.group(1) not in ("auto", "return"):
                types.append(decl.group(1))
            elif decl:
                rhs = re.search(r"\b" + ident + r"\s*=\s*([^;]*)", t[ctx.lo:cstart])
                if rhs:
                    types.append(rhs.group(1))  # e.g. dynamic_cast<Cls&>(...)
                    for inner in re.findall(r"[A-Za-z_]\w*", rhs.group(1)):
                        types += [p.type for p in ctx.d.params if p.name == inner]
        low = " ".join(types).lower()
        kept = [d for d in candidates if "::" in d.qualname and d.qualname.split("::")[-2].lower() in low]
        return kept or candidates

    def _argmap(self, ctx: _Ctx, enc: tuple[int, int]) -> list[str]:
        open_, close = enc
        inner = ctx.f.text[open_ + 1:close]
        return [" ".join(inner[a:b].split()) for a, b in split_args(inner)]


def _collapse_null(facts: list[Fact]) -> list[Fact]:
    """Keep one NULL event: the first unconditional one (what NULL meets first), else the first conditional one."""
    first = _first(tuple(facts), ("null-accepts", "null-rejects", "null-unsafe")) or \
        _first(tuple(facts), ("null-conditional",))
    return [f for f in facts if f.kind not in _NULL_EVENTS or f is first]


def _rename(f: Fact, names: dict[str, str]) -> Fact:
    if f.kind != "range" or not names:
        return f

    def sub(m: re.Match[str]) -> str:
        v = names.get(m.group(0))
        return v if v and re.fullmatch(r"[\w.:]+", v) else (f"({v})" if v else m.group(0))

    return replace(f, detail=re.sub(r"\b[A-Za-z_]\w*\b", sub, f.detail))


# --------------------------------------------------------------------------- checks

Status = Literal["agree", "disagree", "explained", "needs-vocabulary", "unverified"]
_RANK = {"disagree": 4, "needs-vocabulary": 3, "explained": 2, "unverified": 1, "agree": 0}


@dataclass(frozen=True)
class Check:
    kind: str
    status: Status
    impl: str  # what the implementation does (our words, with file:function)
    annotation: str  # what the annotation says now
    form: str | None = None  # needs-vocabulary: the missing form
    why: str | None = None  # explained: the note's reason
    review: bool = False  # added by a note (the heuristics did not find it)


@dataclass(frozen=True)
class ParamReport:
    name: str
    c: str
    handle: bool  # an opaque handle passed by value (only NULL is audited)
    view: AnnView
    facts: tuple[Fact, ...]
    checks: tuple[Check, ...]

    @property
    def status(self) -> Status:
        if not self.checks:
            return "unverified"
        return max((c.status for c in self.checks), key=lambda s: _RANK[s])


@dataclass(frozen=True)
class FunctionReport:
    name: str
    where: tuple[str, ...]
    params: tuple[ParamReport, ...]
    problem: str | None = None  # no implementation found, or its signature differs


@dataclass(frozen=True)
class RecordField:
    record: str
    field: str
    facts: tuple[Fact, ...]


@dataclass(frozen=True)
class AuditReport:
    target: str
    version: str
    source_label: str
    spec_name: str
    depth: int
    functions: tuple[FunctionReport, ...]
    records: tuple[RecordField, ...]
    stale_notes: tuple[str, ...]

    def params(self) -> list[tuple[FunctionReport, ParamReport]]:
        return [(f, p) for f in self.functions for p in f.params]

    def counts(self) -> dict[str, int]:
        checks = [c for _, p in self.params() for c in p.checks]
        ptr = [p for _, p in self.params() if not p.handle]
        out: dict[str, int] = {
            "functions": len(self.functions),
            "functions_found": sum(1 for f in self.functions if f.where),
            "pointer_params": len(ptr),
            "handle_params": sum(1 for _, p in self.params() if p.handle),
            "checks": len(checks),
        }
        for s in ("agree", "disagree", "explained", "needs-vocabulary", "unverified"):
            out[f"checks_{s}"] = sum(1 for c in checks if c.status == s)
            out[f"pointer_params_{s}"] = sum(1 for p in ptr if p.status == s)
            out[f"handle_params_{s}"] = sum(1 for _, p in self.params() if p.handle and p.status == s)
        return out


def _where(facts: tuple[Fact, ...] | list[Fact], kinds: tuple[str, ...]) -> str:
    seen: list[str] = []
    for f in facts:
        if f.kind in kinds and f.where not in seen:
            seen.append(f.where)
    return ", ".join(seen[:2]) + (f" (+{len(seen) - 2})" if len(seen) > 2 else "")


def _first(facts: tuple[Fact, ...], kinds: tuple[str, ...]) -> Fact | None:
    return next((f for f in facts if f.kind in kinds), None)


def _norm_expr(text: str) -> str:
    """A length expression without its integer casts: `static_cast<size_t>(n)`, `size_t(n)` -> `n`."""
    text = re.sub(r"\bstatic_cast\s*<[^<>]*>\s*\(([^()]*)\)", r"\1", text)
    text = re.sub(r"\b(?:std::)?(?:size_t|int|unsigned|u?int(?:8|16|32|64)_t)\s*\(([^()]*)\)", r"\1", text)
    text = re.sub(r"^\((.*)\)$", r"\1", text.strip())
    return "".join(text.split())


def compare(fs: FunctionSem, ps: ParamSem, facts: tuple[Fact, ...], names: dict[str, str],
            record_fields: list[RecordField]) -> list[Check]:
    """Checks of one parameter: the implementation's facts against the normalised annotation."""
    v = view(fs, ps)
    handle = ps.shape == "value"
    checks: list[Check] = []
    kinds = {f.kind for f in facts}
    unused = bool(kinds) and kinds <= {"unused"}
    host = bool(kinds & set(_HOST))
    device = "device" in kinds
    written = [f for f in facts if f.kind in ("write", "write-address")]

    def impl(kinds_: tuple[str, ...], text: str) -> str:
        w = _where(facts, kinds_)
        return f"{text} ({w})" if w else text

    # NULL: what the caller may pass (and outputs annotated nullable: a wrapper may pass NULL for them)
    provided = handle or ps.direction in ("in", "inout") or ps.shape == "buffer" or ps.shape == "callback" \
        or ps.nullable
    if provided:
        ev = _first(facts, ("null-accepts", "null-rejects", "null-unsafe")) or _first(facts, ("null-conditional",))
        if unused:
            checks.append(Check("nullable", "agree", impl(("unused",), "not used, so NULL is harmless"),
                                "nullable" if v.nullable else "not nullable"))
        elif ev is None:
            checks.append(Check("nullable", "unverified", "no NULL test or dereference found",
                                "nullable" if v.nullable else "not nullable"))
        else:
            accepts = ev.kind == "null-accepts" or ev.kind == "null-conditional" and v.nullable
            what = {"null-accepts": "NULL handled", "null-conditional": "NULL rejected only in some cases",
                    "null-rejects": "NULL rejected", "null-unsafe": "dereferenced without a NULL test"}[ev.kind]
            text = f"{what}: {ev.detail} ({ev.where})"
            ann = "nullable" if v.nullable else "not nullable"
            if ev.kind == "null-conditional" and not v.nullable:
                checks.append(Check("nullable", "unverified", text, ann))
            elif accepts == v.nullable:
                checks.append(Check("nullable", "agree", text, ann))
            elif accepts and v.shape == "scalar" and v.scalar_type is not None:
                checks.append(Check("nullable", _missing("nullable-scalar"), text, ann, form="nullable-scalar"))
            elif accepts and v.shape == "array" and v.shared_length:
                checks.append(Check("nullable", _missing("nullable-shared-length"), text, ann,
                                    form="nullable-shared-length"))
            else:
                checks.append(Check("nullable", "disagree", text, ann))
    if handle:
        return checks
    # direction (host memory only: device buffers are written by kernels the tool cannot read)
    if ps.memory == "host" and ps.shape not in ("callback", "opaque") or ps.shape == "opaque" and ps.direction != "in":
        if written and ps.direction == "in":
            checks.append(Check("direction", "disagree", impl(("write", "write-address"), "written"), "in"))
        elif written:
            checks.append(Check("direction", "agree", impl(("write", "write-address"), "written"), ps.direction))
        elif ps.direction in ("out", "inout"):
            if unused:
                checks.append(Check("direction", "disagree", impl(("unused",), "never written: not used"),
                                    ps.direction))
            else:
                checks.append(Check("direction", "unverified", "no write found", ps.direction))
        elif host:
            checks.append(Check("direction", "agree", impl(_HOST, "read, not written"), "in"))
    # memory
    if ps.shape not in ("callback", "opaque"):
        if device and host:
            checks.append(Check("memory", "unverified", impl(("device",) + _HOST, "both device and host uses"),
                                v.memory))
        elif device:
            checks.append(Check("memory", "agree" if v.memory == "device" else "disagree",
                                impl(("device",), "device memory"), v.memory))
        elif host:
            checks.append(Check("memory", "agree" if v.memory == "host" else "disagree",
                                impl(_HOST, "host memory"), v.memory))
    # scalar type of host `void *` scalars
    if v.scalar_type is not None:
        types = sorted({f.detail for f in facts if f.kind == "read-as"})
        where = _where(facts, ("read-as",))
        if unused:
            checks.append(Check("scalar-type", "agree", impl(("unused",), "not read"), v.scalar_type))
        elif types:
            got = set(types)
            if "element" in got or got - {"float", "double", "float-or-double"}:
                found = "scalar-element-type"
                text = "read in the tensor's element type"
            elif got <= {"float"}:
                found = "scalar-float"
                text = "read as float whatever the tensor type"
            elif got <= {"double"}:
                found = "scalar-double"
                text = "read as double whatever the tensor type"
            else:
                found = "float-or-double"
                text = "read as float, or double for double tensors"
            text += f" [{', '.join(types)}] ({where})"
            expected = "float-or-double" if found == "float-or-double" else found
            if expected == v.scalar_type:
                checks.append(Check("scalar-type", "agree", text, v.scalar_type))
            elif expected in EXPRESSIBLE["scalar_type"]:
                checks.append(Check("scalar-type", "disagree", text, v.scalar_type,
                                    form=found if found != "float-or-double" else None))
            else:
                checks.append(Check("scalar-type", "needs-vocabulary", text, v.scalar_type, form=found))
        else:
            checks.append(Check("scalar-type", "unverified", "no typed read found", v.scalar_type))
    # array lengths
    if ps.shape in ("array", "blob") and ps.direction == "in":
        strides = sorted({int(f.detail) for f in facts if f.kind == "stride"})
        ranges = sorted({names.get(_norm_expr(f.detail), _norm_expr(f.detail)) for f in facts if f.kind == "range"})
        ann = (f"length {v.length}" + (f" × {v.length_factor}" if v.length_factor != 1 else "")) if v.length \
            else "no length"
        multiples = {(int(m.group(1) or m.group(4)), m.group(2) or m.group(3))
                     for r in ranges for m in [re.fullmatch(r"(\d+)\*(\w+)|(\w+)\*(\d+)", r)] if m}
        if strides:
            k = strides[-1]
            text = f"indexed in groups of {k} ({_where(facts, ('stride',))})"
            if k == v.length_factor:
                checks.append(Check("length", "agree", text, ann))
            elif k == 1 or expressible("length-multiple"):
                checks.append(Check("length", "disagree", text, ann, form="length-multiple" if k != 1 else None))
            else:
                checks.append(Check("length", "needs-vocabulary", text, ann, form="length-multiple"))
        elif ranges:
            text = f"read as a range of {', '.join(ranges)} ({_where(facts, ('range',))})"
            if v.length in ranges and v.length_factor == 1 or (v.length_factor, v.length) in multiples:
                checks.append(Check("length", "agree", text, ann))
            elif multiples:
                checks.append(Check("length", _missing("length-multiple"), text, ann, form="length-multiple"))
            elif any(r in names.values() for r in ranges):
                checks.append(Check("length", "disagree", text, ann))
            else:
                checks.append(Check("length", "unverified", text, ann))
    # addresses written into out pointers
    if "write-address" in kinds:
        text = impl(("write-address",), "receives the address of " + next(
            f.detail.removeprefix("address of ") for f in facts if f.kind == "write-address"))
        if v.writes_address:
            checks.append(Check("address", "agree", text, "returns the pointer held there"))
        else:
            checks.append(Check("address", _missing("out-address"), text, f"{v.direction} {v.shape}",
                                form="out-address"))
    # pointer fields of records
    if ps.type.kind in ("struct", "union") and ps.type.depth >= 1:
        mine = [r for r in record_fields if r.record == ps.type.name and r.facts]
        if mine:
            text = "; ".join(f"{r.field}: {_summary(r.facts)}" for r in mine)
            if v.fields:
                checks.append(Check("fields", "agree", text, "fields understood"))
            else:
                checks.append(Check("fields", _missing("record-pointer-fields"), text, "record passed through as is",
                                    form="record-pointer-fields"))
    # outputs the binding does not return (an output count is data or not: only a note can tell)
    if not v.returned and v.count_of is None:
        checks.append(Check("output", _missing("dropped-output"), impl(("write", "write-address"), "an output")
                            if written else "an output", "out opaque: the caller's pointer, nothing returned",
                            form="dropped-output"))
    return checks


def _summary(facts: tuple[Fact, ...]) -> str:
    order = ("device", "null-accepts", "null-rejects", "null-unsafe", "read", "write", "stored")
    words = {"device": "device memory", "null-accepts": "NULL handled", "null-rejects": "NULL rejected",
             "null-unsafe": "dereferenced", "read": "read through", "write": "written", "stored": "kept"}
    kinds = [k for k in order if any(f.kind == k for f in facts)]
    return ", ".join(words[k] for k in kinds) + f" ({_where(facts, tuple(kinds))})"


# --------------------------------------------------------------------------- notes applied


def _annotation_text(v: AnnView, check: str) -> str:
    """What the annotation says, for a finding added by a note."""
    if check == "nullable":
        return "nullable" if v.nullable else "not nullable"
    if check == "length":
        return (f"length {v.length}" + (f" × {v.length_factor}" if v.length_factor != 1 else "")) if v.length \
            else "no length"
    if check == "scalar-type":
        return v.scalar_type or "—"
    if check == "output":
        if v.count_of:
            return f"count of {v.count_of}: only cuts the returned list"
        return "returned" if v.returned else "not returned"
    if check == "address":
        return "returns the pointer held there" if v.writes_address else f"{v.direction} {v.shape}"
    if check == "fields":
        return "fields understood" if v.fields else "record passed through as is"
    return v.brief()


def _in_range(version: str, since: str | None, until: str | None) -> bool:
    def key(v: str) -> tuple[int, ...]:
        return tuple(int(x) for x in re.findall(r"\d+", v))

    return not (since and key(version) < key(since)) and not (until and key(version) > key(until))


def apply_notes(functions: list[FunctionReport], notes: AuditNotes, version: str) -> tuple[list[FunctionReport], list[str]]:
    stale: list[str] = []
    by_name = {f.name: f for f in functions}
    out = {f.name: f for f in functions}
    for fname, params in sorted(notes.notes.items()):
        for pname, items in sorted(params.items()):
            active = [n for n in items if _in_range(version, n.since, n.until)]
            if not active:
                continue
            fr = by_name.get(fname)
            if fr is None:
                stale.append(f"{fname}: no such function in this release (scope the note with since:/until:)")
                continue
            pr = next((p for p in out[fname].params if p.name == pname), None)
            if pr is None:
                stale.append(f"{fname}.{pname}: no such parameter")
                continue
            checks = list(pr.checks)
            for n in active:
                i = next((k for k, c in enumerate(checks) if c.kind == n.check and not c.review), None)
                if n.needs:  # a finding of a form: stated by the annotation, or missing from it (or the vocabulary)
                    status: Status = "agree" if expresses(pr.view, n.needs) else _missing(n.needs)
                    if n.impl is None:
                        if i is not None and checks[i].status in ("disagree", "needs-vocabulary", "unverified"):
                            checks[i] = replace(checks[i], status=status, form=n.needs)
                        else:
                            what = "agrees" if i is not None else "has no such finding"
                            stale.append(f"{fname}.{pname} ({n.check}): the note matches nothing (the check {what}); "
                                         f"remove it or scope it with since:/until:")
                        continue
                    ann = checks[i].annotation if i is not None else _annotation_text(pr.view, n.check)
                    if status == "agree":
                        ann = _annotation_text(pr.view, n.check)
                    review = Check(n.check, status, f"{n.impl} ({n.where})", ann, form=n.needs, review=i is None)
                    if i is None:
                        checks.append(review)
                    elif checks[i].status in ("needs-vocabulary", "unverified", "disagree", "agree"):
                        checks[i] = review
                    continue
                if i is not None and checks[i].status in ("disagree", "needs-vocabulary", "unverified") \
                        and n.impl is None:
                    c = checks[i]
                    if c.status != "needs-vocabulary":
                        checks[i] = replace(c, status="explained", why=n.why)
                    else:
                        stale.append(f"{fname}.{pname} ({n.check}): why: given for a finding that needs "
                                     f"vocabulary ({c.form}); use needs:")
                elif n.impl is not None and (i is None or checks[i].status in ("needs-vocabulary", "unverified")):
                    ann = checks[i].annotation if i is not None else _annotation_text(pr.view, n.check)
                    review = Check(n.check, "explained", f"{n.impl} ({n.where})", ann, why=n.why, review=i is None)
                    if i is not None:
                        checks[i] = review
                    else:
                        checks.append(review)
                elif n.impl is not None and i is not None:
                    stale.append(f"{fname}.{pname} ({n.check}): the implementation contradicts the note "
                                 f"(the check {checks[i].status}s: {checks[i].impl}); scope the note with since:/until:")
                else:
                    what = "agrees" if i is not None else "has no such finding"
                    stale.append(f"{fname}.{pname} ({n.check}): the note matches nothing (the check {what}); "
                                 f"remove it or scope it with since:/until:")
            out[fname] = replace(out[fname], params=tuple(
                replace(p, checks=tuple(checks)) if p.name == pname else p for p in out[fname].params))
    return [out[f.name] for f in functions], stale


# --------------------------------------------------------------------------- the audit


def audit(source_dir: Path, spec: model.Spec, ann: Annotations, idioms: Idioms, notes: AuditNotes,
          *, depth: int = 3, source_label: str | None = None, spec_name: str = "", prefix: str | None = None,
          target_name: str | None = None) -> AuditReport:
    source = load_source(source_dir, idioms.source_dirs, idioms.skip_dirs, idioms.extensions, idioms.defines)
    sem = resolve(spec, ann, prefix=prefix)
    an = Analyzer(source, idioms, max_depth=depth)
    records = _record_fields(spec, source, an)
    functions: list[FunctionReport] = []
    for f in spec.functions:
        fs = sem.functions[f.name]
        defs = [d for d in source.defs.get(f.name, ()) if len(d.params) == len(f.params) and not d.variadic]
        problem = None
        if not defs:
            others = source.defs.get(f.name, [])
            problem = ("no definition found" if not others else
                       f"definition has {len(others[0].params)} parameters, the header {len(f.params)}")
        params: list[ParamReport] = []
        for i, ps in enumerate(fs.params):
            is_handle = ps.shape == "value" and ps.type.kind == "handle" and ps.type.depth == 0
            if ps.shape == "value" and not is_handle:
                continue
            facts: list[Fact] = []
            names: dict[str, str] = {}
            for d in defs:
                facts += an.trace_param(d, i)
                names.update({q.name: str(fs.params[k].name) for k, q in enumerate(d.params) if q.name})
            facts = [_rename(x, names) for x in facts]
            ordered = tuple(facts)
            checks = compare(fs, ps, ordered, {v: v for v in names.values()}, records) if defs else []
            shown = _dedup(ordered)
            if is_handle:  # only NULL matters for an opaque handle
                shown = tuple(x for x in shown if x.kind in (*_NULL_EVENTS, "unused"))
            params.append(ParamReport(name=ps.name, c=ps.type.spelling(), handle=is_handle, view=view(fs, ps),
                                      facts=shown, checks=tuple(checks)))
        functions.append(FunctionReport(name=f.name, where=tuple(d.where for d in defs), params=tuple(params),
                                        problem=problem))
    functions, stale = apply_notes(functions, notes, spec.miopen_version)
    return AuditReport(target=target_name or spec.target, version=spec.miopen_version,
                       source_label=source_label or source_dir.name, spec_name=spec_name, depth=depth,
                       functions=tuple(functions), records=tuple(records), stale_notes=tuple(stale))


def _dedup(facts: tuple[Fact, ...]) -> tuple[Fact, ...]:
    seen: set[Fact] = set()
    out: list[Fact] = []
    for f in facts:
        if f not in seen:
            seen.add(f)
            out.append(f)
    return tuple(out)


def _record_fields(spec: model.Spec, source: Source, an: Analyzer) -> list[RecordField]:
    """Pointer fields of the records the API takes by pointer, traced in every definition taking the record."""
    used = {p.type.name for f in spec.functions for p in f.params
            if p.type.kind in ("struct", "union") and p.type.depth >= 1}
    out: list[RecordField] = []
    for rec in spec.records:
        rname = rec.typedef or rec.name
        if rname not in used or rname is None:
            continue
        pointer_fields = [fl for fl in rec.fields if fl.type is not None and fl.name is not None
                          and (fl.type.depth >= 1 or fl.type.kind == "handle")]
        if not pointer_fields:
            continue
        takers: list[tuple[CppDef, str]] = []
        for defs in source.defs.values():
            for d in defs:
                for p in d.params:
                    base = re.sub(r"\b(?:const|struct)\b|&", "", p.type).strip()
                    if p.name and base in (rname, rec.tag):
                        takers.append((d, p.name))
        takers.sort(key=lambda x: (x[0].path, x[0].body, x[1]))
        for fl in pointer_fields:
            facts: list[Fact] = []
            for d, pname in takers:
                facts += an.trace(d, f"{pname}.{fl.name}", 0, 1)
            out.append(RecordField(record=rname, field=str(fl.name), facts=_dedup(tuple(facts))))
    return out


# --------------------------------------------------------------------------- output


def _fact_dict(f: Fact) -> dict[str, Any]:
    return {"kind": f.kind, "detail": f.detail, "where": f.where, "depth": f.depth}


def to_json(r: AuditReport) -> str:
    doc = {
        "target": r.target, "version": r.version, "source": r.source_label, "spec": r.spec_name, "depth": r.depth,
        "summary": r.counts(),
        "forms": FORMS,
        "functions": [{
            "name": f.name, "where": list(f.where), "problem": f.problem,
            "params": [{
                "name": p.name, "c": p.c, "handle": p.handle, "status": p.status,
                "annotation": {k: getattr(p.view, k) for k in p.view.__dataclass_fields__},
                "facts": [_fact_dict(x) for x in p.facts],
                "checks": [{k: getattr(c, k) for k in c.__dataclass_fields__} for c in p.checks],
            } for p in f.params],
        } for f in r.functions],
        "records": [{"record": x.record, "field": x.field, "facts": [_fact_dict(y) for y in x.facts]}
                    for x in r.records],
        "stale_notes": list(r.stale_notes),
    }
    return json.dumps(doc, indent=1, sort_keys=False, ensure_ascii=False) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(r: AuditReport) -> str:
    c = r.counts()
    lines = [
        f"# Semantics audit: {r.target} {r.version}",
        "",
        "<!-- Written by `python -m codegen audit`; do not edit. Method: docs/audit.md. -->",
        "",
        f"Implementation: {r.source_label}. Spec: {r.spec_name or r.version}. Calls followed {r.depth} deep.",
        "Each pointer parameter (and each opaque handle, for NULL only) is traced through the C function's",
        "definition and the functions it is passed to; every check compares what the code does with the",
        "resolved annotation. Explanations and findings the heuristics cannot make come from the notes file.",
        "",
        "## Summary",
        "",
        "| | count |",
        "|---|---|",
        f"| functions in the spec | {c['functions']} |",
        f"| functions whose definition was found | {c['functions_found']} |",
        f"| pointer parameters examined | {c['pointer_params']} |",
        f"| opaque handle parameters examined (NULL only) | {c['handle_params']} |",
        f"| checks | {c['checks']} |",
        f"| agree | {c['checks_agree']} |",
        f"| disagree, unexplained | {c['checks_disagree']} |",
        f"| disagree, explained (notes) | {c['checks_explained']} |",
        f"| need vocabulary | {c['checks_needs-vocabulary']} |",
        f"| unverified (no evidence either way) | {c['checks_unverified']} |",
        "",
        "Pointer parameters by their worst check: "
        f"agree {c['pointer_params_agree']}, disagree {c['pointer_params_disagree']}, "
        f"explained {c['pointer_params_explained']}, need vocabulary {c['pointer_params_needs-vocabulary']}, "
        f"unverified {c['pointer_params_unverified']}.",
        "",
    ]
    rows = [(f, p, ch) for f, p in r.params() for ch in p.checks]
    lines += ["## Needs vocabulary", ""]
    needs = [x for x in rows if x[2].status == "needs-vocabulary"]
    if not needs:
        lines += ["(none)", ""]
    for form in sorted({x[2].form or "" for x in needs}):
        group = [x for x in needs if (x[2].form or "") == form]
        lines += [f"### needs vocabulary: {form} ({len(group)})", "", FORMS.get(form, form) + ".", "",
                  "| function | parameter | implementation | annotation now |", "|---|---|---|---|"]
        lines += [f"| {f.name} | {p.name} | {_cell(ch.impl)}{' (review)' if ch.review else ''} | {_cell(ch.annotation)} |"
                  for f, p, ch in group]
        lines.append("")
    lines += ["## Disagreements (unexplained)", ""]
    dis = [x for x in rows if x[2].status == "disagree"]
    if dis:
        lines += ["| function | parameter | check | implementation | annotation now |", "|---|---|---|---|---|"]
        lines += [f"| {f.name} | {p.name} | {ch.kind} | {_cell(ch.impl)} | {_cell(ch.annotation)} |"
                  for f, p, ch in dis]
    else:
        lines.append("(none)")
    lines += ["", "## Disagreements explained", ""]
    exp = [x for x in rows if x[2].status == "explained"]
    if exp:
        lines += ["| function | parameter | check | implementation | annotation | why |", "|---|---|---|---|---|---|"]
        lines += [f"| {f.name} | {p.name} | {ch.kind} | {_cell(ch.impl)} | {_cell(ch.annotation)} | "
                  f"{_cell(ch.why or '')} |" for f, p, ch in exp]
    else:
        lines.append("(none)")
    lines += ["", "## Pointer fields of records", ""]
    if r.records:
        lines += ["| record | field | implementation |", "|---|---|---|"]
        lines += [f"| {x.record} | {x.field} | {_cell(_summary(x.facts)) if x.facts else 'no use found'} |"
                  for x in r.records]
    else:
        lines.append("(none)")
    missing = [f for f in r.functions if f.problem]
    lines += ["", "## Functions without a usable definition", ""]
    lines += [f"- {f.name}: {f.problem}" for f in missing] or ["(none)"]
    lines += ["", "## Stale notes", ""]
    lines += [f"- {s}" for s in r.stale_notes] or ["(none)"]
    lines += ["", "## Per function", "",
              "One line per parameter: C type; the annotation; the implementation's facts "
              "(`kind detail @ file:function`, deepest call level in brackets); the verdict per check.", ""]
    for f in r.functions:
        if not f.params:
            continue
        lines.append(f"### {f.name}")
        lines.append("")
        if f.where:
            lines.append(f"Defined in {', '.join(f.where)}.")
            lines.append("")
        for p in f.params:
            facts = "; ".join(_fact_text(x) for x in _brief_facts(p.facts)) or "no use found"
            verdict = ", ".join(f"{ch.kind} {ch.status}" + (f" ({ch.form})" if ch.form else "") for ch in p.checks) \
                or "not compared"
            ann = "handle" + (", nullable" if p.view.nullable else "") if p.handle else p.view.brief()
            lines.append(f"- `{p.name}` ({p.c}): {ann}. Implementation: {facts}. Verdict: {verdict}.")
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def _brief_facts(facts: tuple[Fact, ...]) -> list[Fact]:
    """At most 6 facts, one per (kind, detail), shallowest first."""
    seen: set[tuple[str, str]] = set()
    out: list[Fact] = []
    for f in sorted(facts, key=lambda x: x.depth):
        k = (f.kind, f.detail)
        if k not in seen:
            seen.add(k)
            out.append(f)
    return out[:6]


def _fact_text(f: Fact) -> str:
    return f"{f.kind} {f.detail} @ {f.where}" + (f" [{f.depth}]" if f.depth else "")


# --------------------------------------------------------------------------- command line


def run(args: Any) -> int:
    import sys

    from .annotate import load_annotations
    from .spec_io import load
    from .target import REPO_ROOT, load_target

    if args.depth < 0:
        raise CodegenError(f"--depth {args.depth}: must be 0 or more")
    spec = load(args.spec)
    ann_path: Path = args.annotations or REPO_ROOT / "specs" / spec.target / "annotations.yaml"
    target = load_target(REPO_ROOT / "specs" / spec.target / "target.yaml")
    idioms = load_idioms(args.idioms or ann_path.parent / "audit-idioms.yaml")
    notes = load_notes(args.notes or ann_path.parent / "audit-notes.yaml")
    report = audit(args.source, spec, load_annotations(ann_path), idioms, notes, depth=args.depth,
                   source_label=args.source_label, spec_name=args.spec.name, prefix=target.function_prefix,
                   target_name=target.display_name)
    text = to_json(report) if args.format == "json" else to_markdown(report)
    if args.output:
        from .files import into, write_file

        write_file(into(args.output, f"semantics-audit.{args.format}"), text)
    else:
        sys.stdout.write(text)
    c = report.counts()
    print(f"miogen audit: {report.target} {report.version}: {c['functions_found']}/{c['functions']} functions, "
          f"{c['pointer_params']} pointer and {c['handle_params']} handle parameters, {c['checks']} checks: "
          f"{c['checks_agree']} agree, {c['checks_disagree']} disagree, {c['checks_explained']} explained, "
          f"{c['checks_needs-vocabulary']} need vocabulary, {c['checks_unverified']} unverified", file=sys.stderr)
    for s in report.stale_notes:
        print(f"miogen audit: stale note: {s}", file=sys.stderr)
    return 1 if args.check and c["checks_disagree"] else 0

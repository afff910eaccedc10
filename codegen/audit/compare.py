"""Facts vs annotations: each comparison a `Check` (agree, disagree, needs vocabulary, ...), gathered
into per-parameter, per-function and whole-audit reports."""

from __future__ import annotations

import re
from typing import Literal

from ..base.record import field, record
from ..semantics.resolved import FunctionSem, ParamSem
from ..spec.releases import Version
from .analyser import Fact, _HOST, first_of
from .vocabulary import AnnView, EXPRESSIBLE, _missing, expressible, traits, view


Status = Literal["agree", "disagree", "explained", "needs-vocabulary", "unverified"]
_RANK = {"disagree": 4, "needs-vocabulary": 3, "explained": 2, "unverified": 1, "agree": 0}


@record
class Check:
    kind: str
    status: Status
    impl: str  # what the implementation does (our words, with file:function)
    annotation: str  # what the annotation says now
    form: str | None = None  # needs-vocabulary: the missing form
    why: str | None = None  # explained: the note's reason
    review: bool = False  # added by a note (the heuristics did not find it)


@record
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


@record
class FunctionReport:
    name: str
    where: tuple[str, ...]
    params: tuple[ParamReport, ...]
    problem: str | None = None  # no implementation found, or its signature differs


@record
class RecordField:
    record: str
    field: str
    facts: tuple[Fact, ...]


@record
class AuditReport:
    target: str
    version: Version
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
    tr = traits(ps.form)
    handle = tr.by_value
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
    provided = handle or ps.direction in ("in", "inout") or tr.provided or ps.nullable
    if provided:
        ev = first_of(facts, ("null-accepts", "null-rejects", "null-unsafe")) or first_of(facts, ("null-conditional",))
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
    if ps.memory == "host" and not tr.address or tr.passed_through and ps.direction != "in":
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
    if not tr.address:
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
    if tr.sized and ps.direction == "in":
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

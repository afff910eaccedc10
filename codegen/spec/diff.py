"""API diff between two specs, and the breaking-change gate.

A change is breaking when code written against OLD can stop compiling, linking or behaving the
same against NEW: anything removed, renumbered, retyped (beyond constness), reordered or renamed,
a changed struct layout, a stable item moving into the beta API, a default argument removed.
Additions, constness-only changes and beta -> stable promotions are compatible.
"""

from __future__ import annotations

import json
from pathlib import Path
from collections.abc import Mapping
from typing import Any

from ..base.record import asdict, record
from ..base.errors import CodegenError
from .model import CType, Enum, Function, Record, Spec
from .records import ReleaseRecord
from .releases import Version, by_version
from .target import target_for


@record
class Change:
    kind: str  # e.g. function-removed, constant-renumbered
    item: str  # the C name (function, enum, constant, struct, handle)
    detail: str
    breaking: bool


@record
class Diff:
    old: Version
    new: Version
    changes: tuple[Change, ...]
    library: str  # the target's display name (e.g. MIOpen), for headings

    @property
    def breaking(self) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.breaking)


def _text(t: CType) -> str:
    return t.spelling()


def _same_but_const(a: CType, b: CType) -> bool:
    return (a.kind, a.name, a.depth, a.array) == (b.kind, b.name, b.depth, b.array)


def _beta(flag: bool, undeclared: bool = False) -> str:
    return (" (beta)" if flag else "") + (" (exported, not declared by the header)" if undeclared else "")


def _added_removed(kind: str, o: dict[str, Any], n: dict[str, Any], out: list[Change]) -> None:
    """`<kind>-added` (compatible) and `<kind>-removed` (breaking) changes between two name maps."""
    for name in sorted(n.keys() - o.keys()):
        out.append(Change(f"{kind}-added", name, f"{name}{_beta(n[name].beta, getattr(n[name], 'undeclared', False))}",
                          False))
    for name in sorted(o.keys() - n.keys()):
        out.append(Change(f"{kind}-removed", name, f"{name}{_beta(o[name].beta)} was removed", True))


def _functions(old: Spec, new: Spec, out: list[Change]) -> None:
    o = {f.name: f for f in old.functions}
    n = {f.name: f for f in new.functions}
    _added_removed("function", o, n, out)
    for name in sorted(o.keys() & n.keys()):
        _function(o[name], n[name], out)


def _function(a: Function, b: Function, out: list[Change]) -> None:
    name = a.name
    if a.beta and not b.beta:
        out.append(Change("beta-to-stable", name, f"{name} left the beta API", False))
    elif b.beta and not a.beta:
        out.append(Change("stable-to-beta", name, f"{name} moved into the beta API", True))
    if a.returns != b.returns:
        out.append(Change("return-retyped", name, f"returns {_text(b.returns)} instead of "
                          f"{_text(a.returns)}", not _same_but_const(a.returns, b.returns)))
    if a.deprecated != b.deprecated and b.deprecated:
        out.append(Change("deprecated", name, f"{name} is now deprecated", False))
    an = [p.name for p in a.params]
    bn = [p.name for p in b.params]
    if an == bn:
        for pa, pb in zip(a.params, b.params, strict=True):
            _param(name, pa.name or "", pa.type, pb.type, pa.default, pb.default, out)
        return
    if sorted(map(str, an)) == sorted(map(str, bn)):
        out.append(Change("params-reordered", name, f"parameters reordered: ({', '.join(map(str, an))}) -> "
                          f"({', '.join(map(str, bn))})", True))
        return
    if len(an) == len(bn):
        for pa, pb in zip(a.params, b.params, strict=True):
            if pa.name != pb.name:
                kind = "param-renamed" if _same_but_const(pa.type, pb.type) else "param-replaced"
                out.append(Change(kind, name, f"parameter {pa.name} ({_text(pa.type)}) is now {pb.name} "
                                  f"({_text(pb.type)})", True))
            else:
                _param(name, pa.name or "", pa.type, pb.type, pa.default, pb.default, out)
        return
    added = [p for p in b.params if p.name not in set(an)]
    removed = [p for p in a.params if p.name not in set(bn)]
    for p in added:
        breaking = p.default is None
        out.append(Change("param-added", name, f"new parameter {p.name} ({_text(p.type)})"
                          + ("" if breaking else f" = {p.default}"), breaking))
    for p in removed:
        out.append(Change("param-removed", name, f"parameter {p.name} ({_text(p.type)}) was removed", True))
    common_a = [x for x in an if x in set(bn)]
    common_b = [x for x in bn if x in set(an)]
    if common_a != common_b:
        out.append(Change("params-reordered", name, "the remaining parameters changed order", True))
    pa_by = {p.name: p for p in a.params}
    for pb in b.params:
        if pb.name in pa_by:
            pa = pa_by[pb.name]
            _param(name, pa.name or "", pa.type, pb.type, pa.default, pb.default, out)


def _param(fn: str, pname: str, ta: CType, tb: CType, da: str | None, db: str | None, out: list[Change]) -> None:
    if ta != tb:
        const_only = _same_but_const(ta, tb)
        out.append(Change("param-constness" if const_only else "param-retyped", fn,
                          f"parameter {pname}: {_text(ta)} -> {_text(tb)}", not const_only))
    if da != db:
        if db is None:
            out.append(Change("default-removed", fn, f"parameter {pname} lost its default {da}", True))
        elif da is None:
            out.append(Change("default-added", fn, f"parameter {pname} now defaults to {db}", False))
        else:
            out.append(Change("default-changed", fn, f"parameter {pname} default {da} -> {db}", True))


def _enums(old: Spec, new: Spec, out: list[Change]) -> None:
    o = {e.name: e for e in old.enums}
    n = {e.name: e for e in new.enums}
    for name in sorted(n.keys() - o.keys()):
        out.append(Change("enum-added", name, f"{name}{_beta(n[name].beta)} ({len(n[name].constants)} constants)",
                          False))
    for name in sorted(o.keys() - n.keys()):
        out.append(Change("enum-removed", name, f"{name}{_beta(o[name].beta)} was removed", True))
    for name in sorted(o.keys() & n.keys()):
        _enum(o[name], n[name], out)


def _enum(a: Enum, b: Enum, out: list[Change]) -> None:
    if a.beta and not b.beta:
        out.append(Change("beta-to-stable", a.name, f"enum {a.name} left the beta API", False))
    elif b.beta and not a.beta:
        out.append(Change("stable-to-beta", a.name, f"enum {a.name} moved into the beta API", True))
    if a.underlying != b.underlying:
        out.append(Change("enum-retyped", a.name, f"underlying type {a.underlying} -> {b.underlying}", True))
    ca = {c.name: c for c in a.constants}
    cb = {c.name: c for c in b.constants}
    for cname in [c.name for c in b.constants if c.name not in ca]:
        c = cb[cname]
        out.append(Change("constant-added", f"{b.name}.{cname}", f"{cname} = {c.value}{_beta(c.beta)}", False))
    for cname in [c.name for c in a.constants if c.name not in cb]:
        c = ca[cname]
        out.append(Change("constant-removed", f"{a.name}.{cname}", f"{cname} (= {c.value}){_beta(c.beta)} was removed",
                          True))
    for cname in [c.name for c in a.constants if c.name in cb]:
        x, y = ca[cname], cb[cname]
        if x.value != y.value:
            out.append(Change("constant-renumbered", f"{a.name}.{cname}",
                              f"RENUMBERED: {cname} was {x.value}, is now {y.value}", True))
        if x.beta and not y.beta:
            out.append(Change("beta-to-stable", f"{a.name}.{cname}", f"{cname} left the beta API", False))
        elif y.beta and not x.beta:
            out.append(Change("stable-to-beta", f"{a.name}.{cname}", f"{cname} moved into the beta API", True))


def _records(old: Spec, new: Spec, out: list[Change]) -> None:
    o = {r.name: r for r in old.records}
    n = {r.name: r for r in new.records}
    for name in sorted(k for k in n.keys() - o.keys() if k):
        out.append(Change("struct-added", name, f"{name} ({n[name].size} bytes)", False))
    for name in sorted(k for k in o.keys() - n.keys() if k):
        out.append(Change("struct-removed", name, f"{name} was removed", True))
    for name in sorted(k for k in o.keys() & n.keys() if k):
        _record(o[name], n[name], out)


def _layout(r: Record, prefix: str = "") -> dict[str, tuple[int, str]]:
    fields: dict[str, tuple[int, str]] = {}
    for f in r.fields:
        if f.record is not None:
            for k, (off, t) in _layout(f.record).items():
                fields[prefix + k] = (f.offset + off, t)
        elif f.name is not None and f.type is not None:
            fields[prefix + f.name] = (f.offset, _text(f.type))
    return fields


def _record(a: Record, b: Record, out: list[Change]) -> None:
    if (a.size, a.align) != (b.size, b.align):
        out.append(Change("struct-resized", a.name or "", f"size/align {a.size}/{a.align} -> {b.size}/{b.align}", True))
    fa, fb = _layout(a), _layout(b)
    for name in sorted(fa.keys() | fb.keys()):
        if name not in fb:
            out.append(Change("field-removed", f"{a.name}.{name}", f"field {name} was removed", True))
        elif name not in fa:
            out.append(Change("field-added", f"{a.name}.{name}", f"new field {name} at offset {fb[name][0]}", True))
        elif fa[name] != fb[name]:
            out.append(Change("field-moved", f"{a.name}.{name}", f"field {name}: offset/type {fa[name]} -> {fb[name]}",
                              True))


def _handles(old: Spec, new: Spec, out: list[Change]) -> None:
    _added_removed("handle", {h.name: h for h in old.handles}, {h.name: h for h in new.handles}, out)


def diff(old: Spec, new: Spec) -> Diff:
    if old.schema_version != new.schema_version:  # pragma: no cover - loading already refuses
        raise CodegenError(f"schema versions differ: {old.schema_version} vs {new.schema_version}")
    changes: list[Change] = []
    _functions(old, new, changes)
    _enums(old, new, changes)
    _records(old, new, changes)
    _handles(old, new, changes)
    return Diff(old.version, new.version, tuple(changes), target_for(old.target).display_name)


# --------------------------------------------------------------------------- output

_SECTIONS = (
    ("Breaking: renumbered enum constants", lambda c: c.kind == "constant-renumbered"),
    ("Breaking: other", lambda c: c.breaking and c.kind != "constant-renumbered"),
    ("Functions added", lambda c: c.kind == "function-added"),
    ("Enums, constants, structs and handles added", lambda c: c.kind in (
        "enum-added", "constant-added", "struct-added", "handle-added")),
    ("Other compatible changes", lambda c: not c.breaking and c.kind not in (
        "function-added", "enum-added", "constant-added", "struct-added", "handle-added")),
)


def to_markdown(d: Diff, heading: str = "##") -> str:
    lines = [f"{heading} {d.library} {d.old} → {d.new}", ""]
    if not d.changes:
        lines += ["No API changes.", ""]
        return "\n".join(lines)
    nb = len(d.breaking)
    lines += [f"{len(d.changes)} changes, {nb} breaking.", ""]
    for title, pick in _SECTIONS:
        picked = [c for c in d.changes if pick(c)]
        if not picked:
            continue
        lines += [f"{heading}# {title} ({len(picked)})", ""]
        lines += [f"- `{c.item}`: {c.detail}" if c.kind != "function-added" else f"- `{c.detail}`" for c in picked]
        lines.append("")
    return "\n".join(lines)


def to_json(d: Diff) -> str:
    return json.dumps({"old": str(d.old), "new": str(d.new), "breaking": len(d.breaking),
                       "changes": [asdict(c) for c in d.changes]}, indent=2) + "\n"


def coverage(specs: list[Spec]) -> str:
    """Markdown table: functions per group per release."""
    groups = sorted({f.group or "(none)" for s in specs for f in s.functions}, key=str.lower)
    head = "| group | " + " | ".join(str(s.version) for s in specs) + " |"
    lines = [head, "|---|" + "---|" * len(specs)]
    for g in groups:
        counts = [sum(1 for f in s.functions if (f.group or "(none)") == g) for s in specs]
        lines.append(f"| {g} | " + " | ".join(str(c) if c else "–" for c in counts) + " |")
    lines.append("| **total** | " + " | ".join(f"**{len(s.functions)}**" for s in specs) + " |")
    return "\n".join(lines)


def releases_table(specs: list[Spec], records: Mapping[Version, ReleaseRecord]) -> str:
    """One row per release: where it shipped, its functions (outside the beta API), and its record's proofs."""
    rows = ["| release | shipped in | functions (stable) | real header | ABI check of that header | real library |",
            "|---|---|---|---|---|---|"]
    for s in specs:
        r = records.get(s.version, ReleaseRecord())
        cells = [str(s.version), s.release or r.shipped_in, f"{len(s.functions)} ({sum(not f.beta for f in s.functions)})",
                 r.header, r.abi, r.library]
        rows.append("| " + " | ".join(c.replace("|", "\\|") or "—" for c in cells) + " |")
    return "\n".join(rows)


def changes_document(spec_paths: list[Path]) -> str:
    """docs/api-changes.md: the releases and what each is proven against, coverage, one section per consecutive
    pair of committed releases."""
    from .records import load_records
    from .spec_io import load

    specs = [load(p) for p in by_version(spec_paths)]
    records = {v: r for d in dict.fromkeys(p.parent for p in spec_paths) for v, r in load_records(d).items()}
    parts = [
        "<!-- Generated by `make docs` from specs/miopen/*.yaml; do not edit. -->",
        "# MIOpen C API changes between releases",
        "",
        "Derived from the committed specs (parsed with the beta API; beta items are marked). "
        "A change is **breaking** when code written against the older release can stop compiling, linking "
        "or behaving the same: removals, renumbered constants, retyped/reordered/renamed parameters, changed "
        "struct layouts, stable items moving into the beta API.",
        "",
        "## Releases",
        "",
        "What each committed release is proven against (`releases.yaml` beside the specs; `make upgrade` writes the "
        "record of the release it adds). Every release also runs the runtime suite against a stub library "
        "generated from its spec.",
        "",
        releases_table(specs, records),
        "",
        "## Coverage: functions per group",
        "",
        coverage(specs),
        "",
    ]
    for a, b in zip(specs, specs[1:], strict=False):
        parts.append(to_markdown(diff(a, b)))
    return "\n".join(parts).rstrip("\n") + "\n"

"""The committed audit notes (audit-notes.yaml): explanations of deliberate disagreements, the form a
finding needs, and manual findings; applied to the reports by release."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from ..base.record import field, record, replace
from ..base.errors import CodegenError
from ..semantics.annotations import in_range
from ..spec.releases import Version
from ..spec.spec_io import load_as
from .compare import Check, FunctionReport, Status
from .vocabulary import AnnView, FORMS, _missing, expresses


CheckKind = Literal["direction", "memory", "nullable", "scalar-type", "length", "address", "fields", "output"]
CHECK_KINDS: tuple[str, ...] = ("direction", "memory", "nullable", "scalar-type", "length", "address", "fields", "output")


@record
class AuditNote:
    """Our judgement on one check of one parameter (`specs/<target>/audit-notes.yaml`)."""

    check: CheckKind
    why: str | None = None  # the disagreement is explained: deliberate, harmless, or outside the binding
    needs: str | None = None  # the vocabulary form this finding needs (see FORMS)
    impl: str | None = None  # a finding the heuristics cannot make: what the implementation does
    where: str | None = None  # file:function of that finding
    since: Version | None = None  # the first release it applies to
    until: Version | None = None  # the last


@record
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


def apply_notes(functions: list[FunctionReport], notes: AuditNotes, version: Version) -> tuple[list[FunctionReport], list[str]]:
    stale: list[str] = []
    by_name = {f.name: f for f in functions}
    out = {f.name: f for f in functions}
    for fname, params in sorted(notes.notes.items()):
        for pname, items in sorted(params.items()):
            active = [n for n in items if in_range(version, n)]
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

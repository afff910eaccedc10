"""The audit report as JSON or Markdown."""

from __future__ import annotations

import json
from typing import Any

from ..base.record import asdict
from .analyser import Fact
from .compare import AuditReport, _summary
from .vocabulary import FORMS


def _fact_dict(f: Fact) -> dict[str, Any]:
    return {"kind": f.kind, "detail": f.detail, "where": f.where, "depth": f.depth}


def to_json(r: AuditReport) -> str:
    doc = {
        "target": r.target, "version": str(r.version), "source": r.source_label, "spec": r.spec_name, "depth": r.depth,
        "summary": r.counts(),
        "forms": FORMS,
        "functions": [{
            "name": f.name, "where": list(f.where), "problem": f.problem,
            "params": [{
                "name": p.name, "c": p.c, "handle": p.handle, "status": p.status,
                "annotation": asdict(p.view),
                "facts": [_fact_dict(x) for x in p.facts],
                "checks": [asdict(c) for c in p.checks],
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
        "<!-- Written by `python -m miogen audit`; do not edit. Method: docs/audit.md. -->",
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

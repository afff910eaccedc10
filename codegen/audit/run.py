"""The audit of one release (`audit`) and its command line (`python -m miogen audit`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..spec import model
from ..semantics.annotations import Annotations
from ..semantics.resolve import resolve
from .cppsrc import CppDef, Source, load_source
from ..base.errors import CodegenError
from .analyser import Analyzer, Fact, _NULL_EVENTS, _rename
from .compare import AuditReport, FunctionReport, ParamReport, RecordField, compare
from .idioms import Idioms, load_idioms
from .notes import AuditNotes, apply_notes, load_notes
from .report import to_json, to_markdown
from .vocabulary import traits, view


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
            by_value = traits(ps.form).by_value
            is_handle = by_value and ps.type.kind == "handle" and ps.type.depth == 0
            if by_value and not is_handle:
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
    functions, stale = apply_notes(functions, notes, spec.version)
    return AuditReport(target=target_name or spec.target, version=spec.version,
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


def run(args: Any) -> int:
    import sys

    from ..semantics.annotations import load_annotations
    from ..spec.spec_io import load
    from ..spec.target import REPO_ROOT, load_target

    if args.depth < 0:
        raise CodegenError(f"--depth {args.depth}: must be 0 or more")
    spec = load(args.spec)
    ann_path: Path = args.annotations or REPO_ROOT / "specs" / spec.target / "annotations.yaml"
    target = load_target(REPO_ROOT / "specs" / spec.target / "target.yaml")
    idioms_path = args.idioms or ann_path.parent / "audit-idioms.yaml"
    notes_path = args.notes or ann_path.parent / "audit-notes.yaml"
    if args.output:
        from ..base.files import into, not_an_input

        not_an_input(into(args.output, f"semantics-audit.{args.format}"),
                     [("SRC", args.source), ("--spec", args.spec), ("--annotations", ann_path),
                      ("--idioms", idioms_path), ("--notes", notes_path)])
    idioms = load_idioms(idioms_path)
    notes = load_notes(notes_path)
    report = audit(args.source, spec, load_annotations(ann_path), idioms, notes, depth=args.depth,
                   source_label=args.source_label, spec_name=args.spec.name, prefix=target.function_prefix,
                   target_name=target.display_name)
    text = to_json(report) if args.format == "json" else to_markdown(report)
    if args.output:
        from ..base.files import into, write_file

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

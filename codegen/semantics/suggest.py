"""What a failed annotation gate says: the parameters left open, its error, and the block of annotations to
paste (valid for every committed release)."""

from __future__ import annotations


from ..base.record import record
from ..base.errors import CodegenError
from ..spec import model
from ..spec.releases import Version
from .annotations import Annotations

@record
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


_CHOICES = {
    "direction": "in | out | inout",
    "memory": "host | device",
    "shape": "scalar | array | buffer | string | blob | callback | opaque",
    "length": "the by-value count parameter, or length_call: {call: F, result: P}, or unsized: true",
}


def _range_of(name: str, releases: list[tuple[Version, set[str]]]
              ) -> tuple[Version | None, Version | None, list[Version]]:
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
    ordered = sorted(specs, key=lambda sp: sp.version)
    fn_releases = [(sp.version, {f.name for f in sp.functions}) for sp in ordered]
    by_fn: dict[str, list[OpenParam]] = {}
    for op in open_params:
        if op.param not in [p.param for p in by_fn.get(op.function, [])]:
            by_fn.setdefault(op.function, []).append(op)
    path = f"specs/{ordered[-1].target}/annotations.yaml"
    lines = [f"add to {path}, under `functions:` (replace each `...`; valid for "
             f"{'releases ' if len(fn_releases) > 1 else 'release '}{', '.join(str(v) for v, _ in fn_releases)}):"]
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
                notes.append(f"{fname} is absent from {', '.join(map(str, gaps))} inside its since/until range; since/until "
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
                notes.append(f"{fname}.{op.param} is absent from {', '.join(map(str, pgaps))} inside its since/until range")
    lines += [f"note: {n}" for n in notes]
    return "\n".join(lines)

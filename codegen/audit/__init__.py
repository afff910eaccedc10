"""Semantic audit: what a library's C++ implementation does with each pointer parameter,
compared with the resolved annotations.

`python -m miogen audit SRC --spec S --annotations A` indexes the sources (`miogen.audit.cppsrc`),
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

The package, bottom to top: `idioms` (the target's source idioms), `vocabulary` (the annotation as the
audit sees it), `analyser` (C++ -> facts), `compare` (facts vs annotations -> checks and reports),
`notes` (committed explanations, applied), `report` (JSON, Markdown), `run` (the audit and its command line).
"""

from .analyser import Analyzer, Fact
from .compare import AuditReport, Check, FunctionReport, ParamReport, RecordField, compare
from .idioms import Idioms, load_idioms
from .notes import AuditNote, AuditNotes, apply_notes, load_notes
from .report import to_json, to_markdown
from .run import audit, run
from .vocabulary import AnnView, EXPRESSIBLE, FORMS, expressible, view

__all__ = ["EXPRESSIBLE", "FORMS", "Analyzer", "AnnView", "AuditNote", "AuditNotes", "AuditReport", "Check", "Fact",
           "FunctionReport", "Idioms", "ParamReport", "RecordField", "apply_notes", "audit", "compare", "expressible",
           "load_idioms", "load_notes", "run", "to_json", "to_markdown", "view"]

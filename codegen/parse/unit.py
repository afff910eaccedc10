"""One translation unit: clang's diagnostics (errors fail, with hints), the API's top-level declarations."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from . import preamble
from .clang_env import cindex
from ..base.errors import HeaderError
from ..spec.target import Target
from .calls import hot_calls


_GENERIC_HINTS = (
    ("'stddef.h' file not found", "the compiler builtin headers are not on the include path; install gcc or clang "
     "or set $MIOGEN_BUILTIN_INCLUDE (miogen finds them itself unless told not to)"),
    ("'stdbool.h' file not found", "the compiler builtin headers are not on the include path; install gcc or clang"),
    ("'stdint.h' file not found", "the compiler builtin headers are not on the include path; install gcc or clang"),
    ("unknown type name 'uint64_t'", "<stdint.h> was never included: the HIP header on the include path must "
     "include <stdint.h> (miopen.h relies on it for uint64_t/int32_t)"),
    ("unknown type name 'int32_t'", "<stdint.h> was never included: the HIP header on the include path must "
     "include <stdint.h>"),
    ("unknown type name 'size_t'", "<stddef.h> did not define size_t: check the builtin include directory"),
    ("does not support default arguments", "this header uses C++ default arguments: parse it with --language c++"),
    ("must use 'struct' tag", "this header uses a struct without its tag (valid only in C++): parse it with "
     "--language c++"),
    ("use of undeclared identifier 'nullptr'", "this header uses C++ nullptr: parse it with --language c++"),
)


def _hint(message: str, target: Target) -> str | None:
    for h in target.diagnostic_hints:
        if h.match in message:
            return h.hint
    for match, hint in _GENERIC_HINTS:
        if match in message:
            return hint
    return None


def translation_unit(header: Path, args: list[str], target: Target, text: str | None = None) -> Any:
    """The translation unit of `header`; given the header's `text`, with the target's precompiled preamble
    where it gives the same one (codegen/parse/preamble.py)."""
    if text is not None:
        tu = preamble.parse(header, text, args, target)
        if tu is not None:
            return tu
    ci = cindex()
    index = ci.Index.create()
    flags = ci.TranslationUnit.PARSE_SKIP_FUNCTION_BODIES | ci.TranslationUnit.PARSE_INCOMPLETE
    try:
        tu = index.parse(os.fsencode(header), args=[os.fsencode(a) for a in args], options=flags)
    except ci.TranslationUnitLoadError as exc:
        raise HeaderError(f"{header}: libclang could not parse the file ({exc}); args: {' '.join(args)}") from None
    errors = [d for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]
    if errors:
        lines = []
        for d in errors[:10]:
            loc = d.location
            where = f"{loc.file.name}:{loc.line}:{loc.column}" if loc.file else str(header)
            hint = _hint(d.spelling, target)
            lines.append(f"{where}: error: {d.spelling}" + (f"\n    fix: {hint}" if hint else ""))
        more = f"\n  ... and {len(errors) - 10} more" if len(errors) > 10 else ""
        raise HeaderError(
            f"{header}: {len(errors)} error(s) while parsing; refusing to write a spec from a broken parse:\n  "
            + "\n  ".join(lines) + more
        )
    return tu


def top_level(tu: Any, header: Path, api_headers: tuple[str, ...] = ()) -> list[Any]:
    """Declarations whose location is the header itself (or one of the target's other API headers
    beside it), in order, inside `extern "C"` too."""
    ci = cindex()
    main = str(header)
    others = {str(header.parent / name) for name in api_headers}
    CK = ci.CursorKind
    nested = (CK.LINKAGE_SPEC.value, CK.NAMESPACE.value)
    # a parse with the preamble records the preprocessor too: not declarations
    directives = (CK.MACRO_DEFINITION.value, CK.MACRO_INSTANTIATION.value, CK.INCLUSION_DIRECTIVE.value,
                  CK.PREPROCESSING_DIRECTIVE.value)
    in_system = ci.conf.lib.clang_Location_isInSystemHeader
    in_main = ci.conf.lib.clang_Location_isFromMainFile
    children = hot_calls().children
    out: list[Any] = []

    def walk(cursor: Any) -> None:
        for ch in children(cursor):
            kind = ch._kind_id
            if kind in nested:
                walk(ch)
                continue
            if kind in directives:
                continue
            loc = ch.location
            if in_main(loc):  # most of what a parse keeps: one question
                out.append(ch)
                continue
            if in_system(loc):  # the HIP and C/C++ headers: quick to rule out
                continue
            f = loc.file  # the expansion location: macro-made declarations count too
            if f is not None and (f.name == main or f.name in others):
                out.append(ch)
    walk(tu.cursor)
    return out

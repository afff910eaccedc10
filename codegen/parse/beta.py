"""Which items only the beta macro declares: one parse and the macro's conditionals where they decide it,
else the names of a parse without the macro."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..base.record import replace
from . import conditionals
from .clang_env import cindex
from ..spec.target import Target
from .builder import build_spec
from .calls import hot_calls
from .headers import ParseOptions, clang_args
from .unit import top_level, translation_unit


def one_pass_beta(header: Path, text: str, opts: ParseOptions, target: Target) -> dict[str, list[Any]] | None:
    """The items of the beta parse, beta ones flagged, from that one parse and the beta macro's conditionals
    in the API headers (codegen/parse/conditionals.py); None where those cannot decide exactly and the caller must
    compare with a parse without the macro."""
    lines: dict[str, frozenset[int]] = {}
    for path in (header, *(header.parent / n for n in target.api_headers)):
        if path != header and not path.is_file():
            continue
        found = conditionals.beta_lines(text if path == header else path.read_text("utf-8", "replace"),
                                        target.beta_macro)
        if found is None:
            return None
        lines[str(path)] = found
    tu = translation_unit(header, clang_args(opts, target, True), target, text if opts.preamble else None)
    macro = target.beta_macro.encode()
    seen: set[str] = set(lines)
    for inc in tu.get_includes():  # another header's macro that names the beta macro may shape the API's text
        name = inc.include.name
        if name not in seen:
            seen.add(name)
            try:
                if macro in Path(name).read_bytes():
                    return None
            except OSError:
                return None
    cursors = top_level(tu, header, target.api_headers)
    main_lines = lines[str(header)]
    CK = cindex().CursorKind

    calls = hot_calls()

    def span(c: Any) -> tuple[frozenset[int], int, int]:
        main, first, _, last, _ = calls.extent(c)
        if main:  # the header's own lines (cindex's `lines.get(file name, main_lines)` below gives the same)
            return main_lines, first, last
        ext = c.extent
        start = ext.start
        f = start.file
        return (main_lines if f is None else lines.get(f.name, main_lines)), start.line, ext.end.line

    def beta(c: Any) -> bool | None:
        """True: every line of `c` lies in beta blocks (only the beta parse declares it); False: its first and
        last lines lie outside them (both parses declare its name); None: a block boundary cuts it otherwise."""
        where, first, last = span(c)
        if first not in where and last not in where:
            return False
        return True if all(n in where for n in range(first, last + 1)) else None

    names: set[str] = set()
    constants: dict[str, set[str]] = {}
    enum_kind, constant_kind = CK.ENUM_DECL.value, CK.ENUM_CONSTANT_DECL.value
    for c in cursors:
        b = beta(c)
        if b is None:
            return None
        if b:
            continue
        name = calls.spelling(c)
        names.add(name)
        if c._kind_id == enum_kind:
            where, first, last = span(c)
            kept = constants[name] = set()
            cut = any(n in where for n in range(first, last + 1))  # a beta block inside the enum
            for e in calls.children(c):  # a stable enum may hold beta constants
                if e._kind_id == constant_kind:
                    eb = beta(e) if cut else False
                    if eb is None:
                        return None
                    if not eb:
                        kept.add(calls.spelling(e))
    return flag_beta(build_spec(tu, header, text, target, cursors), (names, constants))


def flag_beta(items: dict[str, list[Any]], stable: tuple[set[str], dict[str, set[str]]]) -> dict[str, list[Any]]:
    """Mark what only the beta parse declares."""
    names, constants = stable
    out: dict[str, list[Any]] = {}
    for key, values in items.items():
        flagged = []
        for v in values:
            if v.name not in names:
                v = replace(v, beta=True)
            elif key == "enums":
                known = constants.get(v.name, set())
                if any(c.name not in known for c in v.constants):
                    v = replace(v, constants=tuple(c if c.name in known else replace(c, beta=True)
                                                   for c in v.constants))
            flagged.append(v)
        out[key] = flagged
    return out

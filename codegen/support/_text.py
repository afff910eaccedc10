"""How error messages show names and values: short lists, cut and quoted text."""

from __future__ import annotations

from collections.abc import Iterable

#: the most names an error message lists (then how many there are, and where to see them all)
LIST_MAX = 6
#: the most characters of listed names (the first name is always shown whole)
LIST_CHARS = 120
#: the most releases a message lists
RELEASES_MAX = 12
#: the most characters of a caller's value an error message quotes
QUOTE_MAX = 60


def name_list(names: Iterable[object], see: str = "", limit: int = LIST_MAX) -> str:
    """`names` joined by commas, cut after `limit` names or LIST_CHARS characters (long enum member names) with how
    many there are in all and `see` (where to find them all): every message that lists names goes through here, so
    none grows with an enum, its names or the releases."""
    items = [str(n) for n in names]
    shown: list[str] = []
    for item in items[:limit]:
        if shown and sum(len(x) + 2 for x in shown) + len(item) > LIST_CHARS:
            break
        shown.append(item)
    if len(shown) == len(items):
        return ", ".join(items)
    return ", ".join(shown) + f", ... ({len(items)} in all{f'; see {see}' if see else ''})"


def shown(text: str) -> str:
    """`text` printable whatever encoding a terminal has: the bytes of a POSIX path that are not UTF-8 (kept in a
    str as lone surrogates by os.fsdecode) as \\xNN, any other non-ASCII character as itself."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate os.fsdecode never makes
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def cut(text: str) -> str:
    """`text` cut to QUOTE_MAX characters: a caller's 10 KB string never becomes a 10 KB message."""
    return text if len(text) <= QUOTE_MAX else text[:QUOTE_MAX - 3] + "..."


def quoted(value: object) -> str:
    """repr(value), `cut`."""
    return cut(repr(value))


def what(value: object) -> str:
    return f"{type(value).__name__} {quoted(value)}" if not isinstance(value, (bytes, bytearray)) else type(value).__name__

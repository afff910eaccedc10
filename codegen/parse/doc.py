"""What the parser derives from doc comments: groups, deprecation and param direction tags.

Only normalised tokens leave this module (group names, in/out/inout, flags), never prose.
"""

from __future__ import annotations

import bisect
import functools
import re
from typing import NamedTuple

from .conditionals import BLOCK_COMMENT
from ..spec.model import DocTag

_COMMENT = re.compile(BLOCK_COMMENT + r"|//[^\n]*")
_GROUP_EVENT = re.compile(r"@(addtogroup|defgroup)\s+(\w+)|@\{|@\}")
_INGROUP = re.compile(r"@ingroup\s+(\w+)")
# a parameter's text runs to the next command (`@x`, or a backslash one) or the end; written without a lazy `.*?` and
# lookahead, which cost a look at every character
_PARAM = re.compile(r"[@\\]param\s*(\[[^\]]*\])?\s*(\w+)((?:[^@\\]+|[@\\](?!\w))*)", re.S)
_PAREN_TAG = re.compile(
    r"\(\s*(input\s*(?:/|and)\s*output|int?t?puts?|output)\b([^)]*)\)",
    re.I,
)
_DEPRECATED_TAG = re.compile(r"[@\\]deprecated\b")
_DEPRECATED_WORD = re.compile(r"\bdeprecated\b", re.I)


class ParamTag(NamedTuple):
    """A parameter's documented direction, and whether its text calls it optional (a tuple: the parser keys its
    parameters by it)."""

    direction: DocTag
    optional: bool


class GroupIndex:
    """Doxygen group regions (`@addtogroup X ... @{ ... @}`) of one file, by line."""

    def __init__(self, text: str) -> None:
        lines: list[int] = []
        groups: list[str | None] = []
        stack: list[str | None] = []
        pending: str | None = None
        line_no, pos = 1, 0
        for comment in _COMMENT.finditer(text):
            if "@" not in comment.group(0):
                continue
            line_no += text.count("\n", pos, comment.start())
            pos = comment.start()
            base_line = line_no
            body = comment.group(0)
            for ev in _GROUP_EVENT.finditer(body):
                line = base_line + body.count("\n", 0, ev.start())
                if ev.group(1):
                    pending = ev.group(2)
                    continue
                if ev.group(0) == "@{":
                    stack.append(pending)
                    pending = None
                elif stack:
                    stack.pop()
                lines.append(line)
                groups.append(stack[-1] if stack else None)
        self._lines = lines
        self._groups = groups

    def at(self, line: int) -> str | None:
        i = bisect.bisect_right(self._lines, line)
        return self._groups[i - 1] if i else None


def ingroup(comment: str | None) -> str | None:
    if not comment:
        return None
    m = _INGROUP.search(comment)
    return m.group(1) if m else None


def is_deprecated(comment: str | None, *, member: bool = False) -> bool:
    """`@deprecated`, or (for enum members, whose notes are one line) the word itself."""
    if not comment:
        return False
    if "deprecated" in comment and _DEPRECATED_TAG.search(comment):  # a substring search first: most have none
        return True
    return member and bool(_DEPRECATED_WORD.search(comment))


@functools.lru_cache(maxsize=256)
def _normalise(word: str) -> DocTag:
    w = re.sub(r"\s+", "", word.lower())
    if "output" in w and ("input" in w or "and" in w):
        return "inout"
    if w.startswith("out"):
        return "out"
    return "in"


@functools.lru_cache(maxsize=1024)
def _bracket_tag(bracket: str, text_has_optional: bool) -> ParamTag:
    b = bracket.strip("[]").replace(" ", "").lower()
    direction: DocTag = "inout" if b in ("in,out", "inout") else "out" if b == "out" else "in"
    return ParamTag(direction, text_has_optional)


@functools.lru_cache(maxsize=1024)
def _paren_tag(word: str, rest: str) -> ParamTag:
    return ParamTag(_normalise(word), "optional" in rest.lower())


def param_tags(comment: str | None) -> dict[str, ParamTag]:
    """Direction tags per documented parameter name: `[in]`/`[out]`/`[in,out]` or `(input)`-style."""
    tags: dict[str, ParamTag] = {}
    if not comment:
        return tags
    search = _PAREN_TAG.search
    for bracket, name, text in _PARAM.findall(comment):
        if bracket:
            tags[name] = _bracket_tag(bracket, "optional" in text.lower())
            continue
        p = search(text)
        if p:
            tags[name] = _paren_tag(p.group(1), p.group(2))
    return tags

"""What the parser derives from doc comments: groups, deprecation, param direction tags, and the header's own words
for a function (its `@brief`) and for each parameter (its `@param` text).

The words leave this module as one line of printable text each (comment markers and runs of whitespace gone, at
most `spec.rules.MAX_TEXT` characters); everything else as normalised tokens (group names, in/out/inout, flags).
"""

# no `from __future__ import annotations`: a NamedTuple's annotations made as strings are compiled when its class
# is made (`typing.ForwardRef`), and a process's first compile costs a parse ~9 M instructions
import bisect
import functools
import re
from typing import NamedTuple

from .conditionals import comments
from ..spec.model import DocTag
from ..spec.rules import MAX_TEXT  # the longest text kept; a longer one is cut at a word with "..."

_GROUP_EVENT = re.compile(r"@(addtogroup|defgroup)\s+(\w+)|@\{|@\}")
_GROUP_MARK = re.compile(r"@(?:addtogroup|defgroup|\{|\})")  # where a _GROUP_EVENT may start
_INGROUP = re.compile(r"@ingroup\s+(\w+)")
# a parameter's text runs to the next command (`@x`, or a backslash one) or the end; written without a lazy `.*?` and
# lookahead, which cost a look at every character, and starting with the literal `param` (the command's `@` or
# backslash looked behind), which the regex engine finds faster than a character set
_PARAM = re.compile(r"param(?<=[@\\]param)\s*(\[[^\]]*\])?\s*(\w+)((?:[^@\\]+|[@\\](?!\w))*)", re.S)
_PAREN_TAG = re.compile(
    r"\(\s*(input\s*(?:/|and)\s*output|int?t?puts?|output)\b([^)]*)\)",
    re.I,
)
_DEPRECATED_TAG = re.compile(r"[@\\]deprecated\b")
_DEPRECATED_WORD = re.compile(r"\bdeprecated\b", re.I)


# the header's words are cleaned where they are found, not the whole comment first: a line break with the next line's
# decoration (` * `, `/// `) is one space (split and joined: a regex over the text costs ten times as much); a blank
# line (decoration only) ends the brief's paragraph
_COMMAND = re.compile(r"[@\\]\w")
_OPEN = re.compile(r"\s*(?:/\*+!?|//[/!]<?)")
_CLOSE = re.compile(r"\*+/\s*$")
#: a line break and the next line's decoration (` * `, `/// `, `//! `: what `_undecorated` takes off), in one pass
_DECORATION = re.compile(r"\n\s*(?:\*(?!/)\**|//[/!]<*)?")
_BRIEF = re.compile(r"[@\\]brief\b")


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
        spans = comments(text)
        starts = [start for start, _ in spans]
        line_no, pos = 1, 0
        for candidate in _GROUP_MARK.finditer(text):  # found in the whole text at once; kept where in a comment
            at = candidate.start()
            i = bisect.bisect_right(starts, at) - 1
            if i < 0 or at >= spans[i][1]:
                continue
            ev = _GROUP_EVENT.match(text, at, spans[i][1])  # as the comment's own text alone would match
            if ev is None:
                continue
            line_no += text.count("\n", pos, at)
            pos = at
            if ev.group(1):
                pending = ev.group(2)
                continue
            if ev.group(0) == "@{":
                stack.append(pending)
                pending = None
            elif stack:
                stack.pop()
            lines.append(line_no)
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


def params(comment: str | None) -> tuple[dict[str, ParamTag], dict[str, str]]:
    """The direction tags (`[in]`/`[out]`/`[in,out]` or `(input)`-style) and the texts of the documented parameters,
    in one pass."""
    tags: dict[str, ParamTag] = {}
    texts: dict[str, str] = {}
    if not comment or "param" not in comment:
        return tags, texts
    known = _PARAM_TEXTS
    for bracket, name, text in _PARAM.findall(comment):
        done = known.get((bracket, text))
        if done is None:  # a header repeats its parameter texts ("MIOpen handle (input)") many times
            if len(known) >= _PARAM_TEXTS_MAX:
                known.clear()
            done = known[(bracket, text)] = _param_text(bracket, text)
        tag, line = done
        if line and name not in texts:
            texts[name] = line
        if tag is not None:
            tags[name] = tag
    return tags, texts


_PARAM_TEXTS: dict[tuple[str, str], tuple[ParamTag | None, str | None]] = {}  # bounded
_PARAM_TEXTS_MAX = 4096


def _param_text(bracket: str, text: str) -> tuple[ParamTag | None, str | None]:
    """A `@param`'s tag (from its `[dir]`, else an `(input)`-style word in its text) and its text as one line."""
    if bracket:
        tag: ParamTag | None = _bracket_tag(bracket, "optional" in text.lower())
    else:
        p = _PAREN_TAG.search(text)
        tag = _paren_tag(p.group(1), p.group(2)) if p else None
    return tag, _one_line(text)


def _undecorated(line: str) -> str:
    """A comment line without its leading decoration (` * `, `/// `, `//! `)."""
    s = line.lstrip()
    if s[:1] == "*" and s[:2] != "*/":
        return s.lstrip("*")
    if s[:3] in ("///", "//!"):
        return s[3:].lstrip("<")
    return s


def _one_line(text: str) -> str | None:
    """`text` (a piece of a comment) as one line of printable characters, or None when nothing is left."""
    return _cleaned(text.strip())


@functools.lru_cache(maxsize=4096)  # a header repeats its parameter texts ("MIOpen handle (input)") many times
def _cleaned(text: str) -> str | None:
    if "\n" in text:
        text = _DECORATION.sub(" ", text)  # the lines joined, each without its decoration (`_undecorated`)
    line = " ".join(text.split())
    if line.endswith("/"):
        line = _CLOSE.sub("", line).rstrip()
    if not line.isprintable():  # rare: a control or format character left
        line = " ".join("".join(c if c.isprintable() else " " for c in line).split())
    if len(line) > MAX_TEXT:
        line = line[: MAX_TEXT - 3].rsplit(" ", 1)[0] + "..."
    return line or None


def brief(comment: str | None) -> str | None:
    """The function's description in the header's words: its `@brief` paragraph (without one: the comment's first
    paragraph, unless that starts with a command)."""
    if not comment:
        return None
    m = _BRIEF.search(comment)
    if m:
        rest = comment[m.end():]
        end = _COMMAND.search(rest)  # the next command ends it too
        rest = rest[: end.start()] if end else rest
    else:
        opened = _OPEN.match(comment)
        rest = comment[opened.end():] if opened else comment
        if rest.lstrip(" \t\n*/!").startswith(("@", "\\")):
            return None
    lines = rest.split("\n")
    for i in range(1, len(lines)):  # a blank line (its decoration only) ends the paragraph
        if not _undecorated(lines[i]).strip(" \t/"):
            lines = lines[:i]
            break
    return _one_line("\n".join(lines))


def param_texts(comment: str | None) -> dict[str, str]:
    """Each documented parameter's `@param` text in the header's words (its direction tag included), by name."""
    return params(comment)[1]

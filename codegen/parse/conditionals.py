"""Which lines of a header only the beta macro lets the compiler see, read from its preprocessor conditionals.

With this the parser tells beta declarations apart in one libclang pass (the beta parse): a declaration is
beta exactly when its line lies inside an `#ifdef BETA` / `#if defined(BETA)` block. That is exact only for
headers where the macro does nothing else, so `beta_lines` answers None (the parser then parses twice, with
and without the macro, and compares) whenever the macro is used in any other way:

- `#ifndef BETA` or `#if !defined(BETA)` (a block only the stable parse sees), an `#elif` of a beta block or
  an `#else` of one that holds anything but comments (names the stable parse may declare differently), or
  any other `#if`/`#elif` expression naming it;
- `#define`/`#undef` or any other directive naming it, or the macro named in code (outside comments);
- conditionals that do not balance (clang reports those itself; the parser just does not guess).
"""

from __future__ import annotations

import functools
import re

#: a block comment, unrolled: `/\*.*?\*/` would try its end at every character of a header's long doc comments
BLOCK_COMMENT = r"/\*[^*]*\*+(?:[^/*][^*]*\*+)*/"
# a comment (blanked by `beta_lines`, its newlines kept so line numbers stay) or a string or character literal
# (kept as it is; `\\.` takes a backslash-newline too: re.S)
COMMENT_OR_LITERAL = re.compile(r'//[^\n]*|' + BLOCK_COMMENT + r'|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
# a directive: its logical line, continued lines included
_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*([A-Za-z_]\w*)?((?:[^\n\\]|\\.)*)", re.M | re.S)


@functools.lru_cache(maxsize=1)  # the header of the parse: its beta lines and its doc groups (codegen/parse/doc.py)
def comments(text: str) -> tuple[tuple[int, int], ...]:
    """(start, end) of each comment of `text` in order, from one scan that also passes its string and character
    literals (a comment marker inside one starts none)."""
    return tuple((m.start(), m.end()) for m in COMMENT_OR_LITERAL.finditer(text) if text[m.start()] == "/")


def _code(text: str) -> str:
    """`text` with each comment a space (its newlines kept, so line numbers stay)."""
    pieces: list[str] = []
    done = 0
    for start, end in comments(text):
        pieces += (text[done:start], " ", "\n" * text.count("\n", start, end))
        done = end
    pieces.append(text[done:])
    return "".join(pieces)


def _directives(code: str) -> list[re.Match[str]]:
    """The directives of `code` (`_DIRECTIVE`'s matches, as `finditer` finds them), found from its `#` characters:
    a regex starting with `^` would be tried at every line of a header's doc comments."""
    out: list[re.Match[str]] = []
    done = 0  # where the last directive (continued lines included) ends
    i = code.find("#")
    while i >= 0:
        line_start = code.rfind("\n", 0, i) + 1
        if not code[line_start:i].strip(" \t"):
            m = _DIRECTIVE.match(code, line_start)
            if m is not None:
                out.append(m)
                done = m.end()
        i = code.find("#", max(i + 1, done))
    return out


def _word(text: str, i: int) -> bool:
    """Whether text[i] is a character `\\w` matches (False past either end)."""
    return 0 <= i < len(text) and (text[i].isalnum() or text[i] == "_")


def _mentions(code: str, macro: str) -> list[int]:
    """Offsets of `macro` as a whole word in `code` (`\\bmacro\\b`, found by str.find: a regex starting with
    `\\b` scans the header a character at a time)."""
    out = []
    i = code.find(macro)
    while i >= 0:
        if not _word(code, i - 1) and not _word(code, i + len(macro)):
            out.append(i)
        i = code.find(macro, i + 1)
    return out


def beta_lines(text: str, macro: str) -> frozenset[int] | None:
    """The 1-based line numbers inside `#ifdef <macro>` blocks (directive lines included), or None when
    the macro is used in a way this cannot decide (see the module doc)."""
    if macro not in text:
        return frozenset()
    code = _code(text)
    names = re.compile(rf"\b{re.escape(macro)}\b")
    positive = re.compile(rf"\s*(?:defined\s*\(\s*{re.escape(macro)}\s*\)|defined\s+{re.escape(macro)})\s*")
    mentions_at = _mentions(code, macro)
    stack: list[tuple[bool, int]] = []  # (tests the macro, first line) of each open conditional
    inside: set[int] = set()
    in_else = False  # in the #else branch of a beta block: only blank text until its #endif
    line, pos, seen = 1, 0, 0  # line number at offset pos; mentions accounted for
    for m in _directives(code):
        if in_else and code[pos:m.start()].strip():
            return None  # the stable parse would see something here
        if seen < len(mentions_at) and mentions_at[seen] < m.start():
            return None  # the macro in code
        line += code.count("\n", pos, m.start())
        first = line
        line += code.count("\n", m.start(), m.end())
        pos = m.end()
        while seen < len(mentions_at) and mentions_at[seen] < m.end():
            seen += 1
        word, rest = m.group(1) or "", m.group(2).replace("\\\n", " ")
        mentions = names.search(rest) is not None
        if in_else and word != "endif":
            return None
        if word in ("if", "ifdef", "ifndef"):
            beta = ((word == "ifdef" and rest.strip() == macro)
                    or (word == "if" and positive.fullmatch(rest) is not None))
            if mentions and not beta:
                return None
            stack.append((beta, first))
        elif word == "else" and stack and stack[-1][0] and not rest.strip():
            in_else = True
        elif word in ("elif", "else", "elifdef", "elifndef"):
            if not stack or stack[-1][0] or mentions:
                return None
        elif word == "endif":
            if not stack:
                return None
            beta, start = stack.pop()
            in_else = False
            if beta:
                inside.update(range(start, line + 1))
        elif mentions:
            return None  # #define, #undef, #pragma ... naming the macro
    if stack or seen < len(mentions_at):
        return None
    return frozenset(inside)

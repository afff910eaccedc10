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

import re

# comments blanked (newlines kept, so line numbers stay); string and character literals kept as they are
_COMMENT_OR_LITERAL = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
_DIRECTIVE = re.compile(r"[ \t]*#[ \t]*([A-Za-z_]\w*)?(.*)", re.S)


def _blank(m: re.Match[str]) -> str:
    s = m.group(0)
    return s if s[0] in "\"'" else re.sub(r"[^\n]", " ", s)


def beta_lines(text: str, macro: str) -> frozenset[int] | None:
    """The 1-based line numbers inside `#ifdef <macro>` blocks (directive lines included), or None when
    the macro is used in a way this cannot decide (see the module doc)."""
    code = _COMMENT_OR_LITERAL.sub(_blank, text)
    names = re.compile(rf"\b{re.escape(macro)}\b")
    if names.search(code) is None:
        return frozenset()
    positive = re.compile(rf"\s*(?:defined\s*\(\s*{re.escape(macro)}\s*\)|defined\s+{re.escape(macro)})\s*")
    stack: list[tuple[bool, int]] = []  # (tests the macro, first line) of each open conditional
    in_else = False  # in the #else branch of a beta block: only blank lines until its #endif
    inside: set[int] = set()
    lines = code.split("\n")
    i = 0
    while i < len(lines):
        first = i + 1
        line = lines[i]
        while line.endswith("\\") and i + 1 < len(lines):  # a continued line is one logical line
            i += 1
            line = line[:-1] + lines[i]
        i += 1
        m = _DIRECTIVE.fullmatch(line)
        if in_else and line.strip() and (m is None or m.group(1) != "endif"):
            return None  # the stable parse would see something here
        if m is None:
            if names.search(line):
                return None  # the macro in code
            continue
        word, rest = m.group(1) or "", m.group(2)
        mentions = names.search(rest) is not None
        if word in ("if", "ifdef", "ifndef"):
            beta = ((word == "ifdef" and rest.strip() == macro)
                    or (word == "if" and positive.fullmatch(rest) is not None))
            if mentions and not beta:
                return None
            stack.append((beta, first))
        elif word == "else" and stack and stack[-1][0] and not rest.strip() and not in_else:
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
                inside.update(range(start, i + 1))
        elif mentions:
            return None  # #define, #undef, #pragma ... naming the macro
    if stack:
        return None
    return frozenset(inside)

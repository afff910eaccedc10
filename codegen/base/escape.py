"""Escaping free text for the places templates paste it: Python string literals, f-strings,
docstrings and comments; C/C++ string literals, comments and `#include` names.

Identifiers and versions are validated when a file is loaded (codegen/spec/rules.py) and need no
escaping. Free text (`rules.TEXT`: an error suffix, a status hint, a file name from the command
line) can hold anything printable (quotes, braces, backslashes, non-ASCII); each filter below
turns it into something that stays inside its place whatever it holds, and reads back as the
same text where a language reads it back (string literals). Every filter returns pure ASCII.

`install(env)` registers them as Jinja filters under the names in FILTERS.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import CodegenError

_SIMPLE = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
#: text that is its own string-literal body: printable ASCII without `"` and `\\` (most texts)
_PLAIN = re.compile(r'[ !#-\[\]-~]*')


def _escape_char(c: str) -> str:
    code = ord(c)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def py_str_text(text: str) -> str:
    """The body of a double-quoted Python string literal that reads back as `text` (no quotes)."""
    if _PLAIN.fullmatch(text):
        return text
    out = []
    for c in text:
        if c in _SIMPLE:
            out.append(_SIMPLE[c])
        elif c == '"':
            out.append('\\"')
        elif " " <= c <= "~":
            out.append(c)
        else:
            out.append(_escape_char(c))
    return "".join(out)


def py_str(text: str) -> str:
    """A double-quoted Python string literal of `text` (pure ASCII; reads back exactly, lone
    surrogates and characters outside the BMP included: unlike JSON, no surrogate pairs)."""
    return f'"{py_str_text(text)}"'


def fstr_text(text: str) -> str:
    """The body of a double-quoted Python f-string that prints `text` (braces doubled)."""
    return py_str_text(text).replace("{", "{{").replace("}", "}}")


def docstring_text(text: str) -> str:
    """Text to paste inside a `\"\"\"...\"\"\"` docstring: one line, no quote or backslash can end or
    bend it (quotes and backslashes are escaped, so the docstring reads back as `text`). A lone
    surrogate is written as its visible escape (`\\ud800`): a class whose docstring holds one cannot
    even be created (CPython encodes class docstrings to UTF-8)."""
    if text.isascii():  # no surrogate
        return py_str_text(text)
    return py_str_text("".join(f"\\u{ord(c):04x}" if "\ud800" <= c <= "\udfff" else c for c in text))


def py_comment(text: str) -> str:
    """Text for after `# ` in Python source: one line, printable ASCII (newlines and the like are
    shown as escapes, so no text can start a new line of code)."""
    return "".join(c if " " <= c <= "~" else _escape_char(c) for c in text)


def c_str_text(text: str) -> str:
    """The body of a C/C++ string literal reading back as the UTF-8 bytes of `text` (octal escapes,
    which never swallow a following digit the way `\\x` escapes do)."""
    out = []
    for b in text.encode("utf-8", "surrogatepass"):
        c = chr(b)
        if c in _SIMPLE:
            out.append(_SIMPLE[c])
        elif c in ('"', "?"):
            out.append("\\" + c)  # `?`: no trigraph can form
        elif " " <= c <= "~":
            out.append(c)
        else:
            out.append(f"\\{b:03o}")
    return "".join(out)


def c_comment(text: str) -> str:
    """Text for after `// `: one line, printable ASCII, and no backslash (a backslash at the end of
    a line continues a // comment onto the next line, even with spaces after it): other characters
    are shown as `%xx` per UTF-8 byte."""
    return "".join(c if " " <= c <= "~" and c != "\\" else "".join(f"%{b:02x}" for b in c.encode("utf-8", "surrogatepass"))
                   for c in text)


def c_include(path: str) -> str:
    """A file name for `#include "..."`: header names have no escapes, so refuse what needs one."""
    if not path or any(not (" " <= c <= "~") or c in '"\\' for c in path):
        raise CodegenError(f"{path!r} cannot be #included (only printable ASCII without quotes or backslashes); "
                           f"use a work directory with a plain path")
    return path


def lines(text: str, prefix: str) -> str:
    """Each line of `text` as its own comment line (`prefix` e.g. `# ` or `// `), escaped."""
    escape = c_comment if prefix.startswith("//") else py_comment
    return "\n".join(prefix + escape(line) for line in text.split("\n"))


def comment_block(text: str, prefix: str) -> str:
    """A banner (lines that may already start with `# ` or `// `) as comment lines under `prefix`:
    each line loses a comment marker it already has and gets `prefix` and the escape of its
    language, so whatever a caller passes as a banner stays a comment (also across CR, form feed
    or U+2028: every line break Python or C++ might see is escaped)."""
    out = []
    for line in text.split("\n"):
        for marker in ("# ", "#", "// ", "//"):
            if line.startswith(marker):
                line = line[len(marker):]
                break
        out.append(line)
    return lines("\n".join(out), prefix)


def py_list(items: Any) -> str:
    """A Python list literal of strings, each escaped with `py_str`."""
    return "[" + ", ".join(py_str(str(x)) for x in items) + "]"


def py_tuple(items: Any) -> str:
    """A Python tuple literal of strings, each escaped with `py_str`."""
    parts = [py_str(str(x)) for x in items]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def py_int(value: Any) -> str:
    """An integer literal (refuses anything that is not an int: a value from a spec is pasted as code)."""
    if type(value) is not int:
        raise CodegenError(f"expected an integer to write into generated code; got {type(value).__name__} {value!r:.60}")
    return str(value)


def py_ident(name: Any) -> str:
    """A Python identifier pasted as code (class names from a target): refused unless it is one."""
    import keyword

    if not isinstance(name, str) or not name.isascii() or not name.isidentifier() or keyword.iskeyword(name):
        raise CodegenError(f"{name!r:.60} is not an ASCII Python identifier; refusing to write it into generated code")
    return name


FILTERS: dict[str, Any] = {
    "py_str": py_str,
    "py_str_text": py_str_text,
    "fstr_text": fstr_text,
    "docstring_text": docstring_text,
    "py_comment": py_comment,
    "c_str_text": c_str_text,
    "c_comment": c_comment,
    "c_include": c_include,
    "comment_lines": lines,
    "comment_block": comment_block,
    "py_list": py_list,
    "py_tuple": py_tuple,
    "py_int": py_int,
    "py_ident": py_ident,
}


def install(env: Any) -> None:
    """Register the filters on a Jinja environment."""
    env.filters.update(FILTERS)

"""A heuristic, deterministic index of C++ sources: function definitions and their bodies.

No compiler is involved (a library's sources rarely build without its own build system): the
text is cleaned (comments and string literals blanked, preprocessor lines dropped, each file's
own function-like macros expanded), brackets are matched once per file, and every
`name(params) [qualifiers] [: init-list] { body }` outside a function body is a definition.
Definitions are indexed by their unqualified name (constructors under the class name), so a
call `x.Foo(a, b)` or `ns::Foo(a, b)` resolves to every `Foo` whose parameter count fits.
Used by `miogen.audit`; it knows C++, not any particular library.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..base.record import field, record
from ..base.errors import CodegenError

#: Words that look like `name(` but never name a function being defined or called.
KEYWORDS = frozenset({
    "if", "for", "while", "switch", "catch", "return", "sizeof", "alignof", "decltype", "static_assert",
    "defined", "operator", "new", "delete", "throw", "typeid", "noexcept", "alignas", "__attribute__",
    "do", "else", "case", "default", "template", "typename", "using", "namespace", "static_cast",
    "reinterpret_cast", "const_cast", "dynamic_cast", "co_return", "co_await", "co_yield", "requires",
    "__declspec", "asm", "__asm__", "explicit",
})
#: Tokens that qualify a type or a declaration (never a parameter's name).
TYPE_WORDS = frozenset({
    "const", "volatile", "struct", "enum", "class", "union", "typename", "unsigned", "signed", "long", "short",
    "int", "char", "float", "double", "bool", "void", "auto", "wchar_t", "register", "mutable", "constexpr",
    "static", "inline", "extern", "restrict", "__restrict", "__restrict__",
})

_CLEAN = re.compile(
    r'//[^\n]*'                                   # line comment
    r'|/\*.*?\*/'                                 # block comment
    r'|R"(?P<delim>[^()\\\s]{0,16})\(.*?\)(?P=delim)"'  # raw string
    r'|"(?:\\.|[^"\\\n])*"'                       # string literal
    r"|'(?:\\.|[^'\\\n])*'",                      # character literal
    re.S,
)
_DEFINE = re.compile(r"#\s*define\s+([A-Za-z_]\w*)\(([^)]*)\)(.*)", re.S)
_NAME_PAREN = re.compile(r"(?<![\w.$])(~?[A-Za-z_]\w*(?:\s*::\s*~?[A-Za-z_]\w*)*)\s*(?:<[\w\s:,*&<>]*>\s*)?\(")
_QUALIFIERS = re.compile(r"\s*(?:const|noexcept(?:\s*\([^()]*\))?|override|final|volatile|&&|&|mutable|try)\b\s*|\s*&&?\s*")
_IDENT = re.compile(r"[A-Za-z_]\w*")


@record
class CppParam:
    """One parameter of a definition: its name (None when unnamed), type text, reference-ness."""

    name: str | None
    type: str
    mutable_ref: bool = False  # a non-const lvalue reference (`T& x`): the callee can assign the caller's object
    has_default: bool = False


@record
class CppDef:
    """A function (or constructor) definition."""

    name: str  # unqualified; constructors under their class name
    qualname: str  # as written, e.g. `ConvolutionDescriptor::ConvolutionForward`
    path: str  # file, relative to the source root, with `/`
    params: tuple[CppParam, ...]
    variadic: bool
    file: int  # index into Source.files
    region: int  # start of the analysed region (the constructor's init list, or the body)
    body: int  # offset of the body's opening `{`
    end: int  # offset of the body's closing `}`

    @property
    def where(self) -> str:
        return f"{self.path}:{self.qualname}"

    def accepts(self, nargs: int) -> bool:
        required = sum(1 for p in self.params if not p.has_default)
        return required <= nargs and (self.variadic or nargs <= len(self.params))


@record(frozen=False)
class SourceFile:
    path: str
    text: str  # cleaned text (comments/strings blanked, preprocessor lines dropped, local macros expanded)
    pairs: dict[int, int] = field(default_factory=dict)  # every bracket's offset -> its partner's


@record(frozen=False)
class Source:
    root: Path
    files: list[SourceFile]
    defs: dict[str, list[CppDef]]

    def lookup(self, name: str, nargs: int) -> list[CppDef]:
        """Definitions named `name` taking `nargs` arguments; failing any, those with more parameters (their
        default arguments may sit on a separate declaration)."""
        found = [d for d in self.defs.get(name, ()) if d.accepts(nargs)]
        return found or [d for d in self.defs.get(name, ()) if nargs < len(d.params)]


# --------------------------------------------------------------------------- cleaning


def _condition(expr: str, defines: dict[str, int]) -> bool | None:
    """The value of a simple #if condition under `defines` (None: cannot tell)."""
    expr = re.sub(r"\bdefined\s*\(?\s*([A-Za-z_]\w*)\s*\)?",
                  lambda m: ("1" if defines[m.group(1)] else "0") if m.group(1) in defines else m.group(1), expr)

    def name(m: re.Match[str]) -> str:  # an unknown name stays, and makes the condition unknown
        return str(defines[m.group(0)]) if m.group(0) in defines else m.group(0)

    expr = re.sub(r"\b[A-Za-z_]\w*\b", name, expr).replace("&&", " and ").replace("||", " or ")
    expr = re.sub(r"!(?!=)", " not ", expr)
    if not re.fullmatch(r"[\d\s()<>=!]*(?:(?:and|or|not)[\d\s()<>=!]*)*", expr):
        return None
    try:
        return bool(eval(expr, {"__builtins__": {}}, {}))  # noqa: S307 - digits, comparisons and boolean words only
    except Exception:  # pragma: no cover - malformed condition
        return None


def clean(text: str, defines: dict[str, int] | None = None) -> tuple[str, dict[str, tuple[list[str], str]]]:
    """Blank comments and literals and preprocessor lines, keep one branch of each #if (the one `defines`
    selects, else the first); return the text and its function-like macros."""
    defines = defines or {}

    def blank(m: re.Match[str]) -> str:
        s = m.group(0)
        if s.startswith("/"):
            return " " + "\n" * s.count("\n")
        if s.startswith("'"):
            return "0"
        return '""'

    text = _CLEAN.sub(blank, text.replace("\r\n", "\n"))
    macros: dict[str, tuple[list[str], str]] = {}
    out: list[str] = []
    lines = text.split("\n")
    # one entry per open #if: (this branch is kept, a branch was already kept)
    stack: list[tuple[bool, bool]] = []

    def live() -> bool:
        return all(keep for keep, _ in stack)

    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("#"):
            directive = line
            while directive.endswith("\\") and i + 1 < len(lines):
                i += 1
                directive = directive[:-1] + " " + lines[i]
                out.append("")
            d = re.match(r"#\s*(\w+)\s*(.*)", directive.strip())
            word, rest = (d.group(1), d.group(2).strip()) if d else ("", "")
            if word in ("if", "ifdef", "ifndef"):
                cond = rest if word == "if" else ("defined(" + rest + ")" if word == "ifdef" else "!defined(" + rest + ")")
                value = _condition(cond, defines)
                keep = True if value is None else value
                stack.append((keep, keep))
            elif word == "elif" and stack:
                taken = stack[-1][1]
                value = _condition(rest, defines)
                keep = not taken and (value is True)
                stack[-1] = (keep, taken or keep)
            elif word == "else" and stack:
                taken = stack[-1][1]
                stack[-1] = (not taken, True)
            elif word == "endif" and stack:
                stack.pop()
            elif word == "define" and live():
                m = _DEFINE.match(directive.strip())
                if m:
                    params = [p.strip() for p in m.group(2).split(",") if p.strip()]
                    macros[m.group(1)] = (params, m.group(3).strip())
            out.append("")
        else:
            out.append(line if live() else "")
        i += 1
    return "\n".join(out), macros


def match_brackets(text: str) -> dict[int, int]:
    """Offsets of matching (), [], {} (both ways). Unbalanced text (#if branches) is matched best effort."""
    pairs: dict[int, int] = {}
    stack: list[tuple[str, int]] = []
    closer = {")": "(", "]": "[", "}": "{"}
    for m in re.finditer(r"[()\[\]{}]", text):
        ch, pos = m.group(0), m.start()
        if ch in "([{":
            stack.append((ch, pos))
            continue
        want = closer[ch]
        # pop to the nearest opener of the same kind; skipped openers stay unmatched
        for k in range(len(stack) - 1, -1, -1):
            if stack[k][0] == want:
                opener = stack[k][1]
                del stack[k:]
                pairs[opener] = pos
                pairs[pos] = opener
                break
    return pairs


def match_forward(text: str, start: int) -> int:
    """The offset of the bracket closing the one at `start`, scanning forward; -1 if none."""
    opener = text[start]
    closer = {"(": ")", "[": "]", "{": "}"}[opener]
    depth = 0
    for i in range(start, len(text)):
        c = text[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return i if c == closer else -1
    return -1


def angle_end(text: str, i: int) -> int:
    """The offset just past the `>` matching the `<` at i, if what lies between reads as template arguments."""
    depth = 0
    for j in range(i, min(len(text), i + 400)):
        c = text[j]
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
            if depth == 0:
                return j + 1
        elif not (c.isalnum() or c in "_ \t\n:,*&"):
            return -1
    return -1


def split_args(text: str) -> list[tuple[int, int]]:
    """Spans of the top-level comma-separated parts of `text` (brackets and template arguments respected)."""
    spans: list[tuple[int, int]] = []
    depth = 0
    start = 0
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "<" and i > 0:
            before = text[:i].rstrip()
            end = angle_end(text, i)
            if end > 0 and before and (before[-1].isalnum() or before[-1] == "_"):
                i = end
                continue
        elif c == "," and depth == 0:
            spans.append((start, i))
            start = i + 1
        i += 1
    if text[start:].strip() or spans:
        spans.append((start, n))
    return spans


def expand_macros(text: str, macros: dict[str, tuple[list[str], str]]) -> str:
    """Expand the file's own function-like macros where they are used (three passes for nesting)."""
    if not macros:
        return text
    pattern = re.compile(r"(?<![\w.])(" + "|".join(re.escape(k) for k in sorted(macros)) + r")\s*\(")
    for _ in range(3):
        pieces: list[str] = []
        pos = 0
        changed = False
        for m in pattern.finditer(text):
            if m.start() < pos:
                continue
            close = match_forward(text, m.end() - 1)
            if close < 0:
                continue
            params, body = macros[m.group(1)]
            inner = text[m.end():close]
            args = [inner[a:b].strip() for a, b in split_args(inner)]
            if "..." in params:
                fixed = [p for p in params if p != "..."]
                rest = ", ".join(args[len(fixed):])
                binding = dict(zip(fixed, args)) | {"__VA_ARGS__": rest}
            else:
                binding = dict(zip(params, args))
            expanded = re.sub(r"#\s*([A-Za-z_]\w*)", lambda mm: '""' if mm.group(1) in binding else mm.group(0), body)
            expanded = re.sub(r"\b[A-Za-z_]\w*\b", lambda mm: binding.get(mm.group(0), mm.group(0)), expanded)
            expanded = expanded.replace("##", "")
            pieces.append(text[pos:m.start()])
            pieces.append(" " + expanded + " ")
            pos = close + 1
            changed = True
        pieces.append(text[pos:])
        text = "".join(pieces)
        if not changed:
            break
    return text


# --------------------------------------------------------------------------- definitions


def parse_params(text: str) -> tuple[tuple[CppParam, ...], bool]:
    params: list[CppParam] = []
    variadic = False
    for a, b in split_args(text):
        part = text[a:b].strip()
        if not part or part == "void":
            continue
        if part == "..." or part.endswith("..."):
            variadic = True
            continue
        has_default = False
        depth = 0
        for i, c in enumerate(part):
            if c in "([{<":
                depth += 1
            elif c in ")]}>":
                depth -= 1
            elif c == "=" and depth == 0 and part[i + 1:i + 2] != "=" and part[i - 1:i] not in ("=", "!", "<", ">"):
                has_default = True
                part = part[:i].strip()
                break
        part = re.sub(r"\[[^\]]*\]\s*$", "", part).strip()  # `int x[4]`
        part = re.sub(r"\[\[[^\]]*\]\]", "", part).strip()  # attributes
        idents = [m.group(0) for m in _IDENT.finditer(part)]
        name: str | None = None
        m = re.search(r"([A-Za-z_]\w*)\s*$", part)
        if m and m.group(1) not in TYPE_WORDS:
            typeish = [t for t in idents[:-1] if t not in ("const", "volatile", "struct", "enum", "class", "typename")]
            if typeish or re.search(r"[*&>]\s*[A-Za-z_]\w*\s*$", part):
                name = m.group(1)
        type_text = part[: m.start()].strip() if name and m else part
        mutable_ref = bool(re.search(r"(?<!&)&\s*$", type_text)) and not re.match(r"\s*const\b", type_text) \
            and "const&" not in type_text.replace(" ", "")
        params.append(CppParam(name=name, type=" ".join(type_text.split()), mutable_ref=mutable_ref,
                               has_default=has_default))
    return tuple(params), variadic


def _after_params(text: str, pos: int, pairs: dict[int, int]) -> tuple[int, int] | None:
    """From just after a parameter list: (region start, body `{`) when a definition follows, else None."""
    n = len(text)
    while True:
        m = _QUALIFIERS.match(text, pos)
        if not m or m.end() == pos:
            break
        pos = m.end()
    while pos < n and text[pos].isspace():
        pos += 1
    if text.startswith("->", pos):  # trailing return type
        i = pos + 2
        while i < n and text[i] not in "{;=":
            if text[i] in "([" and i in pairs:
                i = pairs[i] + 1
                continue
            i += 1
        pos = i
    if text.startswith("=", pos) and not text.startswith("==", pos):  # `= default;` / `= delete;` / `= 0;`
        return None
    region = pos
    if text.startswith(":", pos) and not text.startswith("::", pos):  # constructor init list
        i = pos + 1
        while i < n:
            while i < n and text[i].isspace():
                i += 1
            m = re.compile(r"[A-Za-z_][\w:]*\s*(?:<[\w\s:,*&<>]*>)?\s*").match(text, i)
            if not m:
                return None
            i = m.end()
            if i >= n or text[i] not in "({" or i not in pairs:
                return None
            i = pairs[i] + 1
            while i < n and text[i].isspace():
                i += 1
            if text.startswith("...", i):
                i += 3
                while i < n and text[i].isspace():
                    i += 1
            if i < n and text[i] == ",":
                i += 1
                continue
            break
        pos = i
    if pos < n and text[pos] == "{" and pos in pairs:
        return region, pos
    return None


def index_file(path: str, raw: str, file_no: int, defines: dict[str, int] | None = None
               ) -> tuple[SourceFile, list[CppDef]]:
    text, macros = clean(raw, defines)
    text = expand_macros(text, macros)
    pairs = match_brackets(text)
    defs: list[CppDef] = []
    pos = 0
    while True:
        m = _NAME_PAREN.search(text, pos)
        if not m:
            break
        qual = re.sub(r"\s+", "", m.group(1))
        name = qual.rsplit("::", 1)[-1]
        open_ = m.end() - 1
        close = pairs.get(open_)
        if close is None or close < open_:
            pos = m.end()
            continue
        if name in KEYWORDS or name.lstrip("~") in KEYWORDS:
            pos = m.end()
            continue
        found = _after_params(text, close + 1, pairs)
        if found is None:
            pos = m.end()
            continue
        region, body = found
        end = pairs[body]
        params, variadic = parse_params(text[open_ + 1:close])
        parts = qual.split("::")
        if len(parts) >= 2 and parts[-1] == parts[-2]:
            name = parts[-1]  # Foo::Foo: a constructor
        if not name.startswith("~"):
            defs.append(CppDef(name=name, qualname=qual, path=path, params=params, variadic=variadic, file=file_no,
                               region=region, body=body, end=end))
        pos = end + 1
    return SourceFile(path=path, text=text, pairs=pairs), defs


def load_source(root: Path, dirs: tuple[str, ...], skip_dirs: tuple[str, ...], extensions: tuple[str, ...],
                defines: dict[str, int] | None = None) -> Source:
    """Index every source file under `root`/dirs (sorted, so the index is deterministic)."""
    if not root.exists():
        raise CodegenError(f"{root}: no such directory (pass the root of the implementation's source checkout, the one "
                           f"holding {'/, '.join(dirs)}/)")
    if not root.is_dir():
        raise CodegenError(f"{root}: not a directory (pass the root of a source checkout)")
    bases = [root / d for d in dirs if (root / d).is_dir()]
    if not bases:
        raise CodegenError(f"{root}: no {' or '.join(d + '/' for d in dirs)} directory here; pass the root of a "
                           f"source checkout (e.g. `git archive rocm-6.2.0 | tar -x -C /tmp/miopen-src`)")
    paths: list[Path] = []
    for base in bases:
        for p in base.rglob("*"):
            rel = p.relative_to(root)
            if any(part in skip_dirs for part in rel.parts[:-1]):
                continue
            if p.suffix in extensions and p.is_file():
                paths.append(p)
    paths = sorted(set(paths), key=lambda p: p.relative_to(root).as_posix())
    if not paths:
        raise CodegenError(f"{root}: no source files ({', '.join(extensions)}) under "
                           f"{', '.join(d + '/' for d in dirs)}; is this an unpacked source checkout?")
    files: list[SourceFile] = []
    defs: dict[str, list[CppDef]] = {}
    for p in paths:
        raw = p.read_text(encoding="utf-8", errors="replace")
        sf, found = index_file(p.relative_to(root).as_posix(), raw, len(files), defines)
        files.append(sf)
        for d in found:
            defs.setdefault(d.name, []).append(d)
    return Source(root=root, files=files, defs=defs)

"""libclang -> model: parse a miopen.h into a `Spec`.

The header is parsed as C++ (from MIOpen 2.20 it is valid only as C++), descending into
`extern "C"`. With the beta API on it is parsed once, with the beta macro, and what lies in
the macro's `#ifdef` blocks is flagged beta (functions, enums, constants; codegen/conditionals.py).
Where those blocks cannot decide it exactly, it is parsed twice, with and without the macro, and
whatever only the beta parse declares is flagged beta.
Any diagnostic of error severity fails the parse: a half-resolved header silently turns
unknown types into `int`.
"""

from __future__ import annotations

import _thread
import os
import re
import stat
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from . import GENERATOR_VERSION, conditionals, doc, literals, preamble, roles, validate
from .clang_env import cindex, find_builtin_include
from .digest import sha256
from .errors import HeaderError, shown
from .model import (
    SCHEMA_VERSION,
    BaseKind,
    Callback,
    CType,
    Enum,
    EnumConstant,
    Field,
    Function,
    Handle,
    HeaderInfo,
    Param,
    ParseInfo,
    Record,
    Spec,
    Typedef,
)
from .records import ReleaseRecord, load_records
from .target import EXPORTED_FILE, Target

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

_INT_KINDS = {
    "INT": "int", "UINT": "unsigned int", "LONG": "long", "ULONG": "unsigned long", "LONGLONG": "long long",
    "ULONGLONG": "unsigned long long", "SHORT": "short", "USHORT": "unsigned short", "SCHAR": "signed char",
    "UCHAR": "unsigned char", "INT128": "__int128", "UINT128": "unsigned __int128",
}
_FLOAT_KINDS = {"FLOAT": "float", "DOUBLE": "double", "LONGDOUBLE": "long double", "HALF": "_Float16"}


@dataclass(frozen=True)
class ParseOptions:
    """How to run clang over a header."""

    includes: tuple[Path, ...] = ()
    defines: tuple[str, ...] = ()
    beta: bool = False
    language: str = "c++"
    shims: bool = True
    builtin_include: Path | None | bool = True  # True: find it; None/False: none; Path: this one
    preamble: bool = True  # the target's precompiled preamble, where it cannot change the result (codegen/preamble.py)


#: the largest file a parse reads, the header or any file it includes (the largest real one is under 1 MiB)
MAX_HEADER_BYTES = 16 << 20
#: the most files the include graph of one parse may hold
MAX_INCLUDED_FILES = 4096
_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*(include_next|include|import)[ \t]*(<[^>\n]*>|"[^"\n]*")', re.M)
_HOW = "miogen reads only regular files of at most " + f"{MAX_HEADER_BYTES} bytes through #include"


def _read_bounded(path: Path, what: str) -> bytes:
    """The bytes of `path`, a regular file of at most MAX_HEADER_BYTES (checked before it is read: a FIFO or a
    device would block the read or never end it), else a HeaderError starting with `what`."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise HeaderError(f"{what}: {_kind(st.st_mode)}, not a regular file")
        if st.st_size > MAX_HEADER_BYTES:
            raise HeaderError(f"{what}: {st.st_size} bytes, larger than {MAX_HEADER_BYTES}")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced since the stat
                raise HeaderError(f"{what}: not a regular file")
            data = fh.read(MAX_HEADER_BYTES + 1)
    except OSError as exc:
        raise HeaderError(f"{what}: cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_HEADER_BYTES:
        raise HeaderError(f"{what}: larger than {MAX_HEADER_BYTES} bytes")
    return data


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _system_dirs() -> list[str]:
    """The folders clang searches where no option names them (the libclang wheel has no resource folder)."""
    import sysconfig

    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    dirs = ["/usr/local/include", *([f"/usr/include/{multiarch}"] if multiarch else []), "/usr/include"]
    return [d for d in dirs if os.path.isdir(d)]


def search_path(args: list[str]) -> tuple[list[str], list[str]]:
    """The folders clang's `#include "..."` (after the including file's own) and `#include <...>` search, in
    order, for these arguments: -iquote; then -I, -isystem, the system folders, -idirafter."""
    quote: list[str] = []
    angled: list[str] = []
    after: list[str] = []
    for i, a in enumerate(args[:-1]):
        d = os.path.abspath(args[i + 1])
        if a == "-iquote":
            quote.append(d)
        elif a in ("-I", "-isystem"):
            angled.append(d)
        elif a == "-idirafter":
            after.append(d)
    angled = [*angled, *_system_dirs(), *after]
    return [*quote, *angled], angled


def check_includes(header: Path, data: bytes, args: list[str]) -> None:
    """Refuse a header whose include graph reaches a file that is not a regular file of at most MAX_HEADER_BYTES
    (/dev/zero, a FIFO, a huge file, a symlink to one), or holds more than MAX_INCLUDED_FILES files, before clang
    opens any: each `#include` (active or not: this is a scan of the text, not a preprocessor) is resolved with
    the parse's own search path, as clang does. An include that names a macro, or that no folder holds, is left to
    clang (which reports a missing file itself). The error names the include chain, file:line:col."""
    quote, angled = search_path(args)
    seen: set[str] = {os.path.realpath(header)}
    todo: list[tuple[str, bytes, tuple[str, ...]]] = [(str(header), data, ())]
    while todo:
        path, text, chain = todo.pop()
        here = os.path.dirname(path)
        for m in _INCLUDE.finditer(text):
            directive, spelled = m.group(1), m.group(2).decode("utf-8", "replace")
            name = spelled[1:-1]
            line = text.count(b"\n", 0, m.start(2)) + 1
            col = m.start(2) - (text.rfind(b"\n", 0, m.start(2)) + 1) + 1
            where = f"{shown(path)}:{line}:{col}"
            dirs = ([here] if spelled[0] == '"' else []) + (quote if spelled[0] == '"' else angled)
            if directive == b"include_next" and here in dirs:
                dirs = dirs[dirs.index(here) + 1:]
            found = None
            if os.path.isabs(name):
                found = name if os.path.lexists(name) else None
            else:
                found = next((os.path.join(d, name) for d in dirs if os.path.lexists(os.path.join(d, name))), None)
            if found is None:
                continue
            real = os.path.realpath(found)
            if real in seen:
                continue
            seen.add(real)
            if len(seen) > MAX_INCLUDED_FILES:
                raise HeaderError(f"{where}: the include graph holds more than {MAX_INCLUDED_FILES} files; refusing "
                                  f"to parse it" + _chain(chain))
            shown_to = shown(found) + (f" (-> {shown(real)})" if real != os.path.abspath(found) else "")
            try:
                included = _read_bounded(Path(found), f"{where}: #include {spelled} is {shown_to}")
            except HeaderError as exc:
                raise HeaderError(f"{exc}{_chain(chain)}") from None
            todo.append((found, included, (*chain, where)))


def _chain(chain: tuple[str, ...]) -> str:
    return "".join(f"\n  included from {w}" for w in reversed(chain))


def read_header(path: Path, target: Target) -> tuple[bytes, str]:
    """The header's bytes and text, or a clear error for something that is not a header (checked before it is
    opened: a FIFO or a device would block the read; a file over MAX_HEADER_BYTES is refused). Each is made once:
    a header is a few hundred KB, and fresh memory is not free."""
    expected = f"expected {target.display_name}'s {target.header}"
    if not path.exists():
        raise HeaderError(f"{shown(path)}: no such file; {expected}")
    if not path.is_file():
        raise HeaderError(f"{shown(path)}: not a regular file; {expected} (pass the path of the file itself)")
    data = _read_bounded(path, f"{shown(path)}")
    if not data or data.isspace():
        raise HeaderError(f"{path}: the file is empty; {expected}")
    if b"\0" in data[:65536]:
        raise HeaderError(f"{path}: this is a binary file, not a C header; {expected}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise HeaderError(f"{path}:{line}:{col}: not UTF-8 text ({exc.reason}); {expected}") from None
    return data, text


def clang_args(opts: ParseOptions, target: Target, beta: bool) -> list[str]:
    lang = opts.language
    args = ["-x", "c++", "-std=c++17"] if lang == "c++" else ["-x", "c", "-std=c11"]
    for inc in opts.includes:
        args += ["-I", str(inc)]
    if opts.shims:
        args += ["-idirafter", str(target.shim_dir)]  # last of all: real headers anywhere win
    builtin = opts.builtin_include
    if builtin is True:
        builtin = find_builtin_include()
    if isinstance(builtin, Path):
        args += ["-isystem", str(builtin)]
    for d in (*target.default_defines, *opts.defines):
        args += ["-D", d]
    if beta:
        args += ["-D", target.beta_macro]
    return args


def _hint(message: str, target: Target) -> str | None:
    for h in target.diagnostic_hints:
        if h.match in message:
            return h.hint
    for match, hint in _GENERIC_HINTS:
        if match in message:
            return hint
    return None


def _translation_unit(header: Path, args: list[str], target: Target, text: str | None = None) -> Any:
    """The translation unit of `header`; given the header's `text`, with the target's precompiled preamble
    where it gives the same one (codegen/preamble.py)."""
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


def _top_level(tu: Any, header: Path, api_headers: tuple[str, ...] = ()) -> list[Any]:
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
    children = _calls().children
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
            if in_system(loc):  # the HIP and C/C++ headers: quick to rule out
                continue
            if in_main(loc):
                out.append(ch)
                continue
            f = loc.file  # the expansion location: macro-made declarations count too
            if f is not None and (f.name == main or f.name in others):
                out.append(ch)
    walk(tu.cursor)
    return out


class _Calls:
    """Direct libclang calls for the per-parameter hot path.

    cindex wraps each call with a result check that costs more calls (a cursor is compared with
    the null cursor, a string goes through two wrappers); for a header of thousands of functions
    these wrappers cost more than the parse. The cursors returned here are cindex's own `Cursor`, with the
    translation unit attached as cindex does, so cindex works on them; a `Type` gets it from `_Builder.typed`.
    """

    def __init__(self, ci: Any) -> None:
        import ctypes

        lib = ctypes.CDLL(ci.conf.lib._name)  # the loaded libclang, with plain function objects

        def fn(name: str, argtypes: list[Any], restype: Any) -> Any:
            f = getattr(lib, name)
            f.argtypes, f.restype = argtypes, restype
            return f

        class CXString(ctypes.Structure):  # cindex's _CXString without its __del__: disposed here, directly
            _fields_ = [("data", ctypes.c_void_p), ("private_flags", ctypes.c_uint)]

        self._num_args = fn("clang_Cursor_getNumArguments", [ci.Cursor], ctypes.c_int)
        self._arg = fn("clang_Cursor_getArgument", [ci.Cursor, ctypes.c_uint], ci.Cursor)
        self._cursor_spelling = fn("clang_getCursorSpelling", [ci.Cursor], CXString)
        self._cursor_type = fn("clang_getCursorType", [ci.Cursor], ci.Type)
        self._result_type = fn("clang_getCursorResultType", [ci.Cursor], ci.Type)
        self._type_spelling = fn("clang_getTypeSpelling", [ci.Type], CXString)
        self._cstring = fn("clang_getCString", [CXString], ctypes.c_char_p)
        self._dispose = fn("clang_disposeString", [CXString], None)
        self._raw_comment = fn("clang_Cursor_getRawCommentText", [ci.Cursor], CXString)
        self._enum_value = fn("clang_getEnumConstantDeclValue", [ci.Cursor], ctypes.c_longlong)
        self._enum_uvalue = fn("clang_getEnumConstantDeclUnsignedValue", [ci.Cursor], ctypes.c_ulonglong)
        self._extent = fn("clang_getCursorExtent", [ci.Cursor], ci.SourceRange)
        self._range_start = fn("clang_getRangeStart", [ci.SourceRange], ci.SourceLocation)
        self._range_end = fn("clang_getRangeEnd", [ci.SourceRange], ci.SourceLocation)
        uint_p = ctypes.POINTER(ctypes.c_uint)
        # cindex's `SourceLocation.line`/`.offset` (its "instantiation" location is the expansion location)
        self._expansion = fn("clang_getExpansionLocation", [ci.SourceLocation, ctypes.c_void_p, uint_p, uint_p, uint_p],
                             None)
        self._from_main = fn("clang_Location_isFromMainFile", [ci.SourceLocation], ctypes.c_int)
        # the expansion location's outputs, allocated once (a parse asks for thousands)
        self._line, self._offset = ctypes.c_uint(), ctypes.c_uint()
        self._line_p, self._offset_p = ctypes.byref(self._line), ctypes.byref(self._offset)
        visitor = ctypes.CFUNCTYPE(ctypes.c_int, ci.Cursor, ci.Cursor, ctypes.py_object)
        self._visit = fn("clang_visitChildren", [ci.Cursor, visitor, ctypes.py_object], ctypes.c_uint)

        def collect(child: Any, _parent: Any, out: list[Any]) -> int:
            out.append(child)  # cindex's visitor also asks libclang twice whether it is the null cursor
            return 1  # CXChildVisit_Continue

        self._collect = visitor(collect)

    def children(self, c: Any) -> list[Any]:
        """`c.get_children()`, as a list; kept on the cursor (the beta parse's span loop and the builder walk the
        same enums)."""
        out: list[Any] | None = getattr(c, "_miogen_children", None)
        if out is None:
            out = c._miogen_children = []
            self._visit(c, self._collect, out)
            tu = c._tu
            for ch in out:
                ch._tu = tu
        return out

    def arguments(self, c: Any) -> list[Any]:
        tu = c._tu
        out = []
        for i in range(self._num_args(c)):
            a = self._arg(c, i)
            a._tu = tu
            out.append(a)
        return out

    def _text(self, s: Any) -> bytes | None:
        """The text of the CXString `s` (None for a null one), `s` disposed."""
        text: bytes | None = self._cstring(s)
        self._dispose(s)
        return text

    def spelling(self, c: Any) -> str:
        """`c.spelling`; kept on the cursor, as `children`."""
        found: str | None = getattr(c, "_miogen_spelling", None)
        if found is None:
            found = c._miogen_spelling = (self._text(self._cursor_spelling(c)) or b"").decode("utf-8")
        return found

    def type(self, c: Any) -> Any:
        """`c.type`, without the translation unit attached."""
        return self._cursor_type(c)

    def result_type(self, c: Any) -> Any:
        """`c.result_type`, without the translation unit attached."""
        return self._result_type(c)

    def type_spelling(self, t: Any) -> str:
        return (self._text(self._type_spelling(t)) or b"").decode("utf-8")

    def raw_comment(self, c: Any) -> str | None:
        """`c.raw_comment`: its doc comment, or None."""
        text = self._text(self._raw_comment(c))
        return None if text is None else text.decode("utf-8")

    def _line_offset(self, loc: Any) -> tuple[int, int]:
        self._expansion(loc, None, self._line_p, None, self._offset_p)
        return self._line.value, self._offset.value

    def line(self, loc: Any) -> int:
        """`loc.line` of a `SourceLocation`."""
        self._expansion(loc, None, self._line_p, None, None)
        return self._line.value

    def extent(self, c: Any) -> tuple[bool, int, int, int, int]:
        """`c.extent` as (both ends in the main file, start line, start offset, end line, end offset): what
        cindex's `extent.start`/`.end` give for `.line`/`.offset`, in seven calls instead of dozens; kept on the
        cursor, as cindex keeps its own (the beta parse's span loop and the builder ask for the same ones)."""
        found: tuple[bool, int, int, int, int] | None = getattr(c, "_miogen_extent", None)
        if found is None:
            ext = self._extent(c)
            start, end = self._range_start(ext), self._range_end(ext)
            main = bool(self._from_main(start)) and bool(self._from_main(end))
            found = c._miogen_extent = (main, *self._line_offset(start), *self._line_offset(end))
        return found

    def enum_value(self, c: Any, unsigned: bool) -> int:
        """`c.enum_value` of a constant of an enum whose type is `unsigned` as cindex tells it."""
        return int((self._enum_uvalue if unsigned else self._enum_value)(c))


#: each thread's `_Calls`, by its id (an id is reused only once its thread has ended); by `_thread`, the documented
#: low-level module every process has loaded (`threading` would be one more import for a parse)
_CALLS: dict[int, _Calls] = {}


def _calls() -> _Calls:
    """This thread's `_Calls` (bound once per thread: its output buffers are its own)."""
    ident = _thread.get_ident()
    calls = _CALLS.get(ident)
    if calls is None:
        calls = _CALLS[ident] = _Calls(cindex())
    return calls


class _Builder:
    """Turns the cursors of one translation unit into model objects."""

    def __init__(self, header: Path, text: str, target: Target) -> None:
        self.ci = cindex()
        self.header = header
        self.data = text.encode("utf-8")
        self.target = target
        self.groups = doc.GroupIndex(text)
        self.handles: dict[str, str] = {}  # typedef name -> struct tag
        self.callbacks: set[str] = set()
        self.enums: set[str] = set()
        self.records: dict[str, str] = {}  # clang decl hash key -> model name
        self.tu: Any = None
        self.api_files = {str(header), *(str(header.parent / n) for n in target.api_headers)}
        # one translation unit: a type's spelling names one type, so its CType is computed once
        self._ctypes: dict[str, CType] = {}
        self._typed: dict[tuple[int, int, int], tuple[str, CType]] = {}
        self._params: dict[tuple[str, str | None, doc.ParamTag | None, str | None, str | None], Param] = {}
        self._from_main = self.ci.conf.lib.clang_Location_isFromMainFile
        self.calls = _calls()
        TK = self.ci.TypeKind
        self._unsigned_kinds = (TK.CHAR_U, TK.UCHAR, TK.CHAR16, TK.CHAR32, TK.USHORT, TK.UINT, TK.ULONG, TK.ULONGLONG,
                                TK.UINT128)

    # ------------------------------------------------------------------ types
    def _error(self, cursor: Any, message: str) -> HeaderError:
        loc = cursor.location
        return HeaderError(f"{loc.file.name if loc.file else self.header}:{loc.line}:{loc.column}: {message}")

    def valid(self, cursor: Any, item: Any) -> Any:
        """`item` if its names and strings pass codegen/validate.py; else an error at `cursor`."""
        try:
            validate.check_model(item)
        except validate.Violation as exc:
            what = type(item).__name__.lower()
            raise self._error(cursor, f"{what} {validate.short(getattr(item, 'name', None))}: {exc.path}: "
                                      f"{exc.message}") from None
        return item

    def typed(self, t: Any, where: Any) -> tuple[str, CType]:
        """(spelling, model type) of the clang type `t` (of `_Calls.type`/`.result_type` of cursor `where`), looked
        up by its identity: a CXType's kind and data pointers are the clang type, so within one translation unit
        equal types give equal keys."""
        data = t.data
        key = (t._kind_id, data[0], data[1])
        found = self._typed.get(key)
        if found is None:
            t._tu = where._tu
            spelling = self.calls.type_spelling(t)
            found = self._typed[key] = (spelling, self.ctype(t, where, spelling))
        return found

    def ctype(self, t: Any, where: Any, spelling: str | None = None) -> CType:
        """The model type of clang type `t` (cached by spelling; `where` locates errors)."""
        spelling = spelling if spelling is not None else t.spelling
        cached = self._ctypes.get(spelling)
        if cached is None:
            cached = self._ctypes[spelling] = self._new_ctype(t, where)
        return cached

    def _new_ctype(self, t: Any, where: Any) -> CType:
        TK = self.ci.TypeKind
        consts: list[bool] = []  # outermost first
        array: int | None = None
        cur = t
        while True:
            const = cur.is_const_qualified()
            while cur.kind == TK.ELABORATED:
                cur = cur.get_named_type()
            if cur.kind == TK.POINTER:
                consts.append(const)
                cur = cur.get_pointee()
                continue
            if cur.kind == TK.INCOMPLETEARRAY:  # `T x[]` as a parameter is `T *x`
                consts.append(False)
                cur = cur.element_type
                continue
            if cur.kind == TK.CONSTANTARRAY and array is None and not consts:
                array = cur.element_count
                cur = cur.element_type
                continue
            kind, name = self._base(cur, where)
            consts.append(const)
            break
        depth = len(consts) - 1
        return CType(kind=kind, name=name, depth=depth, const=tuple(reversed(consts)), array=array)

    def _base(self, t: Any, where: Any) -> tuple[BaseKind, str]:
        TK = self.ci.TypeKind
        k = t.kind
        if k == TK.TYPEDEF:
            name = t.get_declaration().spelling
            if name in self.handles:
                return "handle", name
            if name in self.callbacks:
                return "callback", name
            if name in self.enums:
                return "enum", name
            if name in self.records.values():
                return self._record_kind(t.get_canonical()), name
            canon = t.get_canonical()
            ck = canon.kind
            if ck == TK.POINTER:
                pointee = canon.get_pointee()
                return ("callback" if pointee.kind == TK.FUNCTIONPROTO else "opaque"), name
            if ck == TK.ENUM:  # an enum declared outside the API's headers: its integer type
                return self._builtin(canon.get_declaration().enum_type.get_canonical(), where)[0], \
                    _INT_KINDS.get(canon.get_declaration().enum_type.get_canonical().kind.name, "unsigned int")
            if ck == TK.RECORD:
                return self._record_kind(canon) if canon.get_size() > 0 else "incomplete", name
            kind, _ = self._builtin(canon, where)
            return kind, name
        if k == TK.RECORD:
            kind = self._record_kind(t) if t.get_size() > 0 else "incomplete"  # declared, never defined
            return kind, t.get_declaration().spelling
        if k == TK.ENUM:
            return "enum", t.get_declaration().spelling
        return self._builtin(t, where)

    def _record_kind(self, t: Any) -> BaseKind:
        return "union" if t.get_declaration().kind == self.ci.CursorKind.UNION_DECL else "struct"

    def _builtin(self, t: Any, where: Any) -> tuple[BaseKind, str]:
        name = t.kind.name
        if name == "VOID":
            return "void", "void"
        if name == "BOOL":
            return "bool", "bool"
        if name in ("CHAR_S", "CHAR_U"):
            return "char", "char"
        if name in _INT_KINDS:
            return "int", _INT_KINDS[name]
        if name in _FLOAT_KINDS:
            return "float", _FLOAT_KINDS[name]
        raise self._error(where, f"unsupported type '{t.spelling}' (kind {name}); miogen cannot bind it")

    # ------------------------------------------------------------------ declarations
    def collect_names(self, cursors: list[Any]) -> None:
        """First pass: which typedef names are handles, callbacks, enums and records."""
        CK = self.ci.CursorKind
        TK = self.ci.TypeKind
        enum_kind, typedef_kind = CK.ENUM_DECL.value, CK.TYPEDEF_DECL.value
        for c in cursors:
            k = c._kind_id
            if k == enum_kind and c.is_definition():
                self.enums.add(c.spelling)
            elif k == typedef_kind:
                canon = c.underlying_typedef_type.get_canonical()
                if canon.kind == TK.POINTER:
                    pointee = canon.get_pointee()
                    if pointee.kind == TK.FUNCTIONPROTO:
                        self.callbacks.add(c.spelling)
                    elif pointee.kind == TK.RECORD:
                        decl = pointee.get_declaration()
                        loc = decl.location.file
                        if loc is not None and loc.name in self.api_files and not list(pointee.get_fields()):
                            self.handles[c.spelling] = decl.spelling
                elif canon.kind == TK.ENUM:
                    self.enums.add(c.spelling)

    def _group(self, cursor: Any, comment: str | None, location: Any = None) -> str | None:
        return doc.ingroup(comment) or self.groups.at(self.calls.line(location or cursor.location))

    def function(self, c: Any) -> Function:
        calls = self.calls
        comment = calls.raw_comment(c)
        tags, texts = doc.params(comment)
        location = c.location
        args = calls.arguments(c)
        # default arguments are rare: look for them only where the declaration's text has an `=`
        defaults = bool(args) and self._may_have_defaults(c, location)
        params = []
        cache = self._params
        typed = self._typed
        cursor_type, cstring, dispose, cursor_spelling = (calls._cursor_type, calls._cstring, calls._dispose,
                                                          calls._cursor_spelling)
        for a in args:  # the hot loop of a parse: `_Calls.spelling` and `typed` written out
            s = cursor_spelling(a)
            name = (cstring(s) or b"").decode("utf-8") or None
            dispose(s)
            t = cursor_type(a)
            data = t.data
            found = typed.get((t._kind_id, data[0], data[1]))
            spelling, ctype = found if found is not None else self.typed(t, a)
            tag = tags.get(name) if tags and name else None
            text = texts.get(name) if texts and name else None
            default = self._default(a, ctype) if defaults else None
            key = (spelling, name, tag, default, text)
            param = cache.get(key)
            if param is None:  # a parameter like `miopenHandle_t handle`: built once, shared
                doc_tag = tag.direction if tag else None
                param = cache[key] = Param(name=name, c=spelling, type=ctype, default=default, doc_tag=doc_tag,
                                           doc_optional=bool(tag and tag.optional),
                                           role=roles.propose(ctype, name, doc_tag, self.target), doc=text)
            params.append(param)
        return Function(
            name=calls.spelling(c),
            returns=self.typed(calls.result_type(c), c)[1],
            params=tuple(params),
            group=self._group(c, comment, location),
            deprecated=doc.is_deprecated(comment),
            brief=doc.brief(comment),
        )

    def _may_have_defaults(self, c: Any, location: Any) -> bool:
        if not self._from_main(location):  # another file (or a macro): ask clang for each parameter
            return True
        _, _, start, _, end = self.calls.extent(c)
        return b"=" in self.data[start:end]

    def _default(self, parm: Any, ctype: CType) -> str | None:
        """The canonical spelling of a default argument (codegen/literals.py), or an error at it."""
        CK = self.ci.CursorKind
        for ch in parm.get_children():
            if not ch.kind.is_expression():
                continue
            ext = ch.extent
            text = self.data[ext.start.offset : ext.end.offset].decode("utf-8", "replace")
            values: dict[str, int] = {}
            for ref in ch.walk_preorder():  # enum constants the expression names, with their values
                target = ref.referenced if ref.kind == CK.DECL_REF_EXPR else None
                if target is not None and target.kind == CK.ENUM_CONSTANT_DECL:
                    values[target.spelling] = int(target.enum_value)
            decl = parm.type.get_canonical().get_declaration()
            members = ({e.spelling for e in decl.get_children() if e.kind == CK.ENUM_CONSTANT_DECL}
                       if decl is not None and decl.kind == CK.ENUM_DECL else None)
            try:
                return literals.canonical(literals.parse(text), ctype, values.get, lambda _: members)
            except literals.LiteralError as exc:
                raise self._error(parm, f"default argument of {parm.spelling or 'a parameter'}: {exc}") from None
        return None

    def enum(self, c: Any) -> Enum:
        calls = self.calls
        constant_kind = self.ci.CursorKind.ENUM_CONSTANT_DECL.value
        enum_type = c.enum_type
        unsigned = enum_type.kind in self._unsigned_kinds  # as cindex's enum_value decides it
        constants: list[EnumConstant] = []
        first_by_value: dict[int, str] = {}
        for e in calls.children(c):
            if e._kind_id != constant_kind:
                continue
            value = calls.enum_value(e, unsigned)
            name = calls.spelling(e)
            extent = calls.extent(e)
            alias = self._alias_target(e, extent) or first_by_value.get(value)
            first_by_value.setdefault(value, name)
            constants.append(
                EnumConstant(
                    name=name,
                    value=value,
                    alias_of=alias,
                    deprecated=doc.is_deprecated(calls.raw_comment(e) or self._trailing_comment(extent[4]),
                                                 member=True),
                )
            )
        return Enum(
            name=calls.spelling(c),
            underlying=enum_type.get_canonical().spelling,
            constants=tuple(constants),
            group=self._group(c, calls.raw_comment(c)),
        )

    _TRAILING = re.compile(rb"[ \t]*,?[ \t]*(/\*.*?\*/|//[^\n]*)", re.S)
    # an enumerator's own text: `NAME`, or `NAME = ...` with group 1 set when `...` is one identifier
    # (comments may sit between tokens; anything else, such as a macro, takes clang's own look)
    _ALIAS_TEXT = re.compile(rb"[A-Za-z_$][\w$]*(?:(?:\s|/\*.*?\*/|//[^\n]*)*=(?:\s|/\*.*?\*/|//[^\n]*)*"
                             rb"(?:([A-Za-z_$][\w$]*)|.*))?", re.S)

    def _trailing_comment(self, end: int) -> str | None:
        """A member comment right after a declaration ending at offset `end` (and its comma) that clang did not
        attach."""
        m = self._TRAILING.match(self.data, end)
        return m.group(1).decode("utf-8") if m else None

    def _alias_target(self, e: Any, extent: tuple[bool, int, int, int, int]) -> str | None:
        """The constant this one (whose `_Calls.extent` is `extent`) is defined as (`A = B`), if any."""
        main, _, start, _, end = extent
        if main:  # its text is in self.data: one token after `=`?
            m = self._ALIAS_TEXT.fullmatch(self.data, start, end)
            if m is None or m.group(1) is None:
                return None  # no `= IDENTIFIER` of one token: not `A = B`
        CK = self.ci.CursorKind
        for ch in e.walk_preorder():
            if ch.kind == CK.DECL_REF_EXPR and ch.referenced is not None and ch.referenced.kind == CK.ENUM_CONSTANT_DECL:
                expr = [t.spelling for t in e.get_tokens()]
                if len(expr) == 3 and expr[1] == "=":  # exactly `A = B`
                    return str(ch.referenced.spelling)
        return None

    def record(self, c: Any, name: str | None, typedef: str | None, tag: str | None) -> Record:
        CK = self.ci.CursorKind
        t = c.type
        fields: list[Field] = []
        for ch in c.get_children():
            if ch.kind == CK.FIELD_DECL:
                offset = t.get_offset(ch.spelling)
                fields.append(Field(name=ch.spelling, offset=offset // 8, type=self.ctype(ch.type, ch), c=ch.type.spelling))
            elif ch.kind in (CK.UNION_DECL, CK.STRUCT_DECL) and ch.is_anonymous():
                inner = self.record(ch, None, None, None)
                first = next((f.name for f in inner.fields if f.name), None)
                if first is None:
                    raise self._error(ch, "anonymous record without named members is not supported")
                offset = t.get_offset(first) // 8
                fields.append(Field(name=None, offset=offset, record=inner))
        return Record(
            name=name,
            kind="union" if c.kind == CK.UNION_DECL else "struct",
            size=t.get_size(),
            align=t.get_align(),
            fields=tuple(fields),
            tag=tag,
            typedef=typedef,
            group=self._group(c, c.raw_comment) if name else None,
        )

    def callback(self, c: Any) -> Callback:
        """A function-pointer typedef; parameters as written (names and typedef'd types) when spelt out."""
        TK = self.ci.TypeKind
        proto = c.underlying_typedef_type.get_canonical().get_pointee()
        written = [ch for ch in c.walk_preorder() if ch.kind == self.ci.CursorKind.PARM_DECL]
        arg_types = list(proto.argument_types()) if proto.kind == TK.FUNCTIONPROTO else []
        params = []
        for i, at in enumerate(arg_types):
            if len(written) == len(arg_types):
                name, at = written[i].spelling or None, written[i].type
            else:
                name = None
            params.append(Param(name=name, c=at.spelling, type=self.ctype(at, c)))
        return Callback(name=c.spelling, returns=self.ctype(proto.get_result(), c), params=tuple(params))


def _is_anonymous_record(c: Any) -> bool:
    toks = [t.spelling for t in c.get_tokens()][:2]
    return len(toks) == 2 and toks[1] == "{"


def build_spec(tu: Any, header: Path, text: str, target: Target, cursors: list[Any] | None = None) -> dict[str, list[Any]]:
    """All API items of one parse, in header order (`cursors`: its top-level declarations, if known)."""
    b = _Builder(header, text, target)
    CK = b.ci.CursorKind
    function_kind, enum_kind, typedef_kind = CK.FUNCTION_DECL.value, CK.ENUM_DECL.value, CK.TYPEDEF_DECL.value
    record_kinds = (CK.STRUCT_DECL.value, CK.UNION_DECL.value)
    if cursors is None:
        cursors = _top_level(tu, header, target.api_headers)
    _check_is_target(header, cursors, target)  # first: a foreign header's own types are not worth an error
    b.collect_names(cursors)
    handles: list[Handle] = []
    typedefs: list[Typedef] = []
    enums: list[Enum] = []
    records: list[Record] = []
    callbacks: list[Callback] = []
    functions: list[Function] = []
    pending_records: dict[str, Any] = {}  # usr -> anonymous record cursor awaiting its typedef
    for c in cursors:
        k = c._kind_id  # cindex's `kind` makes an object of it
        if k == function_kind:
            functions.append(b.valid(c, b.function(c)))
        elif k == enum_kind and c.is_definition():
            enums.append(b.valid(c, b.enum(c)))
        elif k in record_kinds and c.is_definition():
            if not list(c.type.get_fields()):
                continue  # the empty struct behind an opaque handle
            if _is_anonymous_record(c):
                pending_records[c.get_usr()] = c
            else:
                records.append(b.valid(c, b.record(c, c.spelling, None, c.spelling)))
                b.records[c.get_usr()] = c.spelling
        elif k == typedef_kind:
            name = c.spelling
            if name in b.handles:
                handles.append(b.valid(c, Handle(name=name, tag=b.handles[name], group=b._group(c, c.raw_comment))))
            elif name in b.callbacks:
                callbacks.append(b.valid(c, b.callback(c)))
            elif name in b.enums:
                continue
            else:
                under = c.underlying_typedef_type
                decl = under.get_canonical().get_declaration()
                usr = decl.get_usr() if decl is not None else ""
                if usr in pending_records:
                    b.records[usr] = name
                    records.append(b.valid(c, b.record(pending_records.pop(usr), name, name, None)))
                elif usr in b.records:
                    records = [b.valid(c, replace(r, typedef=name)) if r.name == b.records[usr] else r for r in records]
                else:
                    typedefs.append(b.valid(c, Typedef(name=name, type=b.ctype(under, c), c=under.spelling)))
    return {
        "handles": handles, "typedefs": typedefs, "enums": enums, "records": records,
        "callbacks": callbacks, "functions": functions,
    }


def stable_names(tu: Any, header: Path, api_headers: tuple[str, ...] = ()) -> tuple[set[str], dict[str, set[str]]]:
    """Names declared without the beta macro: every top-level name, and each enum's constants."""
    ci = cindex()
    CK = ci.CursorKind
    names: set[str] = set()
    constants: dict[str, set[str]] = {}
    for c in _top_level(tu, header, api_headers):
        names.add(c.spelling)
        if c.kind == CK.ENUM_DECL:
            constants[c.spelling] = {e.spelling for e in c.get_children() if e.kind == CK.ENUM_CONSTANT_DECL}
    return names, constants


def _one_pass_beta(header: Path, text: str, opts: ParseOptions, target: Target) -> dict[str, list[Any]] | None:
    """The items of the beta parse, beta ones flagged, from that one parse and the beta macro's conditionals
    in the API headers (codegen/conditionals.py); None where those cannot decide exactly and the caller must
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
    tu = _translation_unit(header, clang_args(opts, target, True), target, text if opts.preamble else None)
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
    cursors = _top_level(tu, header, target.api_headers)
    main_lines = lines[str(header)]
    CK = cindex().CursorKind

    calls = _calls()

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
    return _flag_beta(build_spec(tu, header, text, target, cursors), (names, constants))


def _flag_beta(items: dict[str, list[Any]], stable: tuple[set[str], dict[str, set[str]]]) -> dict[str, list[Any]]:
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


def normalise_version(text: str) -> str:
    """'3.00.0' -> '3.0.0'; raises ValueError for anything but three ASCII numbers (of up to six digits)."""
    parts = text.strip().split(".")  # (a regex here costs a parse its compile)
    if len(parts) != 3 or not all(0 < len(p) <= 6 and p.isascii() and p.isdigit() for p in parts):
        raise ValueError(text)
    return ".".join(str(int(p)) for p in parts)


def read_version_header(header: Path, target: Target) -> tuple[Path | None, str | None, str | None]:
    """The target's version header installed beside `header`: (its path or None, the version it declares
    or None, why it declares none or None)."""
    if not target.version_header or len(target.version_macros) != 3:
        return None, None, None
    vh = header.parent / target.version_header
    if not vh.is_file():
        return None, None, None
    text = vh.read_text(encoding="utf-8", errors="replace")
    values = []
    for macro in target.version_macros:
        m = re.search(rf"#[ \t]*define[ \t]+{re.escape(macro)}[ \t]+(\S+)", text, re.ASCII)
        if m is None:
            return vh, None, f"it does not define {macro}"
        value = m.group(1)
        if value.startswith("@") or value.startswith("${"):
            return vh, None, (f"{macro} is {value}, a value CMake never filled in (this is the version.h template of "
                              f"a source tree, not the configured one of an install or build)")
        if not value.isdigit() or len(value) > 6:
            return vh, None, f"{macro} is {value[:20]!r}, not a version number"
        values.append(value)
    return vh, normalise_version(".".join(values)), None


def detect_version(header: Path, target: Target) -> str | None:
    """The version from the target's version header installed beside the header, if it declares one."""
    return read_version_header(header, target)[1]


def header_version(header: Path, target: Target) -> str:
    """The version the header's version.h declares, or a HeaderError saying why there is none."""
    vh, version, problem = read_version_header(header, target)
    if version is not None:
        return version
    if vh is None:
        raise HeaderError(
            f"{header}: cannot tell the {target.display_name} version (no {target.version_header or 'version header'}"
            f" beside the header); pass --miopen-version X.Y.Z"
        )
    raise HeaderError(f"{vh}: cannot tell the {target.display_name} version: {problem}; pass --miopen-version X.Y.Z")


def parse_header(
    header: Path,
    target: Target,
    opts: ParseOptions = ParseOptions(),
    version: str | None = None,
    release: str | None = None,
) -> Spec:
    """Parse `header` into a spec (see module doc)."""
    header = header.resolve() if header.exists() else header
    data, text = read_header(header, target)
    try:
        check_includes(header, data, clang_args(opts, target, opts.beta))
    except HeaderError as exc:
        raise HeaderError(f"{exc}\n  fix: {_HOW}; remove the include, or put the folder of the real header first "
                          f"on the include path (-I)") from None
    if version is None:
        version = header_version(header, target)
    try:
        version = normalise_version(version)
    except ValueError:
        raise HeaderError(f"--miopen-version: expected X.Y.Z (three numbers); got {version!r}") from None
    installed = detect_version(header, target)
    if installed is not None and installed != version:
        raise HeaderError(f"--miopen-version {version} disagrees with {header.parent / str(target.version_header)}"
                          f", which says {installed}; leave the option out or fix it")
    items = _one_pass_beta(header, text, opts, target) if opts.beta else None
    pch_text = text if opts.preamble else None
    if items is not None:
        pass
    elif opts.beta:
        # the two parses run side by side: libclang releases the GIL while it parses
        from concurrent.futures import ThreadPoolExecutor  # only here: its import costs a tenth of a parse

        with ThreadPoolExecutor(max_workers=2) as pool:
            stable_tu = pool.submit(_translation_unit, header, clang_args(opts, target, False), target, pch_text)
            beta_tu = _translation_unit(header, clang_args(opts, target, True), target, pch_text)
            items = build_spec(beta_tu, header, text, target)
            items = _flag_beta(items, stable_names(stable_tu.result(), header, target.api_headers))
    else:
        items = build_spec(_translation_unit(header, clang_args(opts, target, False), target, pch_text), header, text,
                           target)
    defines = (*target.default_defines, *opts.defines, *((target.beta_macro,) if opts.beta else ()))
    spec = Spec(
        schema_version=SCHEMA_VERSION,
        generator_version=GENERATOR_VERSION,
        target=target.name,
        version=version,
        release=release or load_records(target.path.parent).get(version, ReleaseRecord()).shipped_in or None,
        header=HeaderInfo(name=header.name, sha256=sha256(data).hexdigest()),
        parse=ParseInfo(language=opts.language, beta=opts.beta, defines=defines),
        handles=tuple(items["handles"]),
        typedefs=tuple(items["typedefs"]),
        enums=tuple(items["enums"]),
        records=tuple(items["records"]),
        callbacks=tuple(items["callbacks"]),
        functions=tuple(items["functions"]),
    )
    spec = add_exported(spec, header, opts, target)
    try:
        validate.check_model(replace(spec, handles=(), typedefs=(), enums=(), records=(), callbacks=(), functions=()))
        validate.check_spec(spec)
    except validate.Violation as exc:
        raise HeaderError(f"{header}: {exc.path}: {exc.message}") from None
    validate.mark_valid(spec)
    return spec


def add_exported(spec: Spec, base: Path, opts: ParseOptions, target: Target) -> Spec:
    """`spec` with the functions a library of its release exports beyond its header (the target's exported.yaml),
    each marked `undeclared`: built from a translation unit of their declarations after `base` (the header itself,
    or any header declaring the same types, such as one synthesised from the spec), appended in the file's order."""
    wanted = target.exported(spec.version)
    if not wanted:
        return spec
    import tempfile

    function_kind = cindex().CursorKind.FUNCTION_DECL.value
    body = "\n".join(f.declaration.strip() for f in wanted)
    text = f'#ifdef __cplusplus\nextern "C" {{\n#endif\n{body}\n#ifdef __cplusplus\n}}\n#endif\n'
    with tempfile.TemporaryDirectory(prefix="miogen-exported-") as tmp:
        decls = Path(tmp) / EXPORTED_FILE.replace(".yaml", ".h")
        decls.write_text(text, encoding="utf-8")
        try:
            tu = _translation_unit(decls, [*clang_args(opts, target, opts.beta), "-include", str(base)], target)
        except HeaderError as exc:  # an entry that does not compile after the header (e.g. conflicting types)
            raise HeaderError(f"{target.path.parent / EXPORTED_FILE}: the declarations for {spec.version} do not "
                              f"compile after {base.name}; fix the entry (or its since/until): {exc}") from None
        b = _Builder(decls, text, target)
        b.api_files |= {str(base), *(str(base.parent / n) for n in target.api_headers)}
        b.collect_names(_top_level(tu, base, target.api_headers))
        added = [replace(b.valid(c, b.function(c)), undeclared=True) for c in _top_level(tu, decls)
                 if c._kind_id == function_kind]
    where = target.path.parent / EXPORTED_FILE
    names = [f.name for f in added]
    if len(added) != len(wanted) or len(set(names)) != len(names):
        raise HeaderError(f"{where}: each entry's declaration must declare exactly one function, once "
                          f"({len(wanted)} entries for {spec.version} declare {', '.join(names) or 'none'})")
    # a header that declares one itself (a later release may) is followed; its prototype must be the entry's
    declared = {f.name: f for f in spec.functions}
    differ = sorted(f.name for f in added if f.name in declared and
                    ([p.type for p in f.params], f.returns) != ([p.type for p in declared[f.name].params],
                                                                declared[f.name].returns))
    if differ:
        raise HeaderError(f"{where}: {', '.join(differ)}: {spec.header.name} {spec.version} declares it with other "
                          f"types than the entry; fix the entry's declaration, or give it `until: {spec.version}`")
    return replace(spec, functions=(*spec.functions, *(f for f in added if f.name not in declared)))


def _check_is_target(header: Path, cursors: list[Any], target: Target) -> None:
    """Refuse a header that is not the target's (no status enum, or none of its functions), from the names of its
    top-level declarations alone: before any type of it is bound, so a foreign header (stdio.h, zlib.h) gets this
    error rather than one about a type miogen cannot bind."""
    calls = _calls()
    CK = cindex().CursorKind
    function_kind, enum_kind, typedef_kind = CK.FUNCTION_DECL.value, CK.ENUM_DECL.value, CK.TYPEDEF_DECL.value
    functions = sorted({calls.spelling(c) for c in cursors if c._kind_id == function_kind})
    enums = sum(1 for c in cursors if c._kind_id == enum_kind and c.is_definition())
    has_status = any(c._kind_id in (enum_kind, typedef_kind) and calls.spelling(c) == target.status_type
                     for c in cursors)
    fns = [f for f in functions if f.startswith(target.function_prefix)]
    if not has_status or not fns:
        others = functions[:3]
        raise HeaderError(
            f"{header}: this does not look like {target.display_name}'s {target.header}: it declares "
            + (f"no enum {target.status_type}" if not has_status else "")
            + (" and " if not has_status and not fns else "")
            + (f"none of the target's functions (prefix {target.function_prefix}*)" if not fns else "")
            + f" (found {len(functions)} function(s)"
            + (f", e.g. {', '.join(others)}" if others else "") + f", {enums} enum(s)). "
            f"Pass the path of {target.display_name}'s {target.header}, or, for another library, its target facts "
            f"with --target (these are {target.path})"
        )

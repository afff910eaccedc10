"""Direct libclang calls for the parse's hot path, one set per thread."""

from __future__ import annotations

import _thread
import os
from typing import Any

from .clang_env import cindex


class HotCalls:
    """Direct libclang calls for the per-parameter hot path.

    cindex wraps each call with a result check that costs more calls (a cursor is compared with
    the null cursor, a string goes through two wrappers); for a header of thousands of functions
    these wrappers cost more than the parse. The cursors returned here are cindex's own `Cursor`, with the
    translation unit attached as cindex does, so cindex works on them; a `Type` gets it from `Builder.typed`.
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
        self._is_const = fn("clang_isConstQualifiedType", [ci.Type], ctypes.c_uint)
        self._named_type = fn("clang_Type_getNamedType", [ci.Type], ci.Type)
        self._pointee = fn("clang_getPointeeType", [ci.Type], ci.Type)
        self._type_declaration = fn("clang_getTypeDeclaration", [ci.Type], ci.Cursor)
        self._canonical = fn("clang_getCanonicalType", [ci.Type], ci.Type)
        self._underlying = fn("clang_getTypedefDeclUnderlyingType", [ci.Cursor], ci.Type)
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
        self._get_file = fn("clang_getFile", [ctypes.c_void_p, ctypes.c_char_p], ctypes.c_void_p)
        self._file_is_equal = fn("clang_File_isEqual", [ctypes.c_void_p, ctypes.c_void_p], ctypes.c_int)
        # the expansion location's outputs, allocated once (a parse asks for thousands)
        self._file, self._line, self._offset = ctypes.c_void_p(), ctypes.c_uint(), ctypes.c_uint()
        self._file_p, self._line_p, self._offset_p = (ctypes.byref(self._file), ctypes.byref(self._line),
                                                      ctypes.byref(self._offset))
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

    def is_const(self, t: Any) -> bool:
        """`t.is_const_qualified()`."""
        return bool(self._is_const(t))

    # types and cursors made from another, with its translation unit attached as cindex attaches it (cindex's own
    # methods, used on them later, read it)
    def named_type(self, t: Any) -> Any:
        """`t.get_named_type()` (an elaborated type's)."""
        return _attach(self._named_type(t), t)

    def pointee(self, t: Any) -> Any:
        """`t.get_pointee()`."""
        return _attach(self._pointee(t), t)

    def canonical(self, t: Any) -> Any:
        """`t.get_canonical()`."""
        return _attach(self._canonical(t), t)

    def underlying(self, c: Any) -> Any:
        """`c.underlying_typedef_type` of a typedef's cursor."""
        return _attach(self._underlying(c), c)

    def type_declaration(self, t: Any) -> Any:
        """`t.get_declaration()` of a type that has one (a typedef, a record, an enum)."""
        return _attach(self._type_declaration(t), t)

    def type_spelling(self, t: Any) -> str:
        return (self._text(self._type_spelling(t)) or b"").decode("utf-8")

    def raw_comment(self, c: Any) -> str | None:
        """`c.raw_comment`: its doc comment, or None."""
        text = self._text(self._raw_comment(c))
        return None if text is None else text.decode("utf-8")

    def _in_main(self, loc: Any, tu: Any) -> tuple[bool, int, int]:
        """(whether the expansion location of `loc` is in the translation unit's main file, its line, its offset):
        one call, where its file was seen before (each file handle's answer is kept on `tu`, whose files they are).
        A macro location counts where its expansion is: the offset then indexes the main file's bytes, which is
        what the callers ask it for (`clang_Location_isFromMainFile` says no to any macro location)."""
        self._expansion(loc, self._file_p, self._line_p, None, self._offset_p)
        handle = self._file.value
        files: dict[int | None, bool] | None = getattr(tu, "_miogen_main_files", None)
        if files is None:
            files = tu._miogen_main_files = {None: False}
        main = files.get(handle)
        if main is None:
            main_file = getattr(tu, "_miogen_main_file", None)
            if main_file is None:
                main_file = tu._miogen_main_file = self._get_file(tu.obj, os.fsencode(tu.spelling))
            main = files[handle] = bool(self._file_is_equal(handle, main_file))
        return main, self._line.value, self._offset.value

    def line(self, loc: Any) -> int:
        """`loc.line` of a `SourceLocation`."""
        self._expansion(loc, None, self._line_p, None, None)
        return self._line.value

    def extent(self, c: Any) -> tuple[bool, int, int, int, int]:
        """`c.extent` as (both ends' expansion locations in the main file, start line, start offset, end line, end
        offset): what cindex's `extent.start`/`.end` give for `.line`/`.offset`, in five calls instead of dozens;
        kept on the cursor, as cindex keeps its own (the beta parse's span loop and the builder ask for the same
        ones)."""
        found: tuple[bool, int, int, int, int] | None = getattr(c, "_miogen_extent", None)
        if found is None:
            ext = self._extent(c)
            tu = c._tu
            start_main, start_line, start_offset = self._in_main(self._range_start(ext), tu)
            end_main, end_line, end_offset = self._in_main(self._range_end(ext), tu)
            found = c._miogen_extent = (start_main and end_main, start_line, start_offset, end_line, end_offset)
        return found

    def enum_value(self, c: Any, unsigned: bool) -> int:
        """`c.enum_value` of a constant of an enum whose type is `unsigned` as cindex tells it."""
        return int((self._enum_uvalue if unsigned else self._enum_value)(c))


def _attach(made: Any, source: Any) -> Any:
    """`made` with the translation unit of the cursor or type `source` it was made from."""
    made._tu = source._tu
    return made


#: each thread's `HotCalls`, by its id (an id is reused only once its thread has ended); by `_thread`, the documented
#: low-level module every process has loaded (`threading` would be one more import for a parse)
_CALLS: dict[int, HotCalls] = {}


def hot_calls() -> HotCalls:
    """This thread's `HotCalls` (bound once per thread: its output buffers are its own)."""
    ident = _thread.get_ident()
    calls = _CALLS.get(ident)
    if calls is None:
        calls = _CALLS[ident] = HotCalls(cindex())
    return calls

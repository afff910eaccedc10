"""Direct calls: the form each checked argument takes when a wrapper calls a function bound without argtypes."""

from __future__ import annotations

from typing import assert_never

from ..semantics import forms
from ..semantics.resolved import ParamSem


# --------------------------------------------------------------------------- direct calls
#
# ctypes converts each argument through its argtype's from_param on every call (most of a call's cost
# for a short C function). The typed wrappers have already checked every argument, so they call a
# second binding of each function without argtypes (raw.DIRECT), passing each argument in a form ctypes
# passes as it is: a Python int for an integer or enum of 32 bits or less (ctypes passes it as a C int,
# which is also the bit pattern of an unsigned int), and a ctypes object for everything else (wider
# integers and floating values wrapped here; addresses as c_void_p, handles as the c_void_p their
# object keeps). A parameter with no such form makes its function use the prototype.

#: argtypes a checked Python int (or bool, or IntEnum member) is passed as, exactly
_AS_C_INT = frozenset({"ctypes.c_int", "ctypes.c_uint", "ctypes.c_int32", "ctypes.c_uint32", "ctypes.c_short",
                       "ctypes.c_ushort", "ctypes.c_int16", "ctypes.c_uint16", "ctypes.c_byte", "ctypes.c_ubyte",
                       "ctypes.c_int8", "ctypes.c_uint8", "ctypes.c_bool"})
#: argtypes whose checked Python value is wrapped in that ctypes type (the api module's alias, `_c_...`)
_WRAPPED = frozenset({"ctypes.c_long", "ctypes.c_ulong", "ctypes.c_longlong", "ctypes.c_ulonglong", "ctypes.c_size_t",
                      "ctypes.c_ssize_t", "ctypes.c_int64", "ctypes.c_uint64", "ctypes.c_float", "ctypes.c_double"})
#: the api module's aliases of those ctypes types
DIRECT_ALIASES = tuple(sorted(("_" + t.removeprefix("ctypes."), t) for t in _WRAPPED))


def direct_arg(p: ParamSem, arg: str, argtype: str) -> str | None:
    """The expression passing `arg` (the wrapper's checked C argument) to a function without argtypes,
    or None where the parameter has no form that ctypes passes unconverted and exactly."""
    form = p.form
    otherwise: str | None = None  # what passes where the argtype is neither `void *` nor a pointer, array or bytes
    match form:
        case forms.Value() | forms.Length():
            return _by_value(p.type.kind, arg, argtype)
        case forms.Buffer() | forms.ElementArray():
            void_p: str | None = arg  # a c_void_p (device_arg) or a reference to host memory made here, or None
        case forms.Opaque():  # an int address, or None where NULL is allowed
            void_p = f"None if {arg} is None else _addr({arg})" if p.nullable else f"_addr({arg})"
        case (forms.HostScalar() | forms.ElementScalar() | forms.InScalar() | forms.InOutScalar() | forms.OutScalar()
              | forms.Count()):
            void_p = arg if p.memory == "host" else None  # a reference to host memory made here, or None
        case forms.Callback():
            void_p, otherwise = None, arg
        case forms.InString() | forms.OutString() | forms.InBlob() | forms.OutBlob() | forms.InArray() | forms.OutArray():
            void_p = None
        case _:
            assert_never(form)
    if argtype == "ctypes.c_void_p":
        return void_p
    if argtype.startswith(("ctypes.POINTER(", "(")) or argtype == "ctypes.c_char_p":
        return arg  # references, arrays, typed pointers, bytes, None: what the prototype accepts, passed as is
    return otherwise


def _by_value(kind: str, arg: str, argtype: str) -> str | None:
    """`direct_arg` of a by-value argument of C type kind `kind`."""
    if kind in ("int", "enum", "bool", "float"):
        if argtype in _AS_C_INT:
            return arg
        return f"_{argtype.removeprefix('ctypes.')}({arg})" if argtype in _WRAPPED else None  # long double: none
    if kind == "handle":
        return arg  # the object's c_void_p, or None (NULL)
    if kind == "opaque":
        return f"_addr({arg})"  # an int address or None
    if kind == "callback":
        return arg  # a CFUNCTYPE object (a null one for None)
    return None  # a struct or union by value, a char

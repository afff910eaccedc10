"""C types of the model -> ctypes expressions, Python type hints and integer ranges."""

from __future__ import annotations

from .model import CType, Spec

INT_CTYPES = {
    "int": "ctypes.c_int", "unsigned int": "ctypes.c_uint", "long": "ctypes.c_long", "unsigned long": "ctypes.c_ulong",
    "long long": "ctypes.c_longlong", "unsigned long long": "ctypes.c_ulonglong", "short": "ctypes.c_short",
    "unsigned short": "ctypes.c_ushort", "signed char": "ctypes.c_byte", "unsigned char": "ctypes.c_ubyte",
    "size_t": "ctypes.c_size_t", "ssize_t": "ctypes.c_ssize_t",
    "int8_t": "ctypes.c_int8", "uint8_t": "ctypes.c_uint8", "int16_t": "ctypes.c_int16", "uint16_t": "ctypes.c_uint16",
    "int32_t": "ctypes.c_int32", "uint32_t": "ctypes.c_uint32", "int64_t": "ctypes.c_int64", "uint64_t": "ctypes.c_uint64",
}
FLOAT_CTYPES = {"float": "ctypes.c_float", "double": "ctypes.c_double", "long double": "ctypes.c_longdouble"}

# (bits, signed) of each integer spelling on the LP64 targets MIOpen supports
INT_BITS = {
    "int": (32, True), "unsigned int": (32, False), "long": (64, True), "unsigned long": (64, False),
    "long long": (64, True), "unsigned long long": (64, False), "short": (16, True), "unsigned short": (16, False),
    "signed char": (8, True), "unsigned char": (8, False), "size_t": (64, False), "ssize_t": (64, True),
    "int8_t": (8, True), "uint8_t": (8, False), "int16_t": (16, True), "uint16_t": (16, False),
    "int32_t": (32, True), "uint32_t": (32, False), "int64_t": (64, True), "uint64_t": (64, False),
}


def int_range(name: str) -> tuple[int, int]:
    bits, signed = INT_BITS[name]
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


def enum_ctype(spec: Spec, name: str) -> str:
    underlying = spec.enum(name).underlying if any(e.name == name for e in spec.enums) else "unsigned int"
    return INT_CTYPES.get(underlying, "ctypes.c_uint")


def base_ctype(t: CType, spec: Spec) -> str:
    """ctypes expression for the base type of `t` (depth ignored)."""
    k = t.kind
    if k == "void":
        return "None"
    if k == "bool":
        return "ctypes.c_bool"
    if k == "char":
        return "ctypes.c_char"
    if k == "int":
        return INT_CTYPES[t.name]
    if k == "float":
        return FLOAT_CTYPES[t.name]
    if k == "enum":
        return enum_ctype(spec, t.name)
    if k in ("struct", "union"):
        return t.name
    if k == "callback":
        return t.name
    return "ctypes.c_void_p"  # handle, opaque


def ctype(t: CType, spec: Spec) -> str:
    """ctypes expression for the whole type (argtypes, restype, struct fields)."""
    base = base_ctype(t, spec)
    if t.depth == 0:
        expr = base
    elif t.kind == "void" and t.depth == 1:
        expr = "ctypes.c_void_p"
    elif t.kind == "char" and t.depth == 1:
        expr = "ctypes.c_char_p"
    else:
        opaque_target = t.kind in ("void", "incomplete")  # a pointer to these is an untyped address
        inner = "ctypes.c_void_p" if opaque_target else base
        expr = inner
        for _ in range(t.depth - (1 if opaque_target else 0)):
            expr = f"ctypes.POINTER({expr})"
    if t.array is not None:
        expr = f"({expr} * {t.array})"
    return expr

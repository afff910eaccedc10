"""The known values a stub library writes and the call-through driver expects back.

Parameter index i, element k, struct field m: ints 2+i(+k+m), floats 0.25+i(+k+m), bools true, enums the
enum's last constant, handles 0x10000+0x100*i(+8k), pointers 0x20000+0x100*i(+8k), blobs bytes (i+k)&255,
strings "stub"; an output count is min(length, 2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..spec.ctypes_map import INT_BITS
from ..spec.model import Spec

if TYPE_CHECKING:
    from .resolved import Semantics


def out_int(i: int, k: int = 0, m: int = 0) -> int:
    return 2 + i + k + m


def wide(type_name: str, small: int) -> int:
    """A value that uses the whole width (and sign) of an integer type, so width/sign mix-ups show."""
    bits, signed = INT_BITS[type_name]
    if bits == 8:
        return small
    offset = {16: 1000, 32: 70000, 64: 1 << 40}[bits]
    if signed:
        return -(offset + small)
    return (1 << (bits - 1)) + small


def out_float(i: int, k: int = 0, m: int = 0) -> float:
    return 0.25 + i + k + m


def out_handle(i: int, k: int = 0) -> int:
    return 0x10000 + 0x100 * i + 8 * k


def out_ptr(i: int, k: int = 0) -> int:
    return 0x20000 + 0x100 * i + 8 * k


def count_of(n: int) -> int:
    return min(n, 2)


#: elements the driver passes in (and the stub logs of) an input array MIOpen sizes itself
UNSIZED_LENGTH = 3


def out_element(i: int, k: int = 0) -> int:
    """The value a stub writes into element k of an output whose type another argument chooses (it fits
    every numeric encoding exactly: half, bfloat16, int8 ...)."""
    return 2 + i + k


def chosen_type(sem: Semantics, table: str) -> tuple[int, str]:
    """The type constant (value, encoding) the call-through driver picks for a run-time typed value:
    float16 where the table has it (it exercises packing), else float32, else the first numeric one."""
    types = sem.tables[table].types
    for want in ("float16", "float32", "int32", "int64", "int8"):
        for value, enc in types.items():
            if enc == want:
                return value, enc
    value, enc = next(iter(types.items()))
    return value, enc


def last_enum(spec: Spec, name: str) -> int:
    """The value of the last constant of enum `name` (what a stub writes for it)."""
    return spec.enum(name).constants[-1].value


def fixed_outputs(spec: Spec, version_getter: str | None) -> dict[tuple[str, str], int]:
    """(function, out parameter) -> the value a stub writes unless a test scripts another: the version
    function reports the spec's release, so the bindings select that release for the stub."""
    if not version_getter or not any(f.name == version_getter for f in spec.functions):
        return {}
    outs = [p.name or f"arg{i}" for i, p in enumerate(spec.function(version_getter).params)]
    return {(version_getter, n): v for n, v in zip(outs, spec.version)}


def length_sources(sem: Semantics) -> set[tuple[str, str]]:
    """(function, parameter) pairs whose output sizes another call's array: kept small by the stub."""
    return {(p.length_call.call, p.length_call.result)
            for fs in sem.functions.values() for p in fs.params if p.length_call}

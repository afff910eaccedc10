"""Values of a run-time element type: packing and unpacking scalars and arrays by encoding (float16, bfloat16, ...)."""

from __future__ import annotations

import ctypes
import math
import struct
from collections.abc import Mapping, Sequence

from ._convert import as_bool, as_float, as_int
from ._handlebase import HandleBase
from ._text import name_list, what

TYPE_CHECKING = False  # typing stays unimported at run time (import cost); type checkers read the block below
if TYPE_CHECKING:
    from typing import Any

# --------------------------------------------------------------------------- values of a run-time element type
#
# A host scalar or array whose C type another argument chooses (a tensor's data type, an attribute type):
# the annotations' element tables give each type's encoding; values are packed into a zeroed cell of at
# least 8 bytes, so a reader that peeks at more bytes than the element (a float test of a half) stays inside.

_FORMATS = {"float16": "=e", "float32": "=f", "float64": "=d", "int8": "=b", "uint8": "=B", "int16": "=h",
            "uint16": "=H", "int32": "=i", "uint32": "=I", "int64": "=q", "uint64": "=Q", "bool": "=?", "pointer": "@P"}
ELEMENT_SIZES: dict[str, int] = {"bfloat16": 2, **{k: struct.calcsize(f) for k, f in _FORMATS.items()}}
_INT_BITS = {"int8": (8, True), "uint8": (8, False), "int16": (16, True), "uint16": (16, False),
             "int32": (32, True), "uint32": (32, False), "int64": (64, True), "uint64": (64, False)}
_CELL = ctypes.c_char * 8


def element_encoding(table: Mapping[int, str], names: Mapping[int, str], type_value: int, name: str, fn: str,
                     source: str) -> str:
    """The encoding of type `type_value` (an enum value) in `table`, or a ValueError naming it."""
    enc = table.get(type_value)
    if enc is None:
        raise ValueError(f"{fn}: {name} is read in the type {source} names, {names.get(type_value, type_value)}, "
                         f"which has no host form (types with one: "
                         f"{name_list(names.get(v, str(v)) for v in table)})")
    return enc


def as_real(value: object, name: str, fn: str) -> int | float:
    """A number for an element of a run-time type (ints stay exact; bool refused; a ctypes.c_float or c_double
    gives its value, as the docstrings of element-typed scaling factors promise)."""
    if type(value) is float or type(value) is int:
        return value
    if type(value) is ctypes.c_float or type(value) is ctypes.c_double:
        return float(value.value)
    if isinstance(value, bool):
        raise TypeError(f"{fn}: {name} must be a number; got {what(value)}")
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float) or (hasattr(value, "__float__") and not isinstance(value, (str, bytes))):
        return float(value)
    raise TypeError(f"{fn}: {name} must be a number; got {what(value)}")


def pack_element(value: object, enc: str, name: str, fn: str) -> bytes:
    """One value in the native bytes of `enc`: float16 via struct 'e', bfloat16 as the upper half of the
    float32 (round to nearest even), integers range-checked, bool, pointer (int address, handle or None)."""
    if enc == "pointer":
        if value is None:
            return struct.pack("@P", 0)
        if isinstance(value, HandleBase):
            return struct.pack("@P", value.address)
        return struct.pack("@P", as_int(value, 0, 2**(8 * ELEMENT_SIZES["pointer"]) - 1, name, fn))
    if enc == "bool":
        return struct.pack("=?", as_bool(value, name, fn))
    v = as_real(value, name, fn)
    bits = _INT_BITS.get(enc)
    if bits is not None:
        if isinstance(v, float):
            if not v.is_integer():
                raise ValueError(f"{fn}: {name} must be an integer for a {enc} value; got {v!r}")
            v = int(v)
        n, signed = bits
        lo, hi = (-(1 << (n - 1)), (1 << (n - 1)) - 1) if signed else (0, (1 << n) - 1)
        if not lo <= v <= hi:
            raise ValueError(f"{fn}: {name} must be in [{lo}, {hi}] for a {enc} value; got {v}")
        return struct.pack(_FORMATS[enc], v)
    f = as_float(v, name, fn)  # an int too large for a double: an OverflowError naming the parameter
    try:
        if enc == "bfloat16":
            if math.isnan(f):
                return struct.pack("=H", 0x7FC0)
            f32: int = struct.unpack("=I", struct.pack("=f", f))[0]
            rounded = (f32 + 0x7FFF + ((f32 >> 16) & 1)) >> 16  # round to nearest even
            if rounded > 0xFFFF or (rounded & 0x7F80) == 0x7F80 and not math.isinf(f):
                raise OverflowError
            return struct.pack("=H", rounded)
        return struct.pack(_FORMATS[enc], f)
    except (OverflowError, struct.error):
        raise ValueError(f"{fn}: {name}={f!r} does not fit in a {enc} value") from None


def unpack_element(data: bytes, enc: str) -> Any:
    """The Python value of one element in the native bytes of `enc`."""
    if enc == "bfloat16":
        return float(struct.unpack("=f", struct.pack("=I", struct.unpack("=H", data[:2])[0] << 16))[0])
    value = struct.unpack(_FORMATS[enc], data[:ELEMENT_SIZES[enc]])[0]
    if enc == "pointer":
        return value or None
    return value


def element_scalar(value: object, enc: str, name: str, fn: str) -> Any:
    """A host scalar of a run-time type, by reference: `value` packed into a zeroed 8-byte cell."""
    return ctypes.byref(_CELL.from_buffer_copy(pack_element(value, enc, name, fn).ljust(8, b"\0")))


def element_array(values: Sequence[object] | None, enc: str, name: str, fn: str) -> Any:
    """Host memory holding `values` in the encoding `enc` (None stays NULL)."""
    if values is None:
        return None
    data = b"".join(pack_element(v, enc, f"{name}[{i}]", fn) for i, v in enumerate(values))
    return ctypes.create_string_buffer(data, max(len(data), 8))


def element_out(count: int, enc: str) -> Any:
    """Zeroed host memory for `count` output elements of `enc` (at least one 8-byte cell)."""
    return ctypes.create_string_buffer(max(count * ELEMENT_SIZES[enc], 8))


def element_values(buf: Any, enc: str, count: int) -> list[Any]:
    """`count` elements of `enc` read back from `buf`."""
    size = ELEMENT_SIZES[enc]
    raw = bytes(buf)
    return [unpack_element(raw[k * size:(k + 1) * size], enc) for k in range(count)]

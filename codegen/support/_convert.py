"""Argument conversion: a Python value checked and converted to what the C function takes (scalars, enums,
handles, strings, sequences, arrays), with an error naming the function and the parameter."""

from __future__ import annotations

import ctypes
import enum
import struct
from collections.abc import Callable, Mapping, Sequence

from . import _state
from ._handlebase import HandleBase, retired_note
from ._pointers import as_device_ptr, as_opaque, check_address
from ._selection import missing_name
from ._text import cut, name_list, what

TYPE_CHECKING = False  # typing stays unimported at run time (import cost); type checkers read the block below
if TYPE_CHECKING:
    from typing import Any, NoReturn, TypeVar
    E = TypeVar("E", bound=enum.IntEnum)
    H = TypeVar("H", bound="HandleBase")


class EnumMeta(enum.EnumType):
    """Enum classes whose missing members say which releases have them."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return cls._member_map_[name]
        except KeyError:
            raise AttributeError(missing_name(f"{enum_py_name(cls)}.{cut(name)}")) from None


#: C enum name -> the typed API's name, filled in by the releases' api modules
_ENUM_PY: dict[str, str] = {}


def enum_py_name(cls: type) -> str:
    """The typed API's name of an enum class (DataType for miopenDataType_t)."""
    return _ENUM_PY.get(cls.__name__, cls.__name__)


def enum_expected(cls: type[enum.Enum], ints: bool = True, spellings: str = "") -> str:
    """What an argument of enum `cls` may be, for an error message: a few members and how to list them all,
    then (`ints`) its int value and `spellings` (what else the caller takes, e.g. "a name (relu, ...)")."""
    py = enum_py_name(cls)
    parts = [f"a member of {py} ({name_list((m.name for m in cls), see=f'list({_TOP}.{py})')})"]
    parts += ["its int value"] * ints + [spellings] * bool(spellings)
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} or {parts[-1]}"


#: the top package, where the typed API's enums are (miopen.DataType)
_TOP = __name__.split(".")[0]


def as_int(value: object, lo: int, hi: int, name: str, fn: str) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{fn}: {name} must be an int; got {what(value)}")
    v: int = value.__index__()
    if not lo <= v <= hi:
        if v < 0 <= lo:
            raise ValueError(f"{fn}: {name} must not be negative; got {v}")
        raise ValueError(f"{fn}: {name} must be in [{lo}, {hi}]; got {v}")
    return v


#: the largest finite C float; what lies beyond rounds to infinity (or is refused, see as_float32)
FLT_MAX = 3.4028234663852886e+38


def as_float(value: object, name: str, fn: str) -> float:
    """A C double: a float, an int (exactly representable or rounded; too large ones are refused) or
    anything with __float__ (not str/bytes)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        if hasattr(value, "__float__") and not isinstance(value, (str, bytes)):
            result = value.__float__()
            if not isinstance(result, float):
                raise TypeError(f"{fn}: {name}: __float__ of {type(value).__name__} returned {type(result).__name__}")
            return result
        raise TypeError(f"{fn}: {name} must be a float; got {what(value)}")
    try:
        return float(value)
    except OverflowError:
        raise OverflowError(f"{fn}: {name}={value} is too large for a C double") from None


def as_float32(value: object, name: str, fn: str) -> float:
    """A C float: `as_float`, then refused if it is finite but would round to infinity (1e300 is an
    OverflowError naming the parameter, never a silent inf); inf and nan pass as they are."""
    v = as_float(value, name, fn)
    if -FLT_MAX <= v <= FLT_MAX or v != v or v in (float("inf"), float("-inf")):
        return v
    try:
        struct.pack("<f", v)  # C's round-to-nearest: just above FLT_MAX may still round down to it
    except OverflowError:
        raise OverflowError(f"{fn}: {name}={v!r} does not fit a C float (at most {FLT_MAX!r} in magnitude)") from None
    return v


def as_char(value: object, name: str, fn: str) -> bytes:
    """A C char: one byte (bytes of length 1), or an int in [-128, 255]."""
    if isinstance(value, (bytes, bytearray)) and len(value) == 1:
        return bytes(value)
    if isinstance(value, int) and not isinstance(value, bool):
        if -128 <= value <= 255:
            return bytes([value & 0xFF])
        raise ValueError(f"{fn}: {name} must be a char (an int in [-128, 255] or one byte); got {value}")
    raise TypeError(f"{fn}: {name} must be a char (an int in [-128, 255] or one byte); got {what(value)}")


def as_bool(value: object, name: str, fn: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise TypeError(f"{fn}: {name} must be a bool; got {what(value)}")


def as_enum(value: object, cls: type[E], name: str, fn: str, *, ints: bool = True, spellings: str = "") -> E:
    """A member of `cls` from a member (or the same-named member of another release's `cls`) or, with `ints`,
    its int value; a member of any other enum, a bool or anything else is refused. `spellings` tells the
    error what else the caller accepts (the runtime's names)."""
    if isinstance(value, cls):
        return value
    if type(value).__name__ == cls.__name__ and isinstance(value, enum.IntEnum):
        # the same enum of another release's bindings (kept from before a rebind): same name, same meaning
        member = cls._member_map_.get(value.name)
        if member is None:
            raise ValueError(f"{fn}: {name}: {missing_name(f'{enum_py_name(cls)}.{value.name}')}")
        return member  # type: ignore[return-value]
    if isinstance(value, enum.Enum) or isinstance(value, bool) or not isinstance(value, int) or not ints:
        raise TypeError(f"{fn}: {name} must be {enum_expected(cls, ints, spellings)}; got {what(value)}")
    try:
        return cls(value)
    except ValueError:
        valid = name_list((f"{m.name}={m.value}" for m in cls), see=f"list({_TOP}.{enum_py_name(cls)})")
        raise ValueError(f"{fn}: {name}={value} is not a {cls.__name__} value; valid: {valid}") from None


def to_enum(cls: type[E], value: int) -> E | int:
    """An enum member, or the plain int when the library returns a value this release does not know."""
    try:
        return cls(value)
    except ValueError:
        return value


def as_handle(value: object, cls: type[H], name: str, fn: str, nullable: bool) -> int | None:
    if value is None:
        if nullable:
            return None
        raise TypeError(f"{fn}: {name} must be a {cls.__name__}; got None")
    if not isinstance(value, cls):
        if type(value).__name__ == cls.__name__:
            raise TypeError(f"{fn}: {name} is a {cls.__name__} made under a library that is no longer loaded "
                            f"(now: {_state.lib_path}, release {_state.bound}); make a new one")
        raise TypeError(f"{fn}: {name} must be a {cls.__name__}; got {what(value)}")
    ptr = value._ptr
    if ptr is None:
        raise ValueError(f"{fn}: {name} is a closed {cls.__name__}{retired_note(value)}")
    return ptr


def refuse_frozen(value: object, name: str, fn: str) -> NoReturn:
    """A shared (frozen) descriptor passed to a function that would change it: a ValueError naming both."""
    raise ValueError(f"{fn}: {name} is a shared descriptor ({type(value).__name__}: the runtime's cache hands it to "
                     f"every tensor or op of its kind), which must not be changed; create a descriptor of your own "
                     f"(create_* then {fn}) instead")


def handle_arg(value: object, cls: type[H], name: str, fn: str, nullable: bool, writes: bool = False
               ) -> ctypes.c_void_p | None:
    """A handle argument as the wrappers pass it (the object's c_void_p; None for NULL where allowed), for
    what their fast path (an open object of `cls` or of one of its `_fast_types`) did not take: an open object of a
    subclass takes one isinstance, and is refused where it is shared (`_frozen`) and the function `writes` the
    handle (a Set/Init function's first argument, decided by the generator); anything else gets `as_handle`'s checks
    and errors."""
    if isinstance(value, cls):
        cp = value._cp
        if type(cp) is ctypes.c_void_p:
            if writes and value._frozen:
                refuse_frozen(value, name, fn)
            return cp
    ptr = as_handle(value, cls, name, fn, nullable)
    if ptr is None:
        return None
    return ctypes.c_void_p(check_address(ptr, name, fn))  # a subclass that replaced _cp: its address, checked



_host_float = ctypes.c_float
_byref = ctypes.byref


def host_scalar(value: object, name: str, fn: str) -> Any:
    """A host scaling factor: a float (passed as a C float: one too large for it is an OverflowError)
    or a ctypes c_float/c_double (passed as is)."""
    if isinstance(value, (ctypes.c_float, ctypes.c_double)):
        return _byref(value)
    return _byref(_host_float(as_float32(value, name, fn)))


_host_double = ctypes.c_double


def float_scalar(value: object, name: str, fn: str) -> Any:
    """A host scalar the library reads as float whatever the tensor type: a number, c_float, or c_double
    (its value, passed as float: a double's bytes would be misread)."""
    if isinstance(value, ctypes.c_float):
        return _byref(value)
    if isinstance(value, ctypes.c_double):
        return _byref(_host_float(as_float32(value.value, name, fn)))
    return _byref(_host_float(as_float32(value, name, fn)))


def double_scalar(value: object, name: str, fn: str) -> Any:
    """A host scalar the library reads as double whatever the tensor type."""
    if isinstance(value, ctypes.c_double):
        return _byref(value)
    if isinstance(value, ctypes.c_float):
        return _byref(_host_double(value.value))
    return _byref(_host_double(as_float(value, name, fn)))



def as_sequence(value: object, name: str, fn: str, nullable: bool) -> Sequence[object] | None:
    """A Python sequence (not str/bytes), or None where allowed."""
    if value is None:
        if nullable:
            return None
        raise TypeError(f"{fn}: {name} must be a sequence; got None")
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"{fn}: {name} must be a sequence; got {what(value)}")
    return value



def as_cstring(value: object, name: str, fn: str, nullable: bool) -> bytes | None:
    if value is None and nullable:
        return None
    if isinstance(value, str):
        if "\0" in value:
            raise ValueError(f"{fn}: {name} must not contain NUL characters")
        return value.encode("utf-8")
    if isinstance(value, bytes):
        return value
    raise TypeError(f"{fn}: {name} must be a str; got {what(value)}")


def as_blob(value: object, name: str, fn: str) -> tuple[Any, int]:
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        return ctypes.create_string_buffer(data, len(data)), len(data)
    raise TypeError(f"{fn}: {name} must be bytes; got {what(value)}")


def check_length(value: object, name: str, fn: str, hi: int = (1 << 63) - 1) -> int:
    """An element count the caller gave for an output array or string: an int in [0, hi] (the range
    of its C type); it sizes a buffer allocated before the parameter's own conversion runs."""
    return as_int(value, 0, hi, name, fn)


class Elem:
    """How to convert one element of an input array."""

    def __init__(self, ctype: Any, convert: Callable[[object, str, str], Any], handles: bool = False) -> None:
        self.ctype = ctype
        self.convert = convert
        self.handles = handles


def int_elem(ctype: Any, lo: int, hi: int) -> Elem:
    return Elem(ctype, lambda v, n, f: as_int(v, lo, hi, n, f))


def float_elem(ctype: Any) -> Elem:
    return Elem(ctype, as_float32 if ctype is ctypes.c_float else as_float)


def bool_elem(ctype: Any) -> Elem:
    return Elem(ctype, as_bool)


def enum_elem(ctype: Any, cls: type[enum.IntEnum]) -> Elem:
    return Elem(ctype, lambda v, n, f: int(as_enum(v, cls, n, f)))


def handle_elem(cls: type[HandleBase]) -> Elem:
    return Elem(ctypes.c_void_p, lambda v, n, f: as_handle(v, cls, n, f, False), handles=True)


def buffer_elem() -> Elem:
    return Elem(ctypes.c_void_p, lambda v, n, f: as_device_ptr(v, n, f, True))


def struct_elem(ctype: Any) -> Elem:
    def convert(v: object, n: str, f: str) -> Any:
        if isinstance(v, ctype):
            return v
        if isinstance(v, tuple):
            try:
                c = ctype(*v)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"{f}: {n}: cannot make a {ctype.__name__} from {v!r}: {exc}") from None
            _check_fields(c, v, n, f)
            return c
        raise TypeError(f"{f}: {n} must be a {ctype.__name__} or a tuple of its fields; got {what(v)}")

    return Elem(ctype, convert)


def _check_fields(c: Any, values: tuple[object, ...], name: str, fn: str) -> None:
    """ctypes truncates an int field silently (2**40 in an int field) and turns 1e300 into inf in a
    float field: read each field back and refuse what did not survive."""
    for (field, _), given in zip(type(c)._fields_, values):
        got = getattr(c, field)
        if isinstance(given, bool) or isinstance(got, ctypes.Structure | ctypes.Union):
            continue
        if isinstance(given, int) and isinstance(got, int | None) and (got or 0) != given:
            raise ValueError(f"{fn}: {name}.{field}={given} does not fit its C type")
        if isinstance(given, float) and isinstance(got, float) and got in (float("inf"), float("-inf")) \
                and given not in (float("inf"), float("-inf")):
            raise OverflowError(f"{fn}: {name}.{field}={given!r} does not fit its C type")


def in_array(value: object, elem: Elem, name: str, fn: str, nullable: bool) -> Any:
    """A ctypes array from a Python sequence (each element checked), or None."""
    if value is None:
        if nullable:
            return None
        raise TypeError(f"{fn}: {name} must be a sequence; got None")
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"{fn}: {name} must be a sequence; got {what(value)}")
    convert = elem.convert
    items = [convert(v, f"{name}[{i}]", fn) for i, v in enumerate(value)]
    array = (elem.ctype * len(items))(*items)
    if elem.handles:  # the objects, for calls_in_flight (whatever kind of sequence the caller gave)
        array._miogen_handles = tuple(value)
    return array


def common_length(fn: str, arrays: Mapping[str, Any]) -> int:
    """The shared length of parallel input arrays. A None (NULL: an optional array) does not take part;
    with every array None the length is 0."""
    lengths = {name: len(a) for name, a in arrays.items() if a is not None}
    if len(set(lengths.values())) > 1:
        shown = ", ".join(f"{n} has {k}" for n, k in lengths.items())
        raise ValueError(f"{fn}: these sequences must have the same length: {shown}")
    return next(iter(lengths.values()), 0)


def length_per(fn: str, name: str, array: Any, per: int) -> int:
    """How many units of `per` elements an input array holds (its length must be a multiple of `per`)."""
    if array is None:
        return 0
    n = len(array)
    if n % per:
        raise ValueError(f"{fn}: {name} holds {per} values for each item; got {n} values, not a multiple of {per}")
    return n // per


def record_elem(ctype: Any, names: tuple[str, ...], fields: Mapping[str, tuple[str, Any, bool]]) -> Elem:
    """Elements of a record with pointer fields that have semantics: a `ctype` instance passes as is; a
    tuple (or the record's NamedTuple) is converted field by field. `fields`: field name -> (shape, handle
    class or None, nullable); shape `scalar` is a pointer to one handle (a descriptor variable made here and
    kept alive by the record), `buffer` device memory, `opaque` a host address."""

    def convert(v: object, n: str, f: str) -> Any:
        if isinstance(v, ctype):
            return v
        if not isinstance(v, tuple) or len(v) != len(names):
            raise TypeError(f"{f}: {n} must be a {ctype.__name__} or a tuple of its {len(names)} fields "
                            f"({', '.join(names)}); got {what(v)}")
        obj = ctype()
        for fname, value in zip(names, v):
            spec = fields.get(fname)
            where = f"{n}.{fname}"
            if spec is None:
                try:
                    setattr(obj, fname, int(value) if isinstance(value, enum.IntEnum) else value)
                except (TypeError, ValueError) as exc:
                    raise TypeError(f"{f}: {where}: {exc}") from None
                continue
            shape, cls, nullable = spec
            if shape == "scalar":
                ptr = as_handle(value, cls, where, f, nullable)
                if ptr is not None:  # the descriptor variable, kept alive by obj (ctypes keeps the pointer's target)
                    setattr(obj, fname, ctypes.pointer(ctypes.c_void_p(ptr)))
            elif shape == "buffer":
                setattr(obj, fname, as_device_ptr(value, where, f, nullable))
            else:
                if value is None and not nullable:
                    raise TypeError(f"{f}: {where} must be an int address; got None")
                setattr(obj, fname, as_opaque(value, where, f))
        return obj

    return Elem(ctype, convert)

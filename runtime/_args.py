"""The runtime's argument checks, one home each: enum-ish arguments (`enum_arg`: the typed API's `as_enum`
rules plus the runtime's names) and ints and int sequences (`int_arg`, `int_seq`: dims, strides, pads, ...).

Errors name the function and the parameter (and the index in a sequence) and stay short: names are listed
through the generated `name_list` and a caller's value is quoted cut (`quoted`).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import TypeVar

from ._generated import _support as _s
from .errors import ShapeError

__all__ = ["enum_arg", "int_arg", "int_seq", "int_per_dim", "INT64_MAX"]

E = TypeVar("E", bound=enum.IntEnum)
INT64_MAX = (1 << 63) - 1

_NAMED: dict[tuple[type, int, str], enum.IntEnum] = {}  # (enum, id of its aliases, spelling) -> member


def enum_arg(value: object, cls: type[E], name: str, fn: str, aliases: Mapping[str, E] | None = None, *,
             ints: bool = True) -> E:
    """A member of `cls` from a member, its int value (with `ints`; never a bool or a member of another
    enum: the typed API's `as_enum` rules), its member name, or a key of `aliases` (case-insensitive, '-' as
    '_'). TypeError/ValueError name `fn` and `name` and list a few accepted spellings."""
    if isinstance(value, cls):
        return value
    if type(value) is str or (isinstance(value, str) and not isinstance(value, enum.Enum)):
        text = str(value)
        key = (cls, id(aliases), text)
        known = _NAMED.get(key)
        if known is not None:
            return known  # type: ignore[return-value]
        member = _by_name(text, cls, name, fn, aliases)
        if len(_NAMED) < 1024:
            _NAMED[key] = member
        return member
    return _s.as_enum(value, cls, name, fn, ints=ints, spellings=_spellings(aliases))


def _by_name(text: str, cls: type[E], name: str, fn: str, aliases: Mapping[str, E] | None) -> E:
    member = cls.__members__.get(text)
    if member is not None:
        return member
    short = text.strip().lower().replace("-", "_")
    if aliases is not None and short in aliases:
        return aliases[short]
    raise ValueError(f"{fn}: {name}={_s.quoted(text)} is not a {cls.__name__}; expected "
                     f"{_s.enum_expected(cls, False, _spellings(aliases))}")


def _spellings(aliases: Mapping[str, object] | None) -> str:
    return "its name" if not aliases else f"a name ({_s.name_list(aliases)})"


_BOOLS = ("bool_", "bool")  # numpy's bool scalars (not bool subclasses; some have __index__)


def _what(value: object) -> str:
    return f"{type(value).__name__} {_s.quoted(value)}"


def int_arg(value: object, name: str, fn: str, lo: int | None = None, hi: int = INT64_MAX) -> int:
    """An int (or an object with __index__, never a bool, float or str) in [lo, hi]."""
    kind = type(value)
    if isinstance(value, (bool, enum.Enum)) or kind.__name__ in _BOOLS or not hasattr(kind, "__index__"):
        raise TypeError(f"{fn}: {name} must be an int; got {_what(value)}")
    v = value.__index__()  # type: ignore[attr-defined]
    if type(v) is not int:
        raise TypeError(f"{fn}: {name}: __index__ of {kind.__name__} returned {type(v).__name__}")
    if lo is not None and v < lo:
        raise ValueError(f"{fn}: {name} must be >= {lo}; got {v}")
    if v > hi:
        raise ValueError(f"{fn}: {name} must be <= {hi}; got {v}")
    return v


def int_seq(value: object, name: str, fn: str, lo: int | None = None, hi: int = INT64_MAX,
            length: int | None = None) -> tuple[int, ...]:
    """A tuple of ints in [lo, hi] from a sequence (list, tuple, anything iterable but str/bytes/mapping);
    each element as `int_arg`, named ``name[i]``; `length`: how many there must be."""
    if isinstance(value, (str, bytes, bytearray, Mapping)) or not isinstance(value, Iterable):
        raise TypeError(f"{fn}: {name} must be a sequence of ints; got {_what(value)}")
    out = tuple(int_arg(v, f"{name}[{i}]", fn, lo, hi) for i, v in enumerate(value))
    if length is not None and len(out) != length:
        raise ValueError(f"{fn}: {name} needs {length} values; got {len(out)}")
    return out


def int_per_dim(value: object, name: str, fn: str, n: int | None, lo: int | None = None) -> tuple[int, ...]:
    """`n` ints from one int (repeated) or a sequence of `n` (pads, strides, window, ...); with `n` None a
    sequence of any length. A wrong count is a ShapeError."""
    if isinstance(value, (str, bytes, bytearray, Mapping)) or not isinstance(value, Iterable):
        if n is None or isinstance(value, (bool, enum.Enum)) or not hasattr(type(value), "__index__"):
            raise TypeError(f"{fn}: {name} must be {'a' if n is None else 'an int or a'} sequence of ints; got "
                            f"{_what(value)}")
        return (int_arg(value, name, fn, lo),) * n
    out = int_seq(value, name, fn, lo)
    if n is not None and len(out) != n:
        raise ShapeError(f"{fn}: {name} needs {n} values (one per spatial dim); got {len(out)}: {out}")
    return out

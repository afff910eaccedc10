"""Record classes: the one decorator (`record`) every value class of the generator is made with.

A record class is what `@dataclasses.dataclass(frozen=True)` makes, field for field: fields from the class's
annotations (a base record's first; `ClassVar` ones are not fields), defaults and `field()` (a default, a
default factory, metadata, keyword-only), `__init__`, `__eq__` and `__hash__` over the fields, `__repr__`,
`__match_args__`, and assignment refused (`record(frozen=False)`: a mutable one, unhashable like a dataclass).
`fields`, `replace` and `asdict` work as the standard library's do.

Why not `dataclasses` itself: on Python 3.11 it imports `inspect` (with `ast`, `dis`, `tokenize`) and compiles
each method of each class apart, about a millisecond a class; a `miogen parse` process makes two dozen
classes and a render a hundred, before any work. Here `__init__` is a class's one compile (equality, hashing and
repr are shared functions that fetch the fields in C), and `inspect` is never imported (docs/speed.md has the
figures). Explicit methods of a class body are kept, as dataclasses keeps them.
"""

from __future__ import annotations

import operator
import typing
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, TypeVar, overload

__all__ = ["MISSING", "Field", "FrozenInstanceError", "asdict", "field", "fields", "is_frozen", "is_record", "record",
           "replace"]

T = TypeVar("T")
C = TypeVar("C", bound=type)


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


#: a field without a default (or without a default factory)
MISSING: Any = _Missing()
_FIELDS = "__record_fields__"  # on a record class: its fields, by name, in order
_FROZEN = "__record_frozen__"  # on a record class: whether it is frozen
_VALUES = "__record_values__"  # on a record class: its fields' values as a tuple (read by name in _eq, _hash)


class FrozenInstanceError(AttributeError):
    """Assignment to (or deletion of) an attribute of a frozen record."""


class Field:
    """One field of a record class: its name and annotation (as written), its default or default factory,
    its metadata (read-only), and whether `__init__` takes it by keyword only."""

    __slots__ = ("name", "type", "default", "default_factory", "metadata", "kw_only")

    def __init__(self, default: Any, default_factory: Any, metadata: Mapping[str, Any] | None,
                 kw_only: bool | None) -> None:
        self.name = ""
        self.type: Any = None
        self.default = default
        self.default_factory = default_factory
        self.metadata: Mapping[str, Any] = MappingProxyType({} if metadata is None else dict(metadata))
        self.kw_only = kw_only

    def __repr__(self) -> str:
        return (f"Field(name={self.name!r}, type={self.type!r}, default={self.default!r}, "
                f"default_factory={self.default_factory!r}, metadata={dict(self.metadata)!r}, kw_only={self.kw_only})")


@overload
def field(*, default: T, metadata: Mapping[str, Any] | None = None, kw_only: bool | None = None) -> T: ...
@overload
def field(*, default_factory: Callable[[], T], metadata: Mapping[str, Any] | None = None,
          kw_only: bool | None = None) -> T: ...
@overload
def field(*, metadata: Mapping[str, Any] | None = None, kw_only: bool | None = None) -> Any: ...
def field(*, default: Any = MISSING, default_factory: Any = MISSING, metadata: Mapping[str, Any] | None = None,
          kw_only: bool | None = None) -> Any:
    """A field's default or default factory (not both), metadata, and keyword-only flag (None: the class's)."""
    if default is not MISSING and default_factory is not MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return Field(default, default_factory, metadata, kw_only)


def _is_classvar(annotation: Any) -> bool:
    if isinstance(annotation, str):
        return annotation.startswith(("ClassVar", "typing.ClassVar"))
    return annotation is typing.ClassVar or typing.get_origin(annotation) is typing.ClassVar


def _own_fields(cls: type, kw_only: bool) -> list[Field]:
    """The fields the body of `cls` declares; their class attributes become the defaults (or go)."""
    out = []
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        if _is_classvar(annotation):
            continue
        value = getattr(cls, name, MISSING)  # a base's class attribute too, as dataclasses reads it
        f = value if isinstance(value, Field) else Field(value, MISSING, None, None)
        f.name, f.type = name, annotation
        if f.kw_only is None:
            f.kw_only = kw_only
        if f.default is not MISSING and type(f.default).__hash__ is None:
            raise ValueError(f"mutable default {type(f.default)} for field {name} is not allowed: use default_factory")
        if isinstance(value, Field):
            if f.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
        out.append(f)
    return out


@overload
def record(cls: C, /) -> C: ...
@overload
def record(*, frozen: bool = True, kw_only: bool = False) -> Callable[[C], C]: ...
@typing.dataclass_transform(frozen_default=True, field_specifiers=(field,))
def record(cls: Any = None, /, *, frozen: bool = True, kw_only: bool = False) -> Any:
    """Make `cls` a record class (see the module doc); `@record` or `@record(frozen=..., kw_only=...)`."""
    def make(cls: type) -> type:
        return _make(cls, frozen, kw_only)
    return make if cls is None else make(cls)


#: names the generated `__init__` keeps for itself (a field of one of these names is refused)
_RESERVED = ("self", "_set", "_missing")


def _make(cls: type, frozen: bool, kw_only: bool) -> type:
    """`cls` with its fields (its bases' first), `__init__` compiled from them, and the shared methods."""
    by_name: dict[str, Field] = {}
    for base in cls.__mro__[-1:0:-1]:
        by_name.update(getattr(base, _FIELDS, {}))
    for f in _own_fields(cls, kw_only):
        if f.name in _RESERVED or f.name.startswith(("_factory_", "_default_")):
            raise TypeError(f"{cls.__qualname__}.{f.name}: a field name record keeps for itself; rename the field")
        by_name[f.name] = f
    setattr(cls, _FIELDS, by_name)
    setattr(cls, _FROZEN, frozen)
    every = list(by_name.values())
    positional = [f for f in every if not f.kw_only]
    keyword = [f for f in every if f.kw_only]
    seen_default = None
    for f in positional:
        if f.default is not MISSING or f.default_factory is not MISSING:
            seen_default = f.name
        elif seen_default is not None:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
    names = {"_set": object.__setattr__, "_missing": MISSING}
    sig = []
    for f in positional + keyword:
        if keyword and f is keyword[0]:
            sig.append("*")
        if f.default_factory is not MISSING:
            names[f"_factory_{f.name}"] = f.default_factory
            sig.append(f"{f.name}=_missing")
        elif f.default is not MISSING:
            names[f"_default_{f.name}"] = f.default
            sig.append(f"{f.name}=_default_{f.name}")
        else:
            sig.append(f.name)
    values = ", ".join(f"{f.name!r}: " + (f"_factory_{f.name}() if {f.name} is _missing else {f.name}"
                                           if f.default_factory is not MISSING else f.name) for f in every)
    # the instance's dict made whole, in one step (a frozen one's with object's own setattr): a setattr for each
    # field takes twice the time
    body = f"_set(self, '__dict__', {{{values}}})" if frozen else f"self.__dict__ = {{{values}}}"
    source = f"def __init__(self, {', '.join(sig)}) -> None:\n    {body}\n"
    exec(source, names)  # noqa: S102 - the class's __init__, from its field names only
    setattr(cls, _VALUES, _values(tuple(f.name for f in every)))
    own = cls.__dict__
    names["__init__"].__qualname__ = f"{cls.__qualname__}.__init__"
    for name, method in (("__init__", names["__init__"]), ("__eq__", _eq), ("__repr__", _repr)):
        if name not in own:
            setattr(cls, name, method)
    # a body that defines __eq__ has __hash__ None in its dict: not a hash of its own (as dataclasses reads it)
    if "__hash__" not in own or (own["__hash__"] is None and "__eq__" in own):
        setattr(cls, "__hash__", _hash if frozen else None)
    if frozen:
        for name, method in (("__setattr__", _refuse_set), ("__delattr__", _refuse_delete)):
            if name not in own:
                setattr(cls, name, method)
    if "__match_args__" not in own:
        setattr(cls, "__match_args__", tuple(f.name for f in positional))
    return cls


def _values(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """A function giving a record's field values as a tuple, fetched in C."""
    if len(names) > 1:
        return operator.attrgetter(*names)
    if names:
        one = operator.attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is self.__class__:
        values = type(self).__record_values__
        return values(self) == values(other)
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(type(self).__record_values__(self))


def _repr(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in getattr(type(self), _FIELDS))
    return f"{type(self).__qualname__}({shown})"


def _refuse_set(self: Any, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _refuse_delete(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def is_record(obj: Any) -> bool:
    """True for a record class or an instance of one."""
    return hasattr(obj if isinstance(obj, type) else type(obj), _FIELDS)


def is_frozen(obj: Any) -> bool:
    """True for a frozen record class or an instance of one."""
    return bool(getattr(obj if isinstance(obj, type) else type(obj), _FROZEN, False))


def fields(class_or_instance: Any) -> tuple[Field, ...]:
    """The fields of a record class or instance, in order; TypeError for anything else."""
    try:
        found: dict[str, Field] = getattr(class_or_instance, _FIELDS)
    except AttributeError:
        raise TypeError("must be called with a record type or instance") from None
    return tuple(found.values())


def replace(obj: T, /, **changes: Any) -> T:
    """A copy of the record `obj` with `changes` (field name -> value); TypeError for an unknown name."""
    every: dict[str, Field] | None = getattr(type(obj), _FIELDS, None)
    if every is None or isinstance(obj, type):
        raise TypeError(f"replace() takes a record instance; got {type(obj).__qualname__}")
    unknown = changes.keys() - every.keys()
    if unknown:
        raise TypeError(f"{type(obj).__qualname__}.__init__() got an unexpected keyword argument "
                        f"{sorted(unknown)[0]!r}")
    for name in every:
        if name not in changes:
            changes[name] = getattr(obj, name)
    return type(obj)(**changes)


def asdict(obj: Any) -> Any:
    """A record as a dict of its fields, records inside it (in lists, tuples and dicts too) as dicts."""
    if is_record(obj) and not isinstance(obj, type):
        return {name: asdict(getattr(obj, name)) for name in getattr(type(obj), _FIELDS)}
    if isinstance(obj, (list, tuple)):
        return type(obj)(asdict(x) for x in obj)
    if isinstance(obj, dict):
        return {asdict(k): asdict(v) for k, v in obj.items()}
    return obj

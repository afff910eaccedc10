"""The base of every handle class: owns one opaque library handle and destroys it exactly once."""

from __future__ import annotations

import ctypes
import sys
import warnings
import weakref

from . import _inflight, _state
from ._pointers import ADDRESS_LIMIT
from ._status import raise_status
from ._target import LIB_NAME

TYPE_CHECKING = False  # typing stays unimported at run time (import cost); type checkers read the block below
if TYPE_CHECKING:
    from typing import Any, ClassVar, NoReturn, TypeVar
    H = TypeVar("H", bound="HandleBase")


# --------------------------------------------------------------------------- handles


class HandleBase:
    """Owns one opaque library handle: destroyed exactly once (close(), `with`, or the finalizer)."""

    __slots__ = ("_ptr", "_cp", "_owned", "_keep", "_children", "_gen", "__weakref__")
    _ptr: int | None
    _cp: ctypes.c_void_p | None  # the same address as a ctypes object, made once: what the wrappers pass
    _owned: bool
    _keep: list[object] | None
    _children: list[HandleBase] | None
    _gen: int  # the library generation it was made under
    _c_name: ClassVar[str] = ""
    _destroy_name: ClassVar[str | None] = None
    #: True on a class whose objects are shared (a runtime cache's descriptors): no setter may change one
    #: (`_convert.handle_arg` refuses it as the handle a Set/Init function writes)
    _frozen: ClassVar[bool] = False
    #: the classes whose open objects the wrappers take on their fast path (one set lookup) where this class is
    #: expected, except as the handle a function writes: the class itself and its `fast_subclass`es
    _fast_types: ClassVar[set[type]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._fast_types = {cls}

    def __init__(self) -> None:
        raise TypeError(f"{type(self).__name__} objects come from their create functions, "
                        f"or from {type(self).__name__}.from_address()")

    @classmethod
    def from_address(cls: type[H], ptr: int, *, owned: bool = False) -> H:
        """Wrap an existing handle (borrowed unless `owned`)."""
        if isinstance(ptr, bool) or not isinstance(ptr, int) or not 0 < ptr < ADDRESS_LIMIT:
            raise ValueError(f"{cls.__name__}.from_address: expected a non-null int address below 2**64; got {ptr!r}")
        obj = cls.__new__(cls)
        obj._ptr = ptr
        obj._cp = ctypes.c_void_p(ptr)
        obj._owned = owned and cls._destroy_name is not None
        obj._keep = None
        obj._children = None
        obj._gen = _state.generation
        _live.append(_ref(obj))
        if len(_live) > _live_limit:
            _prune_live()
        return obj

    @classmethod
    def _from_c(cls: type[H], ptr: int | None, owned: bool, owner: HandleBase | None = None) -> H | None:
        if not ptr:
            return None
        obj = cls.from_address(ptr, owned=owned)
        if owner is not None:
            obj._keep = [owner]  # keeps the owner alive
            with _inflight._close_lock:  # against a concurrent close of the owner (which frees what it owns)
                if owner._ptr is None:
                    obj._ptr = obj._cp = None  # born closed: the owner is being destroyed
                else:
                    if owner._children is None:
                        owner._children = []
                    owner._children.append(obj)
        return obj

    @classmethod
    def _created(cls: type[H], ptr: int | None, fn: str, owner: HandleBase | None = None) -> H:
        """The object a create function made (owned, unless the library frees it with its owner)."""
        if not ptr:
            raise RuntimeError(f"{fn} succeeded but returned a null {cls._c_name}")
        obj = cls._from_c(ptr, owner is None, owner)
        assert obj is not None
        return obj

    @property
    def address(self) -> int:
        """The raw handle value (raises once closed)."""
        if self._ptr is None:
            raise ValueError(f"this {type(self).__name__} is closed{retired_note(self)}")
        return self._ptr

    @property
    def closed(self) -> bool:
        return self._ptr is None

    @property
    def _as_parameter_(self) -> int:
        return self.address

    def keep_alive(self, key: str, objects: object) -> None:
        """Keep `objects` (e.g. callbacks) alive as long as this handle."""
        if self._keep is None:
            self._keep = []
        self._keep.append((key, objects))

    def _retire(self) -> tuple[int | None, list[HandleBase]]:
        """Mark this object and everything it owns closed, atomically against other closers and
        against children being made; (the raw handle, or None when another closer was first; the
        objects marked). Calls that start afterwards see it closed; calls in flight are not waited for."""
        with _inflight._close_lock:
            ptr, self._ptr, self._cp = self._ptr, None, None
            children, self._children = self._children or [], None
        if ptr is None:
            return None, []
        group: list[HandleBase] = [self]
        for child in children:
            _, marked = child._retire()
            group += marked
        return ptr, group

    def _detach(self) -> int:
        """Mark closed (children first), wait until no call through it or what it owns is in flight in
        another thread, and return the raw handle (for a destroy function); raises if already closed."""
        ptr, group = self._retire()
        if ptr is None:
            raise ValueError(f"this {type(self).__name__} is already closed{retired_note(self)}")
        _inflight.wait_idle(group, sys._getframe(1))  # the caller: the destroy wrapper, which holds this object itself
        return ptr

    def close(self) -> None:
        """Destroy the handle now (idempotent, also under concurrent closes: one caller destroys it, the
        others return); objects it owns are closed first; calls through it in flight in other threads
        finish first (see `wait_idle`)."""
        if self._ptr is None:
            return
        ptr, group = self._retire()
        if ptr is None:
            return  # another thread closed it first
        name = type(self)._destroy_name
        if self._owned and name is not None:
            if self._gen != _state.generation or _state.bound_modules is None:
                return  # made under a library that is no longer loaded: never hand it to another one
            _inflight.wait_idle(group)
            status: int = getattr(_state.bound_modules[0], name)(ptr)
            if status:
                raise_status(status, name, {"handle": ptr})

    def __copy__(self) -> NoReturn:
        raise TypeError(f"{type(self).__name__} objects cannot be copied: two owners would destroy one handle twice")

    def __deepcopy__(self, memo: object) -> NoReturn:
        self.__copy__()

    def __reduce__(self) -> NoReturn:
        raise TypeError(f"{type(self).__name__} objects cannot be pickled: a handle is valid in one process only")

    def __enter__(self: H) -> H:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if sys.is_finalizing() or getattr(self, "_ptr", None) is None:
            return  # never destroy during interpreter shutdown: the library may be gone
        try:
            self.close()
        except Exception as exc:  # a finalizer must not raise
            warnings.warn(f"{type(self).__name__}: destroying the handle failed: {exc}", ResourceWarning, stacklevel=1)

    def __repr__(self) -> str:
        state = "closed" if self._ptr is None else f"0x{self._ptr:x}{'' if self._owned else ', borrowed'}"
        return f"<{type(self).__name__} {state}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HandleBase) and type(other) is type(self) and other._ptr == self._ptr

    def __hash__(self) -> int:
        return hash((type(self), self._ptr))


# every handle object made (weakly): unload_library() retires those of the library it unloads
# the docstring names the target's library (a lone surrogate in its name is shown as its escape)
HandleBase.__doc__ = (HandleBase.__doc__ or "").replace("library", "".join(
    f"\\u{ord(c):04x}" if "\ud800" <= c <= "\udfff" else c for c in LIB_NAME), 1)
_live: list[weakref.ref[HandleBase]] = []
_live_limit = 1024  # prune dead references when the list grows past this (then twice the survivors)
_ref = weakref.ref


def _prune_live() -> None:
    global _live_limit
    with _inflight._close_lock:
        n = len(_live)
        if n > _live_limit:  # only the first n: references appended meanwhile stay
            _live[:n] = [r for r in _live[:n] if r() is not None]
            _live_limit = max(1024, 2 * len(_live))


def _retire_live() -> None:
    """Mark every live handle object closed without destroying it: its library is being unloaded (and may be
    gone), so no call, and no destroy function of a library loaded later, may ever receive it."""
    global _live_limit
    with _inflight._close_lock:
        n = len(_live)
        refs = _live[:n]
        del _live[:n]
        _live_limit = 1024
        for r in refs:
            obj = r()
            if obj is not None and obj._gen < _state.generation:
                obj._ptr = obj._cp = None
                obj._children = None


def retired_note(obj: HandleBase) -> str:
    return " (made under a library that has since been unloaded)" if obj._gen != _state.generation else ""


def fast_subclass(sub: type[H]) -> type[H]:
    """Class decorator: the typed wrappers take open objects of `sub` (a subclass of a handle class that keeps its
    `_cp`, e.g. the runtime's shared descriptors) on their fast path wherever its handle class is expected, but as
    the handle a function writes (there `handle_arg` refuses a `_frozen` one)."""
    for base in sub.__mro__[1:]:
        if base is not HandleBase and issubclass(base, HandleBase) and "_c_name" in base.__dict__:
            base._fast_types.add(sub)
            return sub
    raise TypeError(f"fast_subclass: {sub.__name__} is not a subclass of a handle class")

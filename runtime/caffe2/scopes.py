"""Blob scopes: Caffe2's ``WorkspaceStack`` and the ``CreateScope`` / ``HasScope`` operators.

This module does not use MIOpen or a GPU. It is only useful to a graph or net executor, and
it is independent of the rest of the package.

About the word "workspace": in Caffe2 a ``Workspace`` is a *namespace of blobs* (name -> value),
not GPU scratch memory. Here that namespace is a `BlobScope`, so the name does not clash with
`miopen.workspace`, which is about GPU scratch memory.

How it works (as in ``caffe2/operators/create_scope_op.h``):

* A `ScopeStack` holds child scopes of a parent scope and an index ``top`` (-1 when empty).
  A forward ``Do`` calls `ScopeStack.push_forward`. A gradient ``Do`` calls
  `ScopeStack.pop_gradient`, in reverse order. So each gradient step runs in the **same** child
  scope as its forward step and sees that step's intermediate values.
* `ScopeStack.push_forward` creates a new child scope only when ``top`` is the last scope held.
  Otherwise it reuses the next scope, which an earlier pop left behind. Popping only moves
  ``top`` down and `ScopeStack.clear` only resets it, so scopes stay allocated and are reused.
* A child scope inherits nothing from its parent except its *bindings*: a binding maps an inner
  name to an outer name. Reads and writes of a bound name go to the parent's blob.
* In debug mode (``ScopeStack(debug=True)``, which mirrors ``--caffe2_workspace_stack_debug``),
  every push and pop must use the same parent scope (compared by identity) as the first one.
  Forward bindings must match the first forward bindings, and gradient bindings must match the
  first gradient bindings. A mismatch raises `ParentMismatchError` or `BindingsMismatchError`,
  with a message that says what differs. Without debug mode nothing is checked, as in Caffe2.
  A reused scope keeps the bindings it was created with. The new bindings are added only when
  the push had to delete a local copy of a bound name.

Differences from Caffe2:

* Popping an empty stack raises `EmptyScopeStackError` instead of returning null.
  `ScopeStack.reuse_last_forward` still returns ``None`` on an empty stack, as in Caffe2, because
  callers test for it (``reuse_workspace && !stack.empty()``).
* Debug mode records the first bindings even when they are empty. Caffe2 treats an empty map as
  "not yet recorded", so a push with no bindings followed by one with bindings went unnoticed.
* In debug mode, `ScopeStack.reuse_last_forward` also checks the parent, and the bindings when
  any are given. Caffe2 checks neither there.
* `BlobScope.add_bindings` validates every binding before it applies any. A rejected call
  changes nothing.
* A chain of bindings that loops back on itself raises `BindingCycleError` instead of
  recursing forever.

Thread safety: Caffe2's ``WorkspaceStack`` is documented as "non-thread safe", and each net
keeps its own. Here every `ScopeStack` method holds a per-stack lock, so the stack's own state
(``top`` and the scopes it holds) stays consistent under concurrent calls. A push/pop *protocol*
running on two threads still needs its own ordering. All `BlobScope` state is guarded by one
module-wide reentrant lock, so a single lookup, write or binding change is atomic, even when it
follows bindings across scopes. One lock cannot deadlock, which one lock per scope could: two
threads could walk bindings in opposite directions. A stack's lock is always taken before the
scope lock, never after it. Blob values are neither copied nor guarded: sharing them across
threads is up to the caller.
"""

from __future__ import annotations

import copy as _copy
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping

__all__ = [
    "BindingCycleError",
    "BindingError",
    "BindingsMismatchError",
    "BlobRedefinitionError",
    "BlobScope",
    "EmptyScopeStackError",
    "InvalidParentBlobError",
    "ParentMismatchError",
    "ScopeError",
    "ScopeStack",
    "ScopeStackError",
    "check_bindings_match",
    "create_scope",
    "has_scope",
]


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


class ScopeError(RuntimeError):
    """The base class of every error this module raises."""


class ScopeStackError(ScopeError):
    """The stack's invariant ``-1 <= top < number of scopes held`` is broken ("Corrupted
    workspaces stack" in Caffe2)."""


class EmptyScopeStackError(ScopeStackError):
    """`ScopeStack.pop_gradient` was called on an empty stack: there is no forward scope left."""


class BindingError(ScopeError, ValueError):
    """A blob binding (inner name -> outer name in the parent) cannot be added."""


class InvalidParentBlobError(BindingError):
    """A binding names an outer blob that the parent scope does not have."""


class BlobRedefinitionError(BindingError):
    """A binding's inner name is already defined in the scope, or is already bound to a different
    parent or outer name."""


class BindingCycleError(BindingError):
    """Following bindings from a name leads back to that same name."""


class ParentMismatchError(ScopeError, ValueError):
    """Debug mode: a push or pop used a different parent scope from the first one."""

    def __init__(self, message: str, expected: BlobScope, actual: BlobScope) -> None:
        super().__init__(message)
        self.expected = expected
        self.actual = actual


class BindingsMismatchError(ScopeError, ValueError):
    """Debug mode: bindings differ from the first ones recorded ("Blob bindings mismatch").

    ``missing``: inner names that were expected but are absent. ``extra``: inner names that were
    not expected. ``changed``: inner name -> (expected outer, actual outer).
    """

    def __init__(
        self,
        message: str,
        missing: tuple[str, ...],
        extra: tuple[str, ...],
        changed: dict[str, tuple[str, str]],
    ) -> None:
        super().__init__(message)
        self.missing = missing
        self.extra = extra
        self.changed = changed


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def _as_bindings(bindings: Mapping[str, str] | None, what: str) -> dict[str, str]:
    """Copy `bindings` into a plain dict and check that every inner and outer name is a string."""
    if bindings is None:
        return {}
    if not isinstance(bindings, Mapping):
        raise TypeError(f"{what} must be a mapping of inner name -> outer name; got {type(bindings).__name__}")
    out: dict[str, str] = {}
    for inner, outer in bindings.items():
        if not isinstance(inner, str) or not isinstance(outer, str):
            raise TypeError(f"{what}: names must be str; got {inner!r} -> {outer!r}")
        out[inner] = outer
    return out


def check_bindings_match(
    expected: Mapping[str, str], actual: Mapping[str, str], what: str = "blob bindings"
) -> None:
    """Raise `BindingsMismatchError` unless `actual` has the same keys and values as `expected`.

    This is Caffe2's ``checkBindingsMatch``. The message lists the missing and extra inner names
    and every inner name whose outer name changed.
    """
    missing = tuple(sorted(k for k in expected if k not in actual))
    extra = tuple(sorted(k for k in actual if k not in expected))
    changed = {k: (expected[k], actual[k]) for k in sorted(expected) if k in actual and expected[k] != actual[k]}
    if not (missing or extra or changed):
        return
    parts: list[str] = []
    if missing:
        parts.append(f"missing inner names {list(missing)}")
    if extra:
        parts.append(f"unexpected inner names {list(extra)}")
    for inner, (want, got) in changed.items():
        parts.append(f"{inner!r} is bound to {got!r}, expected {want!r}")
    raise BindingsMismatchError(
        f"Blob bindings mismatch ({what}): " + "; ".join(parts), missing, extra, changed
    )


# --------------------------------------------------------------------------------------------
# BlobScope
# --------------------------------------------------------------------------------------------


class _Missing:
    pass


_MISSING = _Missing()

# One reentrant lock guards the state of every BlobScope. A lookup walks bindings across
# scopes, so one lock per scope could deadlock when two threads walk in opposite directions.
_SCOPE_LOCK = threading.RLock()


class BlobScope(MutableMapping[str, object]):
    """A namespace of named blobs (Caffe2's ``Workspace``, minus nets).

    A name is looked up in this order:

    1. the scope's own (local) blobs;
    2. its bindings: a bound inner name reads and writes ``parent[outer]``;
    3. the ``shared`` scope, if one was given. This is Caffe2's ``Workspace(shared)``: every name
       falls through to it. Stack children never have one.

    ``scope[name] = value`` writes the blob wherever `name` resolves, which may be a parent's
    blob, as Caffe2's ``CreateBlob`` does. A name that resolves nowhere is created locally.
    `set_local` always writes locally and hides any binding (``CreateLocalBlob``).
    ``del scope[name]`` and `remove` delete local blobs only, never a parent's.
    """

    def __init__(
        self,
        parent: BlobScope | None = None,
        bindings: Mapping[str, str] | None = None,
        *,
        shared: BlobScope | None = None,
        name: str | None = None,
    ) -> None:
        checked = _as_bindings(bindings, "bindings")
        if checked and parent is None:
            raise BindingError("Parent scope must be given when bindings are")
        if parent is not None and not isinstance(parent, BlobScope):
            raise TypeError(f"parent must be a BlobScope or None; got {type(parent).__name__}")
        if shared is not None and not isinstance(shared, BlobScope):
            raise TypeError(f"shared must be a BlobScope or None; got {type(shared).__name__}")
        self._blobs: dict[str, object] = {}
        self._forwarded: dict[str, tuple[BlobScope, str]] = {}
        self._parent = parent
        self._shared = shared
        self.name = name
        if parent is not None:
            self.add_bindings(parent, checked)

    # -- identity and introspection --------------------------------------------------------

    def __repr__(self) -> str:
        label = f"{self.name!r}" if self.name is not None else f"at 0x{id(self):x}"
        with _SCOPE_LOCK:
            return f"<BlobScope {label}: {len(self._blobs)} local, {len(self._forwarded)} bound>"

    # Scopes compare by identity, like Caffe2's workspace pointers. Without these two lines,
    # MutableMapping's __eq__ would compare contents.
    __eq__ = object.__eq__
    __hash__ = object.__hash__

    @property
    def parent(self) -> BlobScope | None:
        """The parent this scope was created with (None for a root scope)."""
        return self._parent

    @property
    def shared(self) -> BlobScope | None:
        """The scope every unresolved name falls through to (None: nothing is inherited)."""
        return self._shared

    @property
    def bindings(self) -> dict[str, str]:
        """A copy of the current bindings: inner name -> outer name."""
        with _SCOPE_LOCK:
            return {inner: outer for inner, (_, outer) in self._forwarded.items()}

    def binding_targets(self) -> dict[str, tuple[BlobScope, str]]:
        """A copy of the current bindings with their parents: inner -> (parent scope, outer name)."""
        with _SCOPE_LOCK:
            return dict(self._forwarded)

    def local_names(self) -> list[str]:
        """Names of the blobs this scope owns, without bound or shared ones (``LocalBlobs``)."""
        with _SCOPE_LOCK:
            return list(self._blobs)

    # -- resolution --------------------------------------------------------------------------

    def _resolve(self, name: str) -> tuple[BlobScope, str] | None:
        """Where `name` lives: (owning scope, its name there), or None. Call it under the lock."""
        scope: BlobScope | None = self
        seen: set[tuple[int, str]] = set()
        while scope is not None:
            key = (id(scope), name)
            if key in seen:
                raise BindingCycleError(f"Blob bindings form a cycle through {name!r} in {scope!r}")
            seen.add(key)
            if name in scope._blobs:
                return scope, name
            target = scope._forwarded.get(name)
            if target is not None:
                scope, name = target
            else:
                scope = scope._shared
        return None

    def has_blob(self, name: str) -> bool:
        """Whether `name` resolves to a blob here, through a binding, or in ``shared`` (``HasBlob``)."""
        with _SCOPE_LOCK:
            return self._resolve(name) is not None

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.has_blob(name)

    def __getitem__(self, name: str) -> object:
        with _SCOPE_LOCK:
            hit = self._resolve(name)
            if hit is None:
                raise KeyError(name)
            return hit[0]._blobs[hit[1]]

    def __setitem__(self, name: str, value: object) -> None:
        if not isinstance(name, str):
            raise TypeError(f"blob names must be str; got {name!r}")
        with _SCOPE_LOCK:
            owner, owner_name = self._resolve(name) or (self, name)
            owner._blobs[owner_name] = value

    def set_local(self, name: str, value: object) -> None:
        """Write a local blob, hiding any binding or shared blob of that name (``CreateLocalBlob``)."""
        if not isinstance(name, str):
            raise TypeError(f"blob names must be str; got {name!r}")
        with _SCOPE_LOCK:
            self._blobs[name] = value

    def remove(self, name: str) -> bool:
        """Delete a local blob. Returns False when there is none; bindings are untouched (``RemoveBlob``)."""
        with _SCOPE_LOCK:
            return self._blobs.pop(name, _MISSING) is not _MISSING

    def __delitem__(self, name: str) -> None:
        if not self.remove(name):
            raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        """Every name that resolves (``Blobs``): local, then bound, then shared; no duplicates.

        The names are collected under the lock; the iterator is a snapshot."""
        out: dict[str, None] = {}
        seen: set[int] = set()
        with _SCOPE_LOCK:
            scope: BlobScope | None = self
            while scope is not None and id(scope) not in seen:
                seen.add(id(scope))
                for n in [*scope._blobs, *scope._forwarded]:
                    if n not in out and self._resolve(n) is not None:
                        out[n] = None
                scope = scope._shared
        return iter(list(out))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    # -- bindings ----------------------------------------------------------------------------

    def add_bindings(
        self, parent: BlobScope, bindings: Mapping[str, str] | None, skip_defined: bool = False
    ) -> None:
        """Bind inner names here to outer blobs of `parent` (Caffe2's ``AddBlobMapping``).

        Every outer name must exist in `parent` (`InvalidParentBlobError`). Binding an inner
        name again to the same parent and outer name does nothing, but binding it to anything
        else raises `BlobRedefinitionError`. An inner name that is already defined (local,
        bound or shared) raises `BlobRedefinitionError`, unless ``skip_defined`` is set, in
        which case that name is skipped. All bindings are checked first: a rejected call
        changes nothing.
        """
        if not isinstance(parent, BlobScope):
            raise TypeError(f"parent must be a BlobScope; got {type(parent).__name__}")
        checked = _as_bindings(bindings, "bindings")
        with _SCOPE_LOCK:
            for outer in checked.values():
                if parent._resolve(outer) is None:
                    raise InvalidParentBlobError(
                        f"Invalid parent workspace blob {outer!r}: {parent!r} has no such blob"
                    )
            to_add: dict[str, tuple[BlobScope, str]] = {}
            for inner, outer in checked.items():
                current = self._forwarded.get(inner)
                if current is not None:
                    if current[0] is not parent or current[1] != outer:
                        raise BlobRedefinitionError(
                            f"Redefinition of blob {inner!r}: bound to {current[1]!r} in {current[0]!r}, "
                            f"now asked to bind it to {outer!r} in {parent!r}"
                        )
                    continue
                if self._resolve(inner) is not None:
                    if skip_defined:
                        continue
                    raise BlobRedefinitionError(f"Redefinition of blob {inner!r}: it is already defined in {self!r}")
                to_add[inner] = (parent, outer)
            self._forwarded.update(to_add)

    def localize(self, names: Iterable[str], copy: Callable[[object], object] = _copy.copy) -> None:
        """Turn bound names into local copies of the parent's values (``CopyForwardedTensors``).

        Names that are not bound, or whose parent blob is gone, are ignored. A later push that
        reuses this scope deletes the copies and binds the names again. `copy` runs under the
        module's scope lock, so it must not start threads that use scopes.
        """
        with _SCOPE_LOCK:
            for name in list(names):
                target = self._forwarded.get(name)
                if target is None:
                    continue
                hit = target[0]._resolve(target[1])
                if hit is None:
                    continue
                value = copy(hit[0]._blobs[hit[1]])
                del self._forwarded[name]
                self._blobs[name] = value


# --------------------------------------------------------------------------------------------
# ScopeStack
# --------------------------------------------------------------------------------------------


class ScopeStack:
    """Caffe2's ``detail::WorkspaceStack``: forward scopes pushed, gradient scopes popped, and
    scopes kept for reuse.

    ``top`` is the index of the current scope (-1 when empty). ``size`` counts every scope held,
    including those above ``top`` that are kept for reuse. ``debug=True`` turns on the parent and
    bindings checks. All methods hold a per-stack lock.
    """

    def __init__(self, *, debug: bool = False) -> None:
        if not isinstance(debug, bool):
            raise TypeError(f"debug must be a bool; got {debug!r}")
        self._lock = threading.RLock()
        self._debug = debug
        self._top = -1
        self._scopes: list[BlobScope] = []
        # Debug records. None means "not seen yet" (Caffe2 used an empty map or a null pointer).
        self._parent: BlobScope | None = None
        self._forward_bindings: dict[str, str] | None = None
        self._grad_bindings: dict[str, str] | None = None

    def __repr__(self) -> str:
        with self._lock:
            return f"<ScopeStack top={self._top} size={len(self._scopes)} debug={self._debug}>"

    # -- state -------------------------------------------------------------------------------

    @property
    def debug(self) -> bool:
        return self._debug

    @property
    def top(self) -> int:
        """The index of the current scope; -1 when the stack is empty."""
        with self._lock:
            return self._top

    @property
    def depth(self) -> int:
        """How many scopes are pushed and not yet popped (``top + 1``)."""
        with self._lock:
            return self._top + 1

    @property
    def size(self) -> int:
        """How many scopes the stack holds, including popped ones kept for reuse."""
        with self._lock:
            return len(self._scopes)

    @property
    def scopes(self) -> tuple[BlobScope, ...]:
        """Every scope held, bottom first, including popped ones kept for reuse."""
        with self._lock:
            return tuple(self._scopes)

    def empty(self) -> bool:
        """True when nothing is pushed (``top < 0``); popped scopes may still be held."""
        with self._lock:
            return self._top < 0

    def clear(self) -> None:
        """Reset ``top`` to -1. The scopes are kept and later pushes reuse them (as in Caffe2).
        Debug records are kept too."""
        with self._lock:
            self._check_stack()
            self._top = -1

    # -- checks ------------------------------------------------------------------------------

    def _check_stack(self) -> None:
        if not (-1 <= self._top < len(self._scopes)):
            raise ScopeStackError(
                f"Corrupted workspaces stack: top={self._top} but {len(self._scopes)} scopes are held"
            )

    def _check_parent(self, parent: BlobScope, op: str) -> None:
        if self._parent is None:
            self._parent = parent
        elif self._parent is not parent:
            raise ParentMismatchError(
                f"Parent workspace mismatch in {op}: the stack was first used with parent "
                f"{self._parent!r}, now called with {parent!r}",
                self._parent,
                parent,
            )

    @staticmethod
    def _check_parent_type(parent: object, op: str) -> BlobScope:
        if not isinstance(parent, BlobScope):
            raise TypeError(f"{op}: parent must be a BlobScope; got {type(parent).__name__}")
        return parent

    # -- operations --------------------------------------------------------------------------

    def push_forward(self, parent: BlobScope, bindings: Mapping[str, str] | None = None) -> BlobScope:
        """Enter a forward scope, and return it (``pushForwardWorkspace``).

        If ``top`` is the last scope held, a new child scope ``BlobScope(parent, bindings)`` is
        created. Otherwise the scope above ``top`` is reused: any local blob whose name is bound
        is deleted, and if any was, the bindings are added again.
        """
        self._check_parent_type(parent, "push_forward")
        checked = _as_bindings(bindings, "push_forward bindings")
        with self._lock:
            self._check_stack()
            if self._debug:
                self._check_parent(parent, "push_forward")
                if self._forward_bindings is None:
                    self._forward_bindings = dict(checked)
                else:
                    check_bindings_match(self._forward_bindings, checked, "forward bindings, push_forward")
            if self._top == len(self._scopes) - 1:
                scope = BlobScope(parent, checked, name=f"scope[{self._top + 1}]")
                self._scopes.append(scope)
            else:
                scope = self._scopes[self._top + 1]
                found_local_copy = False
                for inner in checked:
                    if scope.remove(inner):
                        found_local_copy = True
                if found_local_copy:
                    scope.add_bindings(parent, checked)
            self._top += 1
            return scope

    def pop_gradient(self, parent: BlobScope, grad_bindings: Mapping[str, str] | None = None) -> BlobScope:
        """Return the top scope for a gradient pass and move ``top`` down (``popGradientWorkspace``).

        The gradient bindings are added with ``skip_defined=True``, so names that the forward
        pass already defined are kept. Raises `EmptyScopeStackError` when nothing is pushed.
        """
        self._check_parent_type(parent, "pop_gradient")
        checked = _as_bindings(grad_bindings, "pop_gradient bindings")
        with self._lock:
            self._check_stack()
            if self._debug:
                self._check_parent(parent, "pop_gradient")
                if self._grad_bindings is None:
                    self._grad_bindings = dict(checked)
                else:
                    check_bindings_match(self._grad_bindings, checked, "gradient bindings, pop_gradient")
            if self._top < 0:
                raise EmptyScopeStackError(
                    "pop_gradient on an empty scope stack: no forward scope is left to run the gradient in "
                    "(more gradient steps than forward steps?)"
                )
            scope = self._scopes[self._top]
            scope.add_bindings(parent, checked, skip_defined=True)
            self._top -= 1
            return scope

    def reuse_last_forward(
        self, parent: BlobScope, bindings: Mapping[str, str] | None = None
    ) -> BlobScope | None:
        """Re-enter the top scope without pushing, and add `bindings` to it
        (``reuseLastForwardWorkspace``). Returns None when the stack is empty.

        In debug mode the parent is checked, and the bindings too when they are given. Caffe2
        checked neither here.
        """
        self._check_parent_type(parent, "reuse_last_forward")
        checked = _as_bindings(bindings, "reuse_last_forward bindings")
        with self._lock:
            self._check_stack()
            if self._debug:
                self._check_parent(parent, "reuse_last_forward")
                if bindings is not None and self._forward_bindings is not None:
                    check_bindings_match(self._forward_bindings, checked, "forward bindings, reuse_last_forward")
            if self._top < 0:
                return None
            scope = self._scopes[self._top]
            scope.add_bindings(parent, checked)
            return scope

    # Caffe2's names, for readers coming from create_scope_op.h.
    push_forward_workspace = push_forward
    pop_gradient_workspace = pop_gradient
    reuse_last_forward_workspace = reuse_last_forward


# --------------------------------------------------------------------------------------------
# CreateScope / HasScope
# --------------------------------------------------------------------------------------------


def create_scope(stack: ScopeStack | None = None, *, debug: bool | None = None) -> ScopeStack:
    """The ``CreateScope`` operator: a new stack, or `stack` cleared.

    Clearing keeps the scopes already held, so later pushes reuse them. ``debug`` applies to a
    new stack. For an existing stack it must be None or equal to ``stack.debug``.
    """
    if stack is None:
        return ScopeStack(debug=bool(debug))
    if not isinstance(stack, ScopeStack):
        raise TypeError(f"create_scope: expected a ScopeStack or None; got {type(stack).__name__}")
    if debug is not None and debug != stack.debug:
        raise ValueError(f"create_scope: stack has debug={stack.debug}; cannot change it to debug={debug}")
    stack.clear()
    return stack


def has_scope(stack: ScopeStack) -> bool:
    """The ``HasScope`` operator: True when `stack` has a pushed scope (``!stack.empty()``)."""
    if not isinstance(stack, ScopeStack):
        raise TypeError(f"has_scope: expected a ScopeStack; got {type(stack).__name__}")
    return not stack.empty()

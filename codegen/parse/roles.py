"""Proposed roles of pointer parameters: the C type decides first, the doc tag breaks ties.

Doc tags are noisy (workspaces tagged input, perfResults tagged input), so they never
override what the type says; they only settle what the type leaves open (`void *`).
What neither settles stays `unknown` with provenance `none`, for an annotation to decide.
"""

from __future__ import annotations

from ..spec.model import CType, Direction, DocTag, Memory, Provenance, Role, RoleShape, RoleSource
from ..spec.target import Target


_ROLES: dict[tuple[tuple[str, str], ...], Role] = {}


def _role(
    direction: tuple[Direction, Provenance], memory: tuple[Memory, Provenance], shape: tuple[RoleShape, Provenance]
) -> Role:
    """The role of these parts, one shared object per combination (a spec has a few dozen)."""
    key = (direction, memory, shape)
    role = _ROLES.get(key)
    if role is None:
        role = _ROLES[key] = Role(
            direction=direction[0],
            memory=memory[0],
            shape=shape[0],
            source=RoleSource(direction=direction[1], memory=memory[1], shape=shape[1]),
        )
    return role


def propose(t: CType, name: str | None, doc_tag: DocTag | None, target: Target) -> Role | None:
    """The role of a parameter of type `t`, name `name` and doc tag `doc_tag` when it is a pointer, or None for a
    by-value one (handles included)."""
    if t.kind == "callback" and t.depth == 0:
        return _role(("in", "type"), ("host", "type"), ("callback", "type"))
    if t.depth == 0:
        return None
    const = t.pointee_const
    if t.kind == "incomplete" and t.depth == 1:  # a pointer to a struct the header never defines
        return _role(("in", "type"), ("host", "type"), ("opaque", "type"))
    if t.kind == "void" and t.depth == 1:
        if name in target.host_scalar_names:
            return _role(("in", "type" if const else "name"), ("host", "name"), ("scalar", "name"))
        if const:
            return _role(("in", "type"), ("device", "type"), ("buffer", "type"))
        if doc_tag:
            return _role((doc_tag, "doc"), ("device", "type"), ("buffer", "type"))
        return _role(("unknown", "none"), ("device", "type"), ("buffer", "type"))
    if t.kind == "void" and t.depth == 2:
        if const:  # const void *const *: an array of device pointers
            return _role(("in", "type"), ("host", "type"), ("array", "type"))
        return _role(("out", "type"), ("host", "type"), ("scalar", "type"))  # void **: returns a pointer
    if const:
        return _role(("in", "type"), ("host", "type"), ("array", "type"))
    if t.kind == "char":
        return _role(("out", "type"), ("host", "type"), ("array", "type"))
    return _role(("out", "type"), ("host", "type"), ("scalar", "type"))

"""The target's source idioms (audit-idioms.yaml): its NULL-checking dereference, device-pointer
cast, throw macros and logging calls."""

from __future__ import annotations

import re
from pathlib import Path

from ..base.record import field, record
from ..base.errors import CodegenError
from ..spec.spec_io import load_as


@record
class ReadIdiom:
    """A library helper that reads a host scalar: `pattern` (a regex, `{p}` = the pointer) reads it `as`."""

    pattern: str
    read_as: str  # a scalar type name, `element` (the tensor's element type) or `float-or-double`


@record
class Idioms:
    schema_version: int
    source_dirs: tuple[str, ...]  # where the implementation lives, relative to the source root
    skip_dirs: tuple[str, ...]  # directory names never indexed (device kernels, vendored code)
    extensions: tuple[str, ...]
    deref: tuple[str, ...]  # functions returning the pointee and throwing on NULL
    tie_deref: tuple[str, ...]  # the same for several pointers at once, assigned as a tuple
    device_casts: tuple[str, ...]  # functions turning a `void *` into a device-memory handle
    throws: tuple[str, ...]  # regexes of statements that fail the call
    throw_if: tuple[str, ...]  # macros/functions failing when their first argument (a condition) holds
    asserts: tuple[str, ...]  # macros/functions failing unless their first argument holds
    ignore_calls: tuple[str, ...]  # regexes of calls whose arguments are not uses (logging)
    ignore_if: tuple[str, ...]  # regexes of `if` conditions whose blocks are not uses (logging)
    array_views: tuple[str, ...] = ()  # `view{pointer, count}`: the pointer is an array of `count` elements
    root_namespaces: tuple[str, ...] = ()  # namespaces every definition shares (no help in telling overloads apart)
    defines: dict[str, int] = field(default_factory=dict)  # preprocessor settings picking #if branches
    reads: tuple[ReadIdiom, ...] = ()
    scalar_types: dict[str, str] = field(default_factory=dict)  # C++ type -> element name


def load_idioms(path: Path) -> Idioms:
    if not path.is_file():
        raise CodegenError(f"{path}: no idioms file (the target's audit idioms, e.g. specs/miopen/audit-idioms.yaml)")
    idioms = load_as(Idioms, path)
    if idioms.schema_version != 1:
        raise CodegenError(f"{path}: schema_version: expected 1; got {idioms.schema_version}")
    for rx in (*idioms.throws, *idioms.ignore_calls, *idioms.ignore_if, *(r.pattern for r in idioms.reads)):
        try:
            re.compile(rx.replace("{p}", "p"))
        except re.error as exc:
            raise CodegenError(f"{path}: bad regex {rx!r}: {exc}") from None
    return idioms

"""Spec YAML <-> model, with strict validation that names the YAML path of a bad key.

Serialisation is driven by the model's record fields (their order, defaults and
`metadata`), so load -> dump reproduces a dumped file byte for byte.
"""

from __future__ import annotations

import functools
import os
import stat
import types
import typing
from pathlib import Path
from collections.abc import Callable
from typing import Any, TypeVar

from ..base.record import Field, MISSING, fields, is_record
from ..base import cache
from . import model, rules, validate, yamlread, yamlwrite
from ..base.digest import sha256
from ..base.errors import SpecError
from .releases import Version

T = TypeVar("T")

_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _key(f: Field) -> str:
    return str(f.metadata.get("key") or f.name)


# --------------------------------------------------------------------------- dump
#
# The text is written by codegen/spec/yamlwrite.py (libyaml's emitter's own format); here is what it writes of
# each class: the model's fields in order, their keys, defaults and flow style.

_PLAN: dict[type, list[tuple[str, str, Any, bool, bool, bool]] | None] = {}


def _plan(cls: type) -> list[tuple[str, str, Any, bool, bool, bool]] | None:
    """(attribute, key, default or MISSING, omit when default, flow, flow items) per field; None for a class
    that is not a record."""
    plan = _PLAN.get(cls, False)
    if plan is False:
        plan = _PLAN[cls] = [
            (
                f.name,
                _key(f),
                f.default,
                bool(f.metadata.get("omit_default")),
                bool(f.metadata.get("flow")),
                bool(f.metadata.get("flow_items")),
            )
            for f in fields(cls)
        ] if is_record(cls) else None
    return plan  # type: ignore[return-value]


def dumps(spec: Any) -> str:
    """YAML text of a model object (a spec, or any record of the model)."""
    return yamlwrite.dumps(spec, _plan)


def dumps_events(spec: Any) -> str:
    """`dumps` through libyaml's emitter, every event of the document emitted (the reference)."""
    return yamlwrite.through_libyaml(spec, _plan)


def dumps_for(spec: model.Spec, path: Path) -> str:
    """`dumps(spec)`, refused (with the reader's own error) where the file `path` would be over a limit of the
    reader (`yamlread.too_large`): what one command writes, the next one reads."""
    text = dumps(spec)
    if len(text) > yamlread.MAX_YAML_BYTES or len(text.encode("utf-8")) > yamlread.MAX_YAML_BYTES:
        raise yamlread.too_large(str(path))
    return text


def dump(spec: model.Spec, path: Path) -> None:
    """Write `spec` to `path` in one step (files.write_file: never half a spec); see `dumps_for`."""
    from ..base.files import write_file

    write_file(path, dumps_for(spec, path))


# --------------------------------------------------------------------------- load
#
# Every YAML file the project reads goes through codegen/spec/yamlread.py (limits, duplicate and merge
# keys, tags: docs/limits.md); here its data becomes model objects, each field checked by its rule.

MAX_YAML_DEPTH = yamlread.MAX_YAML_DEPTH
MAX_YAML_NODES = yamlread.MAX_YAML_NODES
MAX_YAML_ALIASES = yamlread.MAX_YAML_ALIASES

_Invalid = rules.Violation
short = rules.short


def _typename(value: Any) -> str:
    return "null" if value is None else type(value).__name__


Converter = Callable[[Any], Any]
_CONVERTERS: dict[Any, Converter] = {}


def _converter(tp: Any) -> Converter:
    """A function validating and converting YAML data to `tp`, built once per type."""
    conv = _CONVERTERS.get(tp)
    if conv is None:
        conv = _CONVERTERS[tp] = _build_converter(tp)
    return conv


def _build_converter(tp: Any) -> Converter:
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        inner = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(inner) != 1:  # pragma: no cover - the model has no such unions
            raise TypeError(f"unsupported union {tp}")
        sub = _converter(inner[0])
        return lambda v: None if v is None else sub(v)
    if origin is typing.Literal:
        allowed = typing.get_args(tp)

        def literal(v: Any) -> Any:
            if isinstance(v, bool) or not isinstance(v, (str, int)) or v not in allowed:
                raise _Invalid(f"expected one of {', '.join(map(str, allowed))}; got {short(v)}")
            return v

        return literal
    if origin is tuple:
        item = _converter(typing.get_args(tp)[0])

        def sequence(v: Any) -> Any:
            if not isinstance(v, list):
                raise _Invalid(f"expected a list; got {_typename(v)}")
            try:
                return tuple([item(x) for x in v])
            except _Invalid as exc:
                for i, x in enumerate(v):  # find the failing index (errors only)
                    try:
                        item(x)
                    except _Invalid as inner_exc:
                        raise inner_exc.within(f"[{i}]") from None
                raise exc  # pragma: no cover

        return sequence
    if origin is dict:
        key_tp, value_tp = typing.get_args(tp)
        kconv, vconv = _converter(key_tp), _converter(value_tp)

        def mapping(v: Any) -> Any:
            if not isinstance(v, dict):
                raise _Invalid(f"expected a mapping; got {_typename(v)}")
            out = {}
            for k, x in v.items():
                try:
                    if not isinstance(k, str):
                        raise _Invalid(f"keys must be strings; got {_typename(k)} {short(k)} (quote it)")
                    out[kconv(k)] = vconv(x)
                except _Invalid as exc:
                    raise exc.within(rules.key_part(k)) from None
            return out

        return mapping
    if is_record(tp):
        return functools.partial(_from_mapping, tp)
    if tp is bool:
        def boolean(v: Any) -> Any:
            if not isinstance(v, bool):
                raise _Invalid(f"expected true or false; got {_typename(v)} {short(v)}")
            return v

        return boolean
    if tp is int:
        def integer(v: Any) -> Any:
            if type(v) is not int:
                raise _Invalid(f"expected an integer; got {_typename(v)} {short(v)}")
            return v

        return integer
    if tp is Version:
        def version(v: Any) -> Any:  # X.Y.Z in its one spelling (the rule), read once into a Version
            if type(v) is not str:
                raise _Invalid(f"expected a version X.Y.Z; got {_typename(v)} {short(v)}")
            why = rules.VERSION.check(v)
            if why:
                raise _Invalid(f"{short(v)}: {why}")
            return Version.parse(v)

        return version
    if tp is str:
        def string(v: Any) -> Any:
            if type(v) is not str:
                raise _Invalid(f"expected a string; got {_typename(v)} {short(v)}")
            return v

        return string
    raise TypeError(f"unsupported type {tp}")  # pragma: no cover


_FIELDS: dict[tuple[type, tuple[str, ...]], tuple[list[tuple[str, str, bool, Converter]], frozenset[str]]] = {}


def _checked(conv: Converter, check: validate.FieldCheck | None) -> Converter:
    """`conv`, then the field's rules from codegen/spec/rules.py."""
    if check is None:
        return conv

    def run(v: Any) -> Any:
        out = conv(v)
        check(out)
        return out

    return run


def _field_plan(cls: type, skip: tuple[str, ...]) -> tuple[list[tuple[str, str, bool, Converter]], frozenset[str]]:
    """(yaml key, attribute, required, converter) per field of `cls`, and the keys allowed."""
    key = (cls, skip)
    done = _FIELDS.get(key)
    if done is None:
        hints = _hints(cls)
        plan = [
            (_key(f), f.name, f.default is MISSING and f.default_factory is MISSING,
             _checked(_converter(hints[f.name]), validate.field_check(cls, f.name, hints[f.name])))
            for f in fields(cls) if f.name not in skip
        ]
        done = _FIELDS[key] = (plan, frozenset(k for k, *_ in plan))
    return done


def _from_mapping(cls: type[T], data: Any, skip: tuple[str, ...] = ()) -> T:
    if not isinstance(data, dict):
        raise _Invalid(f"expected a mapping for {cls.__name__}; got {_typename(data)}")
    plan, allowed = _field_plan(cls, skip)
    if not allowed.issuperset(data):
        extra = next(k for k in data if k not in allowed)
        names = ", ".join(k for k, *_ in plan)
        raise _Invalid(f"unknown key in {cls.__name__}; allowed keys: {names}", [rules.key_part(extra)])
    kwargs: dict[str, Any] = {}
    for key, attr, required, conv in plan:
        if key in data:
            try:
                kwargs[attr] = conv(data[key])
            except _Invalid as exc:
                raise exc.within(key) from None
        elif required:
            raise _Invalid(f"missing required key '{key}' in {cls.__name__}", [key])
    return cls(**kwargs)


#: top-level keys of older specs -> their names now (a spec carrying one is refused with the fix)
RENAMED_KEYS = {"miopen_version": "version", "rocm_release": "release"}


def loads(text: str, source: str = "<spec>") -> model.Spec:
    """Parse and validate spec text; errors name `source`, the line and the YAML path."""
    data = yamlread.read(text, source)
    if not isinstance(data, dict):
        raise SpecError(f"{source}: a spec must be a YAML mapping; got {_typename(data)}")
    version = data.get("schema_version")
    if version != model.SCHEMA_VERSION:
        if version is None:
            raise SpecError(f"{source}: not a miogen spec (it has no schema_version)", path="schema_version")
        raise SpecError(
            f"{source}: schema_version: this generator reads schema version {model.SCHEMA_VERSION}; "
            f"the file has {short(version)} (re-run `miogen parse` to regenerate it)",
            path="schema_version",
        )
    for old_key, new_key in RENAMED_KEYS.items():
        if old_key in data:
            raise yamlread.error(source, yamlread.line_of(text, [old_key]), [old_key],
                                 f"`{old_key}` is now `{new_key}` (one spec format for every target): rename the "
                                 f"key, or re-run `miogen parse` to regenerate the spec")
    try:
        spec = _from_mapping(model.Spec, data)
        validate.check_spec(spec)
        validate.mark_valid(spec)
        return spec
    except _Invalid as exc:
        raise yamlread.error(source, yamlread.line_of(text, exc.parts), exc.parts, exc.message) from None


def load_as(cls: type[T], path: Path, skip: tuple[str, ...] = ()) -> T:
    """Load and validate any YAML file into the record class `cls` (errors name the YAML path); a file loaded
    before comes from the per-user cache (`cache.remembered`)."""
    data = read_bytes(path)
    return _remembered(data, cls, skip, lambda: loads_as(cls, _decode(data, path), str(path), skip))


def loads_as(cls: type[T], text: str, source: str, skip: tuple[str, ...] = ()) -> T:
    """`load_as` on text already read; `source` names it in errors."""
    data = yamlread.read(text, source)
    try:
        return _from_mapping(cls, data, skip)
    except _Invalid as exc:
        raise yamlread.error(source, yamlread.line_of(text, exc.parts), exc.parts, exc.message) from None


def _remembered(data: bytes, cls: type[T], skip: tuple[str, ...], build: Callable[[], T]) -> T:
    """What `build` makes of the file bytes `data` as a `cls`, from the per-user cache when loaded before."""
    key = f"{cls.__module__}.{cls.__qualname__}\0{skip}\0{yamlread.library()}\0{sha256(data).hexdigest()}"
    return cache.remembered(key, cls, build)


def read_bytes(path: Path) -> bytes:
    """The bytes of a YAML file miogen reads: a regular file of at most yamlread.MAX_YAML_BYTES (else SpecError)."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # a directory, a FIFO, /dev/zero: nothing to read
            raise SpecError(f"{path}: not a regular file")
        with path.open("rb") as fh:
            # read what the file holds (up to one byte past the limit): a read sized by the limit alone would
            # allocate the whole limit for every small file
            limit = yamlread.MAX_YAML_BYTES
            size = min(os.fstat(fh.fileno()).st_size, limit) + 1
            data = fh.read(size)
            if len(data) == size and size <= limit:  # it grew since: the rest, to the limit
                data += fh.read(limit + 1 - size)
    except OSError as exc:
        raise SpecError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > yamlread.MAX_YAML_BYTES:
        raise yamlread.too_large(str(path))
    return data


def _decode(data: bytes, path: Path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise SpecError(f"{path}:{line}: not a UTF-8 text file") from None


def load(path: Path, data: bytes | None = None) -> model.Spec:
    """`loads` of a spec file (`data`: its bytes, when already read); a file loaded before comes from the
    per-user cache (`cache.remembered`)."""
    if data is None:
        data = read_bytes(path)
    spec = _remembered(data, model.Spec, (), lambda: loads(_decode(data, path), str(path)))
    validate.mark_valid(spec)
    return spec

"""Spec YAML <-> model, with strict validation that names the YAML path of a bad key.

Serialisation is driven by the model's dataclass fields (their order, defaults and
`metadata`), so load -> dump reproduces a dumped file byte for byte.
"""

from __future__ import annotations

import dataclasses
import hashlib
import types
import typing
from pathlib import Path
from collections.abc import Callable
from typing import Any, TypeVar

import yaml

from . import model
from .errors import SpecError

T = TypeVar("T")

try:  # PyYAML's C implementation; the pure-Python one is the fallback.
    _BaseLoader: type[yaml.SafeLoader] = yaml.CSafeLoader  # type: ignore[assignment]
    _BaseDumper: type[yaml.SafeDumper] = yaml.CSafeDumper  # type: ignore[assignment]
except AttributeError:  # pragma: no cover - only without libyaml
    _BaseLoader = yaml.SafeLoader
    _BaseDumper = yaml.SafeDumper


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _key(f: dataclasses.Field[Any]) -> str:
    return str(f.metadata.get("key") or f.name)


# --------------------------------------------------------------------------- dump
#
# The spec is emitted as YAML events straight from the model, through libyaml's emitter:
# PyYAML's Python representer and resolver would cost more than the whole parse.

_PLAN: dict[type, list[tuple[str, str, Any, bool, bool, bool]]] = {}
_RESOLVER = yaml.resolver.Resolver()
_STR_TAG = "tag:yaml.org,2002:str"


def _plan(cls: type) -> list[tuple[str, str, Any, bool, bool, bool]]:
    """(attribute, key, default or MISSING, omit when default, flow, flow items) per field."""
    if cls not in _PLAN:
        _PLAN[cls] = [
            (
                f.name,
                _key(f),
                f.default,
                bool(f.metadata.get("omit_default")),
                bool(f.metadata.get("flow")),
                bool(f.metadata.get("flow_items")),
            )
            for f in dataclasses.fields(cls)
        ]
    return _PLAN[cls]


_scalars: dict[tuple[type, Any], yaml.ScalarEvent] = {}


def _scalar(value: Any) -> yaml.ScalarEvent:
    """The (shared, read-only) scalar event of a value."""
    key = (type(value), value)
    event = _scalars.get(key)
    if event is None:
        event = _scalars[key] = _new_scalar(value)
    return event


def _new_scalar(value: Any) -> yaml.ScalarEvent:
    if value is None:
        return yaml.ScalarEvent(None, None, (True, False), "null")
    if isinstance(value, bool):
        return yaml.ScalarEvent(None, None, (True, False), "true" if value else "false")
    if isinstance(value, int):
        return yaml.ScalarEvent(None, None, (True, False), str(value))
    text = str(value)
    # a string that would read back as another type (null, true, 1.0, ...) must be quoted
    tag = _RESOLVER.resolve(yaml.ScalarNode, text, (True, False))  # type: ignore[no-untyped-call]
    return yaml.ScalarEvent(None, None, (tag == _STR_TAG, True), text)


_MAP_END = yaml.MappingEndEvent()
_SEQ_END = yaml.SequenceEndEvent()


# Small values that recur all over a spec (a parameter `miopenHandle_t handle`, a type, a role): their
# events are built once per dump and reused.
_MEMO_TYPES = (model.CType, model.Role, model.Param)


def _events(obj: Any, flow: bool, out: list[yaml.Event], item_flow: bool = False,
            memo: dict[tuple[Any, bool], list[yaml.Event]] | None = None) -> None:
    if memo is not None and type(obj) in _MEMO_TYPES:
        memo_key = (obj, flow)
        done = memo.get(memo_key)
        if done is None:
            done = memo[memo_key] = []
            _events(obj, flow, done, item_flow, None)
        out += done
        return
    plan = _PLAN.get(type(obj)) or (_plan(type(obj)) if dataclasses.is_dataclass(obj) else None)
    if plan is not None:
        out.append(yaml.MappingStartEvent(None, None, True, flow_style=flow))
        for attr, key, default, omit, field_flow, items in plan:
            value = getattr(obj, attr)
            if omit and value == default:
                continue
            out.append(_scalar(key))
            if value is None or type(value) in (str, int, bool):
                out.append(_scalar(value))
            else:
                _events(value, flow or field_flow, out, items, memo)
        out.append(_MAP_END)
    elif isinstance(obj, tuple):
        out.append(yaml.SequenceStartEvent(None, None, True, flow_style=flow))
        for v in obj:
            _events(v, flow or item_flow, out, False, memo)
        out.append(_SEQ_END)
    elif isinstance(obj, dict):
        out.append(yaml.MappingStartEvent(None, None, True, flow_style=flow))
        for k, v in obj.items():
            out.append(_scalar(k))
            _events(v, flow, out, False, memo)
        out.append(_MAP_END)
    else:
        out.append(_scalar(obj))


def dumps(spec: Any) -> str:
    """YAML text of a model object (a spec, or any dataclass of the model)."""
    events: list[yaml.Event] = [yaml.StreamStartEvent(), yaml.DocumentStartEvent(explicit=False)]
    _events(spec, False, events, False, {})
    events += [yaml.DocumentEndEvent(explicit=False), yaml.StreamEndEvent()]
    text: str = yaml.emit(events, Dumper=_BaseDumper, width=4096, allow_unicode=True)
    return text


def dump(spec: model.Spec, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(spec), encoding="utf-8")


# --------------------------------------------------------------------------- load


class _Invalid(Exception):
    """A validation error; `parts` is the YAML path, filled in as the error unwinds."""

    def __init__(self, message: str, parts: list[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.parts: list[str] = parts or []

    def within(self, part: str) -> _Invalid:
        self.parts.insert(0, part)
        return self

    @property
    def path(self) -> str:
        return "".join(p if p.startswith("[") else f".{p}" for p in self.parts).lstrip(".")


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
            if isinstance(v, bool) or v not in allowed:
                raise _Invalid(f"expected one of {', '.join(map(str, allowed))}; got {v!r}")
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
                    out[kconv(str(k))] = vconv(x)
                except _Invalid as exc:
                    raise exc.within(str(k)) from None
            return out

        return mapping
    if dataclasses.is_dataclass(tp):
        return lambda v: _from_mapping(tp, v)  # type: ignore[arg-type]
    if tp is bool:
        def boolean(v: Any) -> Any:
            if not isinstance(v, bool):
                raise _Invalid(f"expected true or false; got {_typename(v)} {v!r}")
            return v

        return boolean
    if tp is int:
        def integer(v: Any) -> Any:
            if type(v) is not int:
                raise _Invalid(f"expected an integer; got {_typename(v)} {v!r}")
            return v

        return integer
    if tp is str:
        def string(v: Any) -> Any:
            if type(v) is not str:
                raise _Invalid(f"expected a string; got {_typename(v)} {v!r}")
            return v

        return string
    raise TypeError(f"unsupported type {tp}")  # pragma: no cover


_FIELDS: dict[tuple[type, tuple[str, ...]], list[tuple[str, str, bool, Converter]]] = {}
_ALLOWED: dict[tuple[type, tuple[str, ...]], frozenset[str]] = {}


def _field_plan(cls: type, skip: tuple[str, ...]) -> list[tuple[str, str, bool, Converter]]:
    """(yaml key, attribute, required, converter) per field of `cls`."""
    key = (cls, skip)
    plan = _FIELDS.get(key)
    if plan is None:
        hints = _hints(cls)
        plan = _FIELDS[key] = [
            (_key(f), f.name, f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
             _converter(hints[f.name]))
            for f in dataclasses.fields(cls) if f.name not in skip
        ]
        _ALLOWED[key] = frozenset(k for k, *_ in plan)
    return plan


def _from_mapping(cls: type[T], data: Any, skip: tuple[str, ...] = ()) -> T:
    if not isinstance(data, dict):
        raise _Invalid(f"expected a mapping for {cls.__name__}; got {_typename(data)}")
    plan = _field_plan(cls, skip)
    allowed = _ALLOWED[(cls, skip)]
    if not allowed.issuperset(data):
        extra = next(k for k in data if k not in allowed)
        names = ", ".join(k for k, *_ in plan)
        raise _Invalid(f"unknown key in {cls.__name__}; allowed keys: {names}", [str(extra)])
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


def _line_of(text: str, path: str) -> int | None:
    """1-based line of the YAML node at `path` (best effort, for error messages)."""
    import re

    try:
        node: yaml.Node | None = yaml.compose(text, Loader=_BaseLoader)
    except yaml.YAMLError:
        return None
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        if node is None:
            return None
        if part.startswith("[") and isinstance(node, yaml.SequenceNode):
            idx = int(part[1:-1])
            node = node.value[idx] if idx < len(node.value) else None
        elif isinstance(node, yaml.MappingNode):
            match = [(k, v) for k, v in node.value if k.value == part]
            if not match:
                return node.start_mark.line + 1
            key, value = match[0]
            node = value if part != path.rsplit(".", 1)[-1] else key
        else:
            break
    return None if node is None else node.start_mark.line + 1


# --------------------------------------------------------------------------- fast YAML reading
#
# A spec is tens of thousands of small scalars, mostly the same few hundred strings (type names,
# roles, provenance). PyYAML's constructor resolves and builds each one in Python; here libyaml
# composes the nodes, the tag of each plain scalar is resolved once per distinct spelling, and the
# Python data is built in one walk with each distinct scalar made once. The result equals
# yaml.load(text, Loader=CSafeLoader); anything unusual (merge keys, other tags, unhashable keys)
# goes through PyYAML's own constructor.

_RESOLVED: dict[tuple[str, tuple[bool, bool]], str] = {}
_SCALARS: dict[tuple[str, str], Any] = {}
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"


class _Unusual(Exception):
    """A node the fast walk leaves to PyYAML."""


class _Loader(_BaseLoader):  # type: ignore[misc,valid-type]
    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is yaml.ScalarNode:
            key = (value, implicit)
            tag = _RESOLVED.get(key)
            if tag is None:
                tag = super().resolve(kind, value, implicit)
                if len(_RESOLVED) < 100_000:
                    _RESOLVED[key] = tag
            return tag
        return super().resolve(kind, value, implicit)


def _build(node: yaml.Node, loader: _Loader) -> Any:
    cls = node.__class__
    if cls is yaml.ScalarNode:
        key = (node.tag, node.value)
        try:
            return _SCALARS[key]
        except KeyError:
            value = loader.construct_object(node)
            if len(_SCALARS) < 100_000:
                _SCALARS[key] = value
            return value
    if cls is yaml.MappingNode and node.tag == _MAP_TAG:
        out = {}
        for k, v in node.value:
            if k.tag == "tag:yaml.org,2002:merge" or k.__class__ is not yaml.ScalarNode:
                raise _Unusual
            out[_build(k, loader)] = _build(v, loader)
        return out
    if cls is yaml.SequenceNode and node.tag == _SEQ_TAG:
        return [_build(v, loader) for v in node.value]
    raise _Unusual


def load_yaml(text: str) -> Any:
    """yaml.load(text, Loader=CSafeLoader), faster for spec-like documents."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        try:
            return _build(node, loader)
        except _Unusual:
            pass
    finally:
        loader.dispose()
    return yaml.load(text, Loader=_BaseLoader)


def loads(text: str, source: str = "<spec>") -> model.Spec:
    """Parse and validate spec text; errors name `source`, the line and the YAML path."""
    try:
        data = load_yaml(text)
    except yaml.YAMLError as exc:
        raise SpecError(f"{source}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise SpecError(f"{source}: a spec must be a YAML mapping; got {_typename(data)}")
    version = data.get("schema_version")
    if version != model.SCHEMA_VERSION:
        if version is None:
            raise SpecError(f"{source}: not a miogen spec (it has no schema_version)", path="schema_version")
        raise SpecError(
            f"{source}: schema_version: this generator reads schema version {model.SCHEMA_VERSION}; "
            f"the file has {version!r} (re-run `miogen parse` to regenerate it)",
            path="schema_version",
        )
    try:
        spec = _from_mapping(model.Spec, data)
        _check_references(spec)
        return spec
    except _Invalid as exc:
        line = _line_of(text, exc.path)
        at = f"{source}:{line}" if line else source
        raise SpecError(f"{at}: {exc.path}: {exc.message}", path=exc.path) from None


def _check_references(spec: model.Spec) -> None:
    """What the schema alone cannot check: each type is well formed and names something that exists."""
    from .ctypes_map import FLOAT_CTYPES, INT_BITS

    declared: dict[str, set[str]] = {
        "int": set(INT_BITS),
        "float": set(FLOAT_CTYPES),
        "enum": {e.name for e in spec.enums},
        "handle": {h.name for h in spec.handles},
        "callback": {c.name for c in spec.callbacks},
        "struct": {n for r in spec.records for n in (r.name, r.typedef) if n},
        "union": {n for r in spec.records for n in (r.name, r.typedef) if n},
    }

    def check(t: model.CType, parts: list[str]) -> None:
        """`parts`: the YAML path of the type mapping itself."""
        if t.depth < 0 or len(t.const) != t.depth + 1:
            raise _Invalid(f"depth {t.depth} needs {t.depth + 1} const flags; got {len(t.const)}", parts)
        if t.array is not None and t.array <= 0:
            raise _Invalid(f"array length must be positive; got {t.array}", [*parts, "array"])
        known = declared.get(t.kind)
        if known is not None and t.name not in known:
            raise _Invalid(f"{t.kind} type {t.name!r} is not declared in the spec", [*parts, "name"])

    for i, f in enumerate(spec.functions):
        check(f.returns, ["functions", f"[{i}]", "returns"])
        for j, p in enumerate(f.params):
            check(p.type, ["functions", f"[{i}]", "params", f"[{j}]", "type"])
    def check_record(r: model.Record, parts: list[str]) -> None:
        for j, fld in enumerate(r.fields):
            if fld.type is not None:
                check(fld.type, [*parts, "fields", f"[{j}]", "type"])
            if fld.record is not None:
                check_record(fld.record, [*parts, "fields", f"[{j}]", "record"])

    for i, r in enumerate(spec.records):
        check_record(r, ["records", f"[{i}]"])
    for i, t in enumerate(spec.typedefs):
        check(t.type, ["typedefs", f"[{i}]", "type"])
    for i, c in enumerate(spec.callbacks):
        check(c.returns, ["callbacks", f"[{i}]", "returns"])
        for j, p in enumerate(c.params):
            check(p.type, ["callbacks", f"[{i}]", "params", f"[{j}]", "type"])


def load_as(cls: type[T], path: Path, skip: tuple[str, ...] = ()) -> T:
    """Load and validate any YAML file into the dataclass `cls` (errors name the YAML path)."""
    text = _read(path)
    try:
        data = yaml.load(text, Loader=_BaseLoader)
    except yaml.YAMLError as exc:
        raise SpecError(f"{path}: not valid YAML: {exc}") from None
    try:
        return _from_mapping(cls, data, skip)
    except _Invalid as exc:
        line = _line_of(text, exc.path)
        raise SpecError(f"{path}{f':{line}' if line else ''}: {exc.path}: {exc.message}", path=exc.path) from None


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise SpecError(f"{path}: not a UTF-8 text file") from None


def load(path: Path) -> model.Spec:
    return loads(_read(path), str(path))


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()

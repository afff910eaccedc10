"""Spec YAML <-> model, with strict validation that names the YAML path of a bad key.

Serialisation is driven by the model's dataclass fields (their order, defaults and
`metadata`), so load -> dump reproduces a dumped file byte for byte.
"""

from __future__ import annotations

import dataclasses
import hashlib
import stat
import types
import typing
from pathlib import Path
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import yaml

from . import model, validate
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
            memo: dict[tuple[int, bool], list[yaml.Event]] | None = None) -> None:
    if memo is not None and type(obj) in _MEMO_TYPES:
        memo_key = (id(obj), flow)  # by identity: the dumped object keeps every one alive, and hashing is deep
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
#
# Every YAML file the project reads (specs, annotations, target facts) goes through `_load_yaml`:
# a size limit, then one pass over libyaml's events (nesting depth, alias expansion), then the C
# composer, then a walk over the nodes (duplicate keys, non-scalar keys, merge keys), then the
# constructor. Limits are in docs/limits.md.

#: largest YAML file read (bytes)
MAX_YAML_BYTES = 16 * 1024 * 1024
#: deepest nesting of mappings and sequences
MAX_YAML_DEPTH = 64
#: most nodes, counting every alias as a copy of what it names: above what a 16 MiB spec holds (a spec has
#: about 7 bytes per node; the spec of a 5,000-function header has 950,000), far below what aliases could expand
MAX_YAML_NODES = 2_500_000
#: most aliases in one file
MAX_YAML_ALIASES = 1_000

_Invalid = validate.Violation
short = validate.short


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
                    raise exc.within(validate.key_part(k)) from None
            return out

        return mapping
    if dataclasses.is_dataclass(tp):
        return lambda v: _from_mapping(tp, v)  # type: ignore[arg-type]
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
    if tp is str:
        def string(v: Any) -> Any:
            if type(v) is not str:
                raise _Invalid(f"expected a string; got {_typename(v)} {short(v)}")
            return v

        return string
    raise TypeError(f"unsupported type {tp}")  # pragma: no cover


_FIELDS: dict[tuple[type, tuple[str, ...]], list[tuple[str, str, bool, Converter]]] = {}
_ALLOWED: dict[tuple[type, tuple[str, ...]], frozenset[str]] = {}


def _checked(conv: Converter, check: validate.Check | None) -> Converter:
    """`conv`, then the field's rules from codegen/validate.py."""
    if check is None:
        return conv

    def run(v: Any) -> Any:
        out = conv(v)
        check(out)
        return out

    return run


def _field_plan(cls: type, skip: tuple[str, ...]) -> list[tuple[str, str, bool, Converter]]:
    """(yaml key, attribute, required, converter) per field of `cls`."""
    key = (cls, skip)
    plan = _FIELDS.get(key)
    if plan is None:
        hints = _hints(cls)
        plan = _FIELDS[key] = [
            (_key(f), f.name, f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
             _checked(_converter(hints[f.name]), validate.field_check(cls, f.name, hints[f.name])))
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
        raise _Invalid(f"unknown key in {cls.__name__}; allowed keys: {names}", [validate.key_part(extra)])
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


def _line_of(node: yaml.Node | None, parts: list[str]) -> int | None:
    """1-based line of the YAML node at the path `parts` (best effort, for error messages)."""
    for n, part in enumerate(parts):
        if node is None:
            return None
        if part.startswith("[") and isinstance(node, yaml.SequenceNode):
            try:
                idx = int(part[1:-1])
            except ValueError:
                return node.start_mark.line + 1
            node = node.value[idx] if idx < len(node.value) else None
        elif isinstance(node, yaml.MappingNode):
            match = [(k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == part]
            if not match:
                return node.start_mark.line + 1
            key, value = match[0]
            node = value if n < len(parts) - 1 else key
        else:
            break
    return None if node is None else node.start_mark.line + 1


def _yaml_error(source: str, line: int | None, parts: list[str], message: str) -> SpecError:
    path = validate.Violation("", list(parts)).path
    at = f"{source}:{line}" if line else source
    return SpecError(f"{at}: {path + ': ' if path else ''}{message}", path=path or None)


class _Frame:
    """An open mapping or sequence while scanning events."""

    __slots__ = ("mapping", "nodes", "height", "anchor", "key", "index", "expect_key")

    def __init__(self, mapping: bool, anchor: str | None) -> None:
        self.mapping = mapping
        self.nodes = 1
        self.height = 1
        self.anchor = anchor
        self.key: str | None = None
        self.index = 0
        self.expect_key = True

    def part(self) -> str | None:
        return self.key if self.mapping else f"[{self.index}]"


def _scan_events(text: str, source: str) -> None:
    """Nesting depth and alias expansion, from libyaml's event stream (which never recurses).

    A fast pass counts; only when it finds a problem does a second pass track the YAML path."""
    problem = _count_events(text, source)
    if problem is not None:
        _scan_with_paths(text, source)
        raise SpecError(f"{source}: {problem}")  # pragma: no cover - the second pass raises with the path


def _count_events(text: str, source: str) -> str | None:
    depth = 0
    total = 0
    aliases = 0
    anchors: dict[str, tuple[int, int]] = {}
    open_anchors: list[list[Any]] = []  # [anchor, total at start, depth at start, deepest depth inside]
    try:
        events: Iterable[Any] = yaml.parse(text, Loader=_BaseLoader)
        for event in events:
            kind = type(event)
            if kind is yaml.ScalarEvent:
                total += 1
                if event.anchor is not None:
                    anchors[event.anchor] = (1, 0)
            elif kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
                total += 1
                depth += 1
                if depth > MAX_YAML_DEPTH:
                    return f"nesting deeper than {MAX_YAML_DEPTH} levels"
                for frame in open_anchors:
                    frame[3] = max(frame[3], depth)
                if event.anchor is not None:
                    open_anchors.append([event.anchor, total - 1, depth, depth])
            elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                if open_anchors and open_anchors[-1][2] == depth:
                    name, start, at, deepest = open_anchors.pop()
                    anchors[name] = (total - start, deepest - at + 1)
                depth -= 1
            elif kind is yaml.AliasEvent:
                aliases += 1
                if aliases > MAX_YAML_ALIASES:
                    return f"more than {MAX_YAML_ALIASES} aliases"
                nodes, height = anchors.get(event.anchor, (1, 0))
                total += nodes
                if depth + height > MAX_YAML_DEPTH:
                    return f"nesting deeper than {MAX_YAML_DEPTH} levels (through an alias)"
                for frame in open_anchors:
                    frame[3] = max(frame[3], depth + height)
            if total > MAX_YAML_NODES:
                return f"more than {MAX_YAML_NODES} YAML nodes (aliases counted as copies)"
    except yaml.YAMLError as exc:
        raise SpecError(f"{source}: not valid YAML: {_yaml_message(exc)}") from None
    return None


def _scan_with_paths(text: str, source: str) -> None:
    """The slow pass: the same limits, raising with the line and YAML path of the offending node."""
    stack: list[_Frame] = []
    anchors: dict[str, tuple[int, int]] = {}  # anchor -> (expanded nodes, height) of what it names
    total = 0
    aliases = 0

    def fail(event: Any, message: str) -> SpecError:
        return _yaml_error(source, event.start_mark.line + 1, [p for f in stack if (p := f.part()) is not None],
                           message)

    def done(event: Any, nodes: int, height: int) -> None:
        """A complete node of `nodes` expanded nodes and `height` levels inside the top frame."""
        nonlocal total
        total += nodes
        if total > MAX_YAML_NODES:
            raise fail(event, f"more than {MAX_YAML_NODES} YAML nodes (aliases counted as copies); refusing to "
                              f"expand it")
        if stack:
            top = stack[-1]
            top.nodes += nodes
            if height + 1 > top.height:
                top.height = height + 1
            if top.mapping:
                top.expect_key = not top.expect_key
            else:
                top.index += 1

    events: Iterable[Any] = yaml.parse(text, Loader=_BaseLoader)
    for event in events:
        kind = type(event)
        if kind is yaml.ScalarEvent:
            if stack and stack[-1].mapping and stack[-1].expect_key:
                stack[-1].key = validate.key_part(event.value)
            if event.anchor is not None:
                anchors[event.anchor] = (1, 0)
            done(event, 1, 0)
        elif kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
            if len(stack) >= MAX_YAML_DEPTH:
                raise fail(event, f"nesting deeper than {MAX_YAML_DEPTH} levels")
            stack.append(_Frame(kind is yaml.MappingStartEvent, event.anchor))
        elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
            frame = stack.pop()
            if frame.anchor is not None:
                anchors[frame.anchor] = (frame.nodes, frame.height)
            done(event, frame.nodes, frame.height)
        elif kind is yaml.AliasEvent:
            aliases += 1
            if aliases > MAX_YAML_ALIASES:
                raise fail(event, f"more than {MAX_YAML_ALIASES} aliases")
            nodes, height = anchors.get(event.anchor, (1, 0))
            if len(stack) + height > MAX_YAML_DEPTH:
                raise fail(event, f"nesting deeper than {MAX_YAML_DEPTH} levels (through an alias)")
            done(event, nodes, height)


def _yaml_message(exc: BaseException) -> str:
    text = str(exc)
    return text if len(text) <= 500 else text[:497] + "..."


_MERGE_TAG = "tag:yaml.org,2002:merge"


def _check_nodes(root: yaml.Node, loader: Any, source: str) -> None:
    """Duplicate keys, and merge keys (`<<`), which hide them: refused with the key's line and path."""
    # entries: (node, path) with path a linked pair (parent path, part), unrolled only for a message
    stack: list[tuple[yaml.Node, Any]] = [(root, None)]
    seen: set[int] = set()
    mapping_node, sequence_node, scalar_node = yaml.MappingNode, yaml.SequenceNode, yaml.ScalarNode

    def unroll(path: Any) -> list[str]:
        parts: list[str] = []
        while path is not None:
            path, part = path
            parts.append(part)
        return parts[::-1]

    while stack:
        node, path = stack.pop()
        kind = type(node)
        if kind is scalar_node:
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        if kind is sequence_node:
            stack.extend((v, (path, f"[{i}]")) for i, v in enumerate(node.value) if type(v) is not scalar_node)
        elif kind is mapping_node:
            keys: dict[Any, int] = {}
            for k, v in node.value:
                if type(k) is not scalar_node:
                    raise _yaml_error(source, k.start_mark.line + 1, unroll(path), "a mapping key must be a plain scalar")
                if k.tag == _STR_TAG:
                    key: Any = k.value
                    ident: Any = key
                else:
                    if k.tag == _MERGE_TAG:
                        raise _yaml_error(source, k.start_mark.line + 1, unroll(path), "merge keys (<<) are not supported")
                    try:
                        key = loader.construct_object(k)
                    except Exception as exc:  # a key the constructor refuses (a bad timestamp, a huge int, ...)
                        raise _yaml_error(source, k.start_mark.line + 1, unroll(path),
                                          f"bad key: {_yaml_message(exc)}") from None
                    ident = (type(key).__name__, key if isinstance(key, (int, float, bool)) or key is None
                             else repr(key))
                if ident in keys:
                    raise _yaml_error(source, k.start_mark.line + 1, [*unroll(path), validate.key_part(key)],
                                      f"duplicate key {short(key)} (first at line {keys[ident]}); YAML keeps only the "
                                      f"last, so one of them would be lost")
                keys[ident] = k.start_mark.line + 1
                if type(v) is not scalar_node:
                    stack.append((v, (path, validate.key_part(key))))


def _load_yaml(text: str, source: str) -> tuple[Any, yaml.Node | None]:
    """The data of a YAML document, and its root node (for line numbers); SpecError on anything wrong."""
    if len(text) > MAX_YAML_BYTES:
        raise SpecError(f"{source}: {len(text)} characters; YAML files are read up to {MAX_YAML_BYTES} bytes")
    _scan_events(text, source)
    loader = _Loader(text)
    try:
        try:
            node = loader.get_single_node()
        except yaml.YAMLError as exc:
            raise SpecError(f"{source}: not valid YAML: {_yaml_message(exc)}") from None
        if node is None:
            return None, None
        _check_nodes(node, loader, source)
        try:
            try:
                data = _build(node, loader)  # the fast walk (below); unusual nodes go to PyYAML's constructor
            except _Unusual:
                data = loader.construct_document(node)
        except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError) as exc:
            raise SpecError(f"{source}: not valid YAML: {_yaml_message(exc)}") from None
        return data, node
    finally:
        loader.dispose()
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
    data, node = _load_yaml(text, source)
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
    try:
        spec = _from_mapping(model.Spec, data)
        validate.check_spec(spec)
        validate.mark_valid(spec)
        return spec
    except _Invalid as exc:
        raise _yaml_error(source, _line_of(node, exc.parts), exc.parts, exc.message) from None


def load_as(cls: type[T], path: Path, skip: tuple[str, ...] = ()) -> T:
    """Load and validate any YAML file into the dataclass `cls` (errors name the YAML path)."""
    return loads_as(cls, _read(path), str(path), skip)


def loads_as(cls: type[T], text: str, source: str, skip: tuple[str, ...] = ()) -> T:
    """`load_as` on text already read; `source` names it in errors."""
    data, node = _load_yaml(text, source)
    try:
        return _from_mapping(cls, data, skip)
    except _Invalid as exc:
        raise _yaml_error(source, _line_of(node, exc.parts), exc.parts, exc.message) from None


def _read(path: Path) -> str:
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # a directory, a FIFO, /dev/zero: nothing to read
            raise SpecError(f"{path}: not a regular file")
        with path.open("rb") as fh:
            data = fh.read(MAX_YAML_BYTES + 1)
    except OSError as exc:
        raise SpecError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_YAML_BYTES:
        raise SpecError(f"{path}: larger than {MAX_YAML_BYTES} bytes; not a YAML file miogen reads")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise SpecError(f"{path}:{line}: not a UTF-8 text file") from None


def load(path: Path) -> model.Spec:
    return loads(_read(path), str(path))


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()

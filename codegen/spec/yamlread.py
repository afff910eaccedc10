"""Reading one YAML document, checked, in one pass over libyaml's events.

Every YAML file miogen reads (specs, annotations, target facts) comes through `read`: a size limit,
then libyaml's C parser, whose events are built into Python data here, without the composer's node
tree and without recursion. On the way it refuses, with the line and the YAML path, what would
otherwise be silently lost or unbounded: nesting deeper than MAX_YAML_DEPTH, more than MAX_YAML_NODES
nodes (an alias counting as a copy of what it names), more than MAX_YAML_ALIASES aliases, duplicate
keys (YAML keeps the last), merge keys (which hide duplicates), keys that are not scalars, undefined or
recursive aliases, and tags other than the core schema's. Scalars are resolved and constructed as
PyYAML's SafeLoader does (once per distinct spelling). Limits are in docs/limits.md.

A document in the layout miogen writes its specs in (codegen/spec/yamlwrite.py's `direct`: block
mappings of name keys, sequences in them not indented, one-line flow collections, plain and single-quoted
printable ASCII scalars) is read line by line without libyaml (`_direct`, a third of the time), with what
libyaml reads it as; it declines anything else, and libyaml reads that (and says what is wrong with it).

Line numbers of errors found later in the data (a wrong type under some key) come from `line_of`,
which composes the node tree of the text only then.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
from typing import Any

from . import rules
from .rules import short
from .yamlwrite import BLOCK_INDICATOR, FIRST_INDICATORS, PLAIN
from ..base.errors import SpecError

# PyYAML is imported where a file is read, not with this module: a parse that finds its target facts in
# the per-user cache and writes its spec (codegen/spec/yamlwrite.py) never loads it.


def _loader(text: str) -> Any:
    """libyaml's loader of `text` (PyYAML's pure-Python one without libyaml)."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)


def library() -> str:
    """Which PyYAML reads (for cache keys), without importing it: its package file and that file's stamp."""
    found = importlib.util.find_spec("yaml")
    origin = found.origin if found is not None else None
    if origin is None:  # pragma: no cover - PyYAML is a dependency
        return "no PyYAML"
    try:
        st = os.stat(origin)
    except OSError:  # pragma: no cover
        return origin
    return f"{origin}\0{st.st_size}\0{st.st_mtime_ns}"

#: largest YAML file read (bytes)
MAX_YAML_BYTES = 16 * 1024 * 1024
#: deepest nesting of mappings and sequences
MAX_YAML_DEPTH = 64
#: most nodes, counting every alias as a copy of what it names: more than a 16 MiB file miogen writes holds
#: (3.4 bytes a node; a spec takes about 7, the 5,000-function synthetic spec 950,000 nodes in 6.7 MB)
MAX_YAML_NODES = 5_000_000
#: most aliases in one file
MAX_YAML_ALIASES = 1_000

_STR_TAG = "tag:yaml.org,2002:str"
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MERGE_TAG = "tag:yaml.org,2002:merge"

#: (resolved tag, spelling) -> constructed value, shared by every read; bounded
_SCALARS: dict[tuple[str, str], Any] = {}
_RESOLVED: dict[tuple[str, tuple[bool, bool]], str] = {}
_CACHE_MAX = 100_000
_MISSING = object()


def message(exc: BaseException) -> str:
    text = str(exc)
    return text if len(text) <= 500 else text[:497] + "..."


def error(source: str, line: int | None, parts: list[str], text: str) -> SpecError:
    path = rules.Violation("", list(parts)).path
    at = f"{source}:{line}" if line else source
    return SpecError(f"{at}: {path + ': ' if path else ''}{text}", path=path or None)


class _Frame:
    """An open mapping or sequence."""

    __slots__ = ("container", "is_map", "key", "expect_key", "keys", "anchor", "start", "deepest", "depth", "at",
                 "in_map")

    def __init__(self, container: Any, is_map: bool, anchor: str | None, start: int, depth: int,
                 parent: _Frame | None) -> None:
        self.container: Any = container
        self.is_map: bool = is_map
        # where it sits in its parent: the key or the index there (its YAML path part, made by `part` on an error)
        self.in_map: bool | None = parent.is_map if parent is not None else None
        self.at: Any = None if parent is None else parent.key if parent.is_map else len(parent.container)
        self.key: Any = None
        self.expect_key = True
        self.keys: dict[Any, Any] = {}  # key identity -> its event's start mark (duplicates)
        self.anchor = anchor
        self.start = start  # nodes before it (for an anchor's size)
        self.deepest = depth  # deepest level inside (for an anchor's height)
        self.depth = depth

    @property
    def part(self) -> str | None:
        """Its YAML path part in its parent (None for the root)."""
        if self.in_map is None:
            return None
        return rules.key_part(self.at) if self.in_map else f"[{self.at}]"


def too_large(source: str) -> SpecError:
    """The one error for a YAML file over MAX_YAML_BYTES: a reader refuses to read it, and a writer (a spec
    `miogen parse` or `upgrade` writes) refuses to write it, with the same words."""
    return SpecError(f"{source}: larger than {MAX_YAML_BYTES} bytes, the limit of a YAML file miogen reads (and "
                     f"so of one it writes)")


def read(text: str, source: str) -> Any:
    """The data of the YAML document `text` (None when empty); SpecError naming `source`, the line and the
    YAML path on anything malformed or over a limit."""
    if len(text) > MAX_YAML_BYTES:
        raise too_large(source)
    data = _direct(text)
    return data if data is not _DECLINED else _through_libyaml(text, source)


def _through_libyaml(text: str, source: str) -> Any:
    """`read` of any document: one pass over libyaml's events."""
    import yaml

    loader = _loader(text)
    try:
        return _Reader(loader, source).document()
    except yaml.YAMLError as exc:
        raise SpecError(f"{source}: not valid YAML: {message(exc)}") from None
    finally:
        loader.dispose()


class _Reader:
    def __init__(self, loader: Any, source: str) -> None:
        self.loader = loader
        self.source = source
        self.stack: list[_Frame] = []

    def fail(self, event: Any, text: str, extra: str | None = None) -> SpecError:
        parts = [part for part in (f.part for f in self.stack) if part is not None]
        if self.stack:  # the element of the innermost one being read
            top = self.stack[-1]
            if not top.is_map:
                parts.append(f"[{len(top.container)}]")
            elif not top.expect_key:
                parts.append(rules.key_part(top.key))
        if extra is not None:
            parts.append(extra)
        return error(self.source, event.start_mark.line + 1, parts, text)

    def scalar(self, event: Any, as_key: bool) -> tuple[Any, str]:
        """The value of a scalar event and its tag."""
        import yaml

        tag = event.tag
        value = event.value
        if tag is None or tag == "!":
            tag = _implicit_tag(self.loader.resolve, value, event.implicit)
        if tag == _STR_TAG:
            return value, tag
        key = (tag, value)
        out = _SCALARS.get(key, _MISSING)
        if out is _MISSING:
            if tag == _MERGE_TAG:
                if as_key:
                    raise self.fail(event, "merge keys (<<) are not supported")
                raise self.fail(event, "not valid YAML: a merge key (<<) where a value belongs")
            node = yaml.ScalarNode(tag, value, event.start_mark, event.end_mark, event.style)
            try:
                out = self.loader.construct_object(node)
            except Exception as exc:  # noqa: BLE001 - PyYAML's scalar constructors raise all sorts (a bad timestamp)
                if as_key:
                    raise self.fail(event, f"bad key: {message(exc)}") from None
                raise self.fail(event, f"not valid YAML: {message(exc)}") from None
            finally:
                self.loader.constructed_objects.clear()
            if len(_SCALARS) < _CACHE_MAX:
                _SCALARS[key] = out
        return out, tag

    def document(self) -> Any:
        import yaml

        get = self.loader.get_event
        stack = self.stack
        anchors: dict[str, tuple[Any, int, int]] = {}  # name -> (value, expanded nodes, height)
        open_anchors: list[_Frame] = []
        scalar_event, alias_event = yaml.ScalarEvent, yaml.AliasEvent
        map_start, seq_start = yaml.MappingStartEvent, yaml.SequenceStartEvent
        map_end, seq_end = yaml.MappingEndEvent, yaml.SequenceEndEvent
        total = 0
        aliases = 0
        root: Any = None
        get()  # the stream's start
        event = get()
        if type(event) is yaml.StreamEndEvent:
            return None
        while True:
            event = get()
            kind = type(event)
            top = stack[-1] if stack else None
            as_key = top is not None and top.is_map and top.expect_key
            if kind is scalar_event:
                total += 1
                value = event.value  # a plain string, its spelling resolved before: no call (most of a spec)
                tag = _RESOLVED.get((value, event.implicit)) if event.tag is None else None
                if tag != _STR_TAG:
                    value, tag = self.scalar(event, as_key)
                if event.anchor is not None:
                    anchors[event.anchor] = (value, 1, 0)
            elif kind is map_start or kind is seq_start:
                is_map = kind is map_start
                if event.tag not in (None, "!", _MAP_TAG if is_map else _SEQ_TAG):
                    raise self.fail(event, f"not valid YAML: the tag {short(event.tag)} is not one miogen reads "
                                           f"(plain mappings and sequences only)")
                if as_key:
                    raise self.fail(event, "a mapping key must be a plain scalar")
                if len(stack) >= MAX_YAML_DEPTH:
                    raise self.fail(event, f"nesting deeper than {MAX_YAML_DEPTH} levels")
                total += 1
                container: Any = {} if is_map else []
                frame = _Frame(container, is_map, event.anchor, total - 1, len(stack) + 1, top)
                if top is None:
                    root = container
                else:
                    self._attach(top, container)
                stack.append(frame)
                for f in open_anchors:
                    f.deepest = max(f.deepest, frame.depth)
                if event.anchor is not None:
                    open_anchors.append(frame)
                if total > MAX_YAML_NODES:
                    raise self.fail(event, f"more than {MAX_YAML_NODES} YAML nodes (aliases counted as copies)")
                continue
            elif kind is map_end or kind is seq_end:
                frame = stack.pop()
                if frame.anchor is not None:
                    open_anchors.remove(frame)
                    anchors[frame.anchor] = (frame.container, total - frame.start, frame.deepest - frame.depth + 1)
                continue
            elif kind is alias_event:
                aliases += 1
                if aliases > MAX_YAML_ALIASES:
                    raise self.fail(event, f"more than {MAX_YAML_ALIASES} aliases")
                entry = anchors.get(event.anchor)
                if entry is None:
                    opened = any(f.anchor == event.anchor for f in open_anchors)
                    raise self.fail(event, f"{'recursive' if opened else 'undefined'} alias *{short(event.anchor)}")
                value, nodes, height = entry
                if as_key and isinstance(value, (dict, list)):
                    raise self.fail(event, "a mapping key must be a plain scalar")
                if len(stack) + height > MAX_YAML_DEPTH:
                    raise self.fail(event, f"nesting deeper than {MAX_YAML_DEPTH} levels (through an alias)")
                for f in open_anchors:
                    f.deepest = max(f.deepest, len(stack) + height)
                total += nodes
                tag = _STR_TAG if type(value) is str else ""
            elif kind is yaml.DocumentEndEvent:
                if type(get()) is not yaml.StreamEndEvent:
                    raise self.fail(event, "not valid YAML: expected a single document in the stream")
                return root
            else:  # pragma: no cover - libyaml emits nothing else inside a document
                raise self.fail(event, f"not valid YAML: unexpected {kind.__name__}")
            if total > MAX_YAML_NODES:
                raise self.fail(event, f"more than {MAX_YAML_NODES} YAML nodes (aliases counted as copies); "
                                       f"refusing to expand it")
            if top is None:
                root = value
            elif as_key:
                ident = value if tag == _STR_TAG else (
                    type(value).__name__, value if isinstance(value, (int, float, bool)) or value is None
                    else repr(value))
                first = top.keys.get(ident)
                if first is not None:
                    raise self.fail(event, f"duplicate key {short(value)} (first at line {first.line + 1}); YAML "
                                           f"keeps only the last, so one of them would be lost", rules.key_part(value))
                top.keys[ident] = event.start_mark
                top.key = value
                top.expect_key = False
            elif top.is_map:
                top.container[top.key] = value
                top.expect_key = True
            else:
                top.container.append(value)

    @staticmethod
    def _attach(top: _Frame, value: Any) -> None:
        if top.is_map:
            top.container[top.key] = value
            top.expect_key = True
        else:
            top.container.append(value)


# --------------------------------------------------------------------------- the direct reader

_DECLINED = object()
#: the characters the direct reader takes: printable ASCII and the line break
_DIRECT_BYTES = bytes([10, *range(32, 127)])


#: a line of the direct layout: its indentation, a sequence item's `- `, a key (a name) with its value or none
#: (the value on the lines below), or a value alone (compiled at its first use, re keeps it: a parse reads no
#: YAML of this layout)
_LINE = r"( *)(- )?(?:([A-Za-z_][A-Za-z0-9_]*):(?: (.+))?|(.+))"
#: one piece of a flow collection: a bracket, a separator, a single-quoted scalar (its text) or a plain one (ASCII)
_FLOW_PIECE = r"([\[\]{}])|(, |: )|'((?:[^']|'')*)'|(" + PLAIN.pattern + ")"


_PLAIN_IMPLICIT = (True, False)  # a plain scalar's event
#: one-line flow collections read -> (data, nodes, depth), shared by every read (each read takes a copy); bounded
_FLOWS: dict[str, tuple[Any, int, int]] = {}


@functools.cache
def _resolver() -> tuple[Any, Any, frozenset[str]]:
    """PyYAML's resolver and constructor of SafeLoader's types (libyaml's loader has these two), and the first
    characters of a plain scalar that may read as another type than a string (its implicit resolvers')."""
    import yaml

    resolver = yaml.resolver.Resolver()
    return resolver, yaml.constructor.SafeConstructor(), frozenset(resolver.yaml_implicit_resolvers)


def _implicit_tag(resolve: Any, value: str, implicit: tuple[bool, bool]) -> str:
    """The tag PyYAML's resolver (`resolve`) gives an untagged scalar spelt `value`, remembered per spelling."""
    rkey = (value, implicit)
    tag: str | None = _RESOLVED.get(rkey)
    if tag is None:
        import yaml

        tag = resolve(yaml.ScalarNode, value, implicit)
        if len(_RESOLVED) < _CACHE_MAX:
            _RESOLVED[rkey] = tag
    return tag


def _plain(value: str) -> Any:
    """The value of the plain scalar `value` as SafeLoader constructs it (YAML 1.1's implicit types; the spellings
    resolved and constructed shared with `_Reader.scalar`); _DECLINED for a merge key or a spelling PyYAML refuses."""
    resolver, constructor, typed = _resolver()
    if value[0] not in typed:
        return value
    tag = _implicit_tag(resolver.resolve, value, _PLAIN_IMPLICIT)
    if tag == _STR_TAG:
        return value
    out = _SCALARS.get((tag, value), _MISSING)
    if out is _MISSING:
        if tag == _MERGE_TAG:
            return _DECLINED
        import yaml

        try:
            out = constructor.construct_object(yaml.ScalarNode(tag, value))
        except Exception:  # noqa: BLE001 - libyaml's reading says what is wrong with it
            return _DECLINED
        finally:
            constructor.constructed_objects.clear()
        if len(_SCALARS) < _CACHE_MAX:
            _SCALARS[(tag, value)] = out
    return out


def _flow(text: str) -> tuple[Any, int, int] | None:
    """The one-line flow collection `text`: (its data, its nodes, its depth); None where the direct reader
    declines it (pieces not in the layout, a key that is no string, a duplicate key)."""
    stack: list[list[Any]] = []  # [container, is a mapping, state, key]; states: 0 opened, 1 after `, `,
    # 2 after an entry, 3 after a key, 4 after `: `
    root: Any = _DECLINED
    nodes = deepest = pos = 0
    for match in re.finditer(_FLOW_PIECE, text, re.ASCII):
        if match.start() != pos or root is not _DECLINED:
            return None
        pos = match.end()
        bracket, separator, quoted, plain = match.groups()
        top = stack[-1] if stack else None
        if separator is not None:
            if top is None or separator != (", " if top[2] == 2 else ": " if top[2] == 3 else None):
                return None
            top[2] = 1 if separator == ", " else 4
            continue
        value: Any
        if bracket is not None and bracket in "]}":
            if top is None or top[2] not in (0, 2) or top[1] != (bracket == "}"):
                return None
            value = stack.pop()[0]
            top = stack[-1] if stack else None
        elif bracket is not None:  # where it may not stand, its end finds (as a key too)
            nodes += 1
            stack.append([{} if bracket == "{" else [], bracket == "{", 0, None])
            deepest = max(deepest, len(stack))
            continue
        else:
            nodes += 1
            value = quoted.replace("''", "'") if quoted is not None else _plain(plain)
            if top is None or value is _DECLINED:
                return None
            if top[1] and top[2] in (0, 1):  # a key
                if type(value) is not str or value in top[0]:
                    return None
                top[2], top[3] = 3, value
                continue
        if top is None:
            root = value
        elif top[1] and top[2] == 4:
            top[0][top[3]] = value
            top[2] = 2
        elif not top[1] and top[2] in (0, 1):
            top[0].append(value)
            top[2] = 2
        else:
            return None
    if pos != len(text) or root is _DECLINED:
        return None
    return root, nodes, deepest


def _copy(value: Any) -> Any:
    """A copy of the containers of `value` (its scalars shared: immutable)."""
    if type(value) is dict:
        return {k: v if type(v) not in (dict, list) else _copy(v) for k, v in value.items()}
    if type(value) is list:
        return [v if type(v) not in (dict, list) else _copy(v) for v in value]
    return value


def _direct(text: str) -> Any:
    """The data of `text` where it is in the layout of yamlwrite.direct (a mapping at the root), read as libyaml
    reads it, within the limits; _DECLINED for anything else."""
    if not text.endswith("\n") or not text.isascii() or text.encode("ascii").translate(None, _DIRECT_BYTES):
        return _DECLINED
    lines = text.split("\n")
    lines.pop()
    nodes = 3 * len(lines)  # at most a container, a key and a value a line; and each flow collection's
    root: dict[str, Any] = {}
    stack: list[tuple[Any, int, bool]] = [(root, 0, True)]  # (container, indentation, is a mapping)
    pending: tuple[dict[str, Any], str, int] | None = None  # a key whose value starts on the next line
    names: dict[str, bool] = {}  # key -> read as this string
    line_match = re.compile(_LINE).fullmatch
    for line in lines:
        match = line_match(line)
        if match is None:
            return _DECLINED
        spaces, item, key, rest, alone = match.groups()
        indent = len(spaces)
        if pending is not None:
            mapping, name, at = pending
            pending = None
            if indent == at + 2 and item is None:
                new: Any = {}
            elif indent == at and item is not None:
                new = []
            else:
                return _DECLINED
            mapping[name] = new
            stack.append((new, indent, item is None))
            if len(stack) >= MAX_YAML_DEPTH:
                return _DECLINED
        else:
            top = stack[-1]
            while top[1] > indent or (top[1] == indent and not top[2] and item is None):
                stack.pop()
                if not stack:
                    return _DECLINED
                top = stack[-1]
            if top[1] != indent:
                return _DECLINED
        container, at, is_map = stack[-1]
        if not is_map:  # a sequence's item: a value, or a mapping's first entry
            if item is None:
                return _DECLINED
            if key is None:
                value = _value(alone, len(stack))
                if value is _DECLINED:
                    return _DECLINED
                container.append(value[0])
                nodes += value[1]
                continue
            container = {}
            stack[-1][0].append(container)
            at = indent + 2
            stack.append((container, at, True))
            if len(stack) >= MAX_YAML_DEPTH:
                return _DECLINED
        elif key is None or item is not None:
            return _DECLINED
        ok = names.get(key)
        if ok is None:
            ok = names[key] = _plain(key) is key
        if not ok or key in container:
            return _DECLINED
        if rest is None:
            pending = (container, key, at)
            continue
        value = _value(rest, len(stack))
        if value is _DECLINED:
            return _DECLINED
        container[key] = value[0]
        nodes += value[1]
    if pending is not None or nodes > MAX_YAML_NODES:
        return _DECLINED
    return root


def _value(text: str, depth: int) -> Any:
    """(data, flow nodes) of a block mapping's value or a sequence's item (`text`, at the nesting `depth`), as the
    direct reader reads it; _DECLINED where it declines it."""
    first = text[0]
    if first == "[" or first == "{":
        done = _FLOWS.get(text)
        if done is None:
            read = _flow(text)
            if read is None:
                return _DECLINED
            done = read
            if len(_FLOWS) < _CACHE_MAX:
                _FLOWS[text] = done
        return _DECLINED if depth + done[2] >= MAX_YAML_DEPTH else (_copy(done[0]), done[1])
    if first == "'":
        inner = text[1:-1]
        if len(text) < 2 or text[-1] != "'" or "'" in inner.replace("''", ""):
            return _DECLINED
        return inner.replace("''", "'"), 0
    if first in FIRST_INDICATORS or first == " " or text[-1] == " " or (first in "?:-" and text[1:2] in ("", " ")) \
            or text[:3] in ("---", "...") or BLOCK_INDICATOR.search(text) is not None:
        return _DECLINED
    value = _plain(text)
    return _DECLINED if value is _DECLINED else (value, 0)


def line_of(text: str, parts: list[str]) -> int | None:
    """1-based line of the YAML node at the path `parts` of a document `read` accepted (best effort, for
    error messages): composes its node tree now."""
    import yaml

    loader = _loader(text)
    try:
        node = loader.get_single_node()
    except yaml.YAMLError:  # pragma: no cover - `read` accepted it
        return None
    finally:
        loader.dispose()
    for n, part in enumerate(parts):
        if node is None:
            return None
        if part.startswith("[") and isinstance(node, yaml.SequenceNode):
            try:
                idx = int(part[1:-1])
            except ValueError:
                return int(node.start_mark.line) + 1
            node = node.value[idx] if idx < len(node.value) else None
        elif isinstance(node, yaml.MappingNode):
            match = [(k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == part]
            if not match:
                return int(node.start_mark.line) + 1
            key, value = match[0]
            node = value if n < len(parts) - 1 else key
        else:
            break
    return None if node is None else int(node.start_mark.line) + 1

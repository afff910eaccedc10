"""YAML text of model objects: what libyaml's emitter writes for them, byte for byte.

Two writers of one format (block style, libyaml's defaults: indent 2, a sequence in a mapping not
indented, width 4096, unicode as it is):

* `direct`: the text written straight from the objects. It spells only what it can spell exactly (plain
  and single-quoted one-line ASCII scalars, short lines) and gives None for anything else; tests compare it
  with the reference on every committed spec, on generated scalars and on generated structures.
* `through_libyaml`: the objects as YAML events through libyaml's emitter (the reference, and the writer of
  everything `direct` declines). PyYAML is imported only here: a parse whose spec `direct` writes never loads it.

`plan(cls)` (spec_io's field plan) says how each class of object is written: per field its attribute,
key, default, whether it is left out when default, and whether it (or each of its items) is in flow style.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from .releases import Version

#: per field: (attribute, key, default or MISSING, omit when default, flow, flow items); None: not a mapping
Plan = Callable[[type], "list[tuple[str, str, Any, bool, bool, bool]] | None"]

WIDTH = 4096  # libyaml's line width for miogen's files (past it, libyaml folds; `direct` declines)
_LONGEST = WIDTH - 256  # the longest line `direct` writes

# --------------------------------------------------------------------------- scalars
#
# A scalar libyaml writes plain in block and flow context alike: printable ASCII with no indicator that
# could start or end it differently (libyaml's analysis: no `,[]{}?:#'"!|>%@\`` and no leading `-` or `.`
# before a non-digit, no leading or trailing space, no line break). Such a string is written plain unless
# YAML 1.1's implicit types would read it back as something else; then in single quotes.
PLAIN = re.compile(r"(?:[A-Za-z0-9_]|[-+.][0-9])(?:[A-Za-z0-9_.+\-()*&/<>=~^$ ]*[A-Za-z0-9_.+\-()*&/<>=~^$])?",
                   re.ASCII)
# YAML 1.1's implicit types (PyYAML's resolver) for the strings PLAIN admits: a string starting with a
# letter or `_` can only read back as a bool or null; one starting with a digit, sign or dot as a number
# or a timestamp.
_WORDS = frozenset("yes Yes YES no No NO true True TRUE false False FALSE on On ON off Off OFF null Null NULL".split())
_NUMBER_RE = (
    r"""[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
    |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
    |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN)
    |[-+]?0b[0-1_]+
    |[-+]?0[0-7_]+
    |[-+]?(?:0|[1-9][0-9_]*)
    |[-+]?0x[0-9a-fA-F_]+
    |[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+
    |[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]
    |[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?
     (?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?"""
)


#: the letters a string _NUMBER_RE matches can hold, but for hex digits after `0x`: exponents, `.inf`, `.nan`, `0b`, and
#: a timestamp's `T`/`t`/`Z`
_NUMBER_LETTERS = frozenset("eEinfINFaANbTtZ")


@functools.cache
def _number() -> re.Pattern[str]:
    """_NUMBER_RE, compiled when a string `_is_number` cannot rule out is first written."""
    return re.compile(_NUMBER_RE, re.X)


def _is_number(value: str) -> bool:
    """Whether YAML 1.1 reads `value` as a number or a timestamp. Without the regex where `value` cannot be one, read
    off _NUMBER_RE's alternatives: each has at most one `.`, and none but hex (which has an `x`) a letter outside
    _NUMBER_LETTERS (a release `3.5.1` and a sha256 are written without compiling it); nor for a plain decimal
    integer (its alternative `[-+]?(?:0|[1-9][0-9_]*)`: a default argument `-1`)."""
    if value.count(".") > 1 or ("x" not in value and any(c.isalpha() and c not in _NUMBER_LETTERS for c in value)):
        return False
    digits = value[1:] if value[0] in "+-" else value
    if digits.isascii() and digits.isdigit() and (digits == "0" or digits[0] != "0"):
        return True
    return _number().fullmatch(value) is not None


class _Declined(Exception):
    """Something `direct` does not spell exactly: the caller goes through libyaml."""


_SCALARS: dict[tuple[type, Any], str] = {}  # the spelling of each scalar written; bounded
_SCALARS_MAX = 100_000


def _scalar(value: Any) -> str:
    key = (type(value), value)
    text = _SCALARS.get(key)
    if text is None:
        if len(_SCALARS) >= _SCALARS_MAX:
            _SCALARS.clear()
        text = _SCALARS[key] = _new_scalar(value)
    return text


def _new_scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if type(value) is int:
        return str(value)
    if type(value) is Version:  # a release: written X.Y.Z
        value = str(value)
    if type(value) is not str:
        raise _Declined
    if value == "":
        return "''"
    if PLAIN.fullmatch(value) is None:
        raise _Declined
    first = value[0]
    if (first in "0123456789+-." and _is_number(value)) or value in _WORDS:
        return f"'{value}'"
    return value


# A string that is no such scalar, as the value of a block mapping (the header's words of a spec: `brief`, `doc`):
# printable ASCII without leading or trailing space, written plain where libyaml's analysis finds no block
# indicator (one of `#,[]{}&*!|>'"%@`` or `?:-` before a space first; `: ` or ` #` later) and YAML 1.1 would read
# it back as a string (no number, bool, null, merge or value), else in single quotes (`'` doubled). Anything else
# is declined.
FIRST_INDICATORS = frozenset("#,[]{}&*!|>'\"%@`")
BLOCK_INDICATOR = re.compile(r": | #|:$")
_SIGNS = frozenset(("~", "<<", "="))  # null, merge and value: the other strings YAML 1.1 reads as no string
_BLOCK_SCALARS: dict[str, str] = {}


def _block_scalar(value: str) -> str:
    """`value` as the value of a block mapping entry, spelt as libyaml spells it."""
    text = _BLOCK_SCALARS.get(value)
    if text is None:
        if len(_BLOCK_SCALARS) >= _SCALARS_MAX:
            _BLOCK_SCALARS.clear()
        text = _BLOCK_SCALARS[value] = _new_block_scalar(value)
    return text


def _new_block_scalar(value: str) -> str:
    try:
        return _scalar(value)
    except _Declined:
        pass
    if not value or not value.isascii() or not value.isprintable() or value != value.strip(" ") \
            or value.startswith(("---", "...")):
        raise _Declined
    first = value[0]
    follows_space = len(value) == 1 or value[1] == " "
    indicator = first in FIRST_INDICATORS or (first in "?:-" and follows_space) or \
        BLOCK_INDICATOR.search(value, 1) is not None
    resolved = (first in "0123456789+-." and _is_number(value)) or value in _WORDS or value in _SIGNS
    if not indicator and not resolved:
        return value
    return "'" + value.replace("'", "''") + "'"


# --------------------------------------------------------------------------- direct


def direct(obj: Any, plan: Plan) -> str | None:
    """The YAML document of `obj` (a mapping at its root), or None where it holds what this writer declines."""
    out: list[str] = []
    writer = _Writer(plan, out)
    try:
        entries = writer.entries(obj)
        if not entries:
            return None  # a scalar, a sequence or `{}` at the root: through libyaml
        writer.mapping(entries, "", "")
    except _Declined:
        return None
    # every piece written ends a line, so only a piece longer than the limit can hold a line longer than it
    if any(len(line) > _LONGEST for piece in out if len(piece) > _LONGEST for line in piece.split("\n")):
        return None
    return "".join(out)


_BLOCK = object()  # `_Writer.inline`: a block collection follows


class _Writer:
    def __init__(self, plan: Plan, out: list[str]) -> None:
        self.plan = plan
        self.out = out
        # shared objects (a parse's parameters and types) are written once: by identity (`obj` keeps each alive)
        self.items: dict[tuple[int, str, bool], str] = {}  # a sequence item at an indentation
        self.flows: dict[int, str] = {}  # a mapping in flow style
        self.fields: dict[type, list[tuple[str, str, Any, bool, bool, bool]] | None] = {}  # the plan, keys spelt

    def entries(self, obj: Any) -> list[tuple[str, Any, bool, bool]] | None:
        """(key, value, flow, flow items) per entry of a mapping; None when `obj` is not one."""
        cls = type(obj)
        if cls in self.fields:
            fields = self.fields[cls]
        else:
            planned = self.plan(cls)
            fields = self.fields[cls] = None if planned is None else [(a, _key(k), d, o, f, i)
                                                                      for a, k, d, o, f, i in planned]
        if fields is not None:
            out = []
            for attr, key, default, omit, flow, items in fields:
                value = getattr(obj, attr)
                if not omit or value != default:
                    out.append((key, value, flow, items))
            return out
        if isinstance(obj, dict):
            return [(_key(k), v, False, False) for k, v in obj.items()]
        return None

    def flow(self, obj: Any) -> str:
        """`obj` in flow style."""
        if obj is None or type(obj) in _SCALAR_TYPES:
            return _SCALARS.get((type(obj), obj)) or _scalar(obj)
        done = self.flows.get(id(obj))
        if done is not None:
            return done
        if type(obj) is tuple:
            return "[" + ", ".join([self.flow(v) for v in obj]) + "]"
        entries = self.entries(obj)
        if entries is None:
            return _scalar(obj)
        text = self.flows[id(obj)] = "{" + ", ".join([f"{k}: {self.flow(v)}" for k, v, _, _ in entries]) + "}"
        return text

    def inline(self, obj: Any, flow: bool) -> Any:
        """`obj` as written on the line it starts (a scalar, a flow or an empty collection); else _BLOCK for a
        block sequence, or a block mapping's entries."""
        if flow or obj is None or type(obj) in _SCALAR_TYPES:
            return self.flow(obj)
        if type(obj) is tuple:
            return _BLOCK if obj else "[]"
        entries = self.entries(obj)
        if entries is None:
            return _scalar(obj)
        return entries if entries else "{}"

    def mapping(self, entries: list[tuple[str, Any, bool, bool]], indent: str, first: str) -> None:
        """A block mapping at `indent`, its first key after `first` (`indent`, or a sequence item's `- `)."""
        out = self.out
        lead = first
        block = _BLOCK_SCALARS
        for key, value, flow, items in entries:
            text: Any = (block.get(value) or _block_scalar(value)) if type(value) is str and not flow else \
                self.inline(value, flow)
            if type(text) is str:
                out.append(f"{lead}{key}: {text}\n")
            elif text is _BLOCK:
                out.append(f"{lead}{key}:\n")
                self.sequence(value, indent, items)  # a sequence in a mapping: not indented
            else:
                out.append(f"{lead}{key}:\n")
                inner = indent + "  "
                self.mapping(text, inner, inner)
            lead = indent

    def sequence(self, seq: tuple[Any, ...], indent: str, flow_items: bool) -> None:
        out = self.out
        memo = self.items
        for item in seq:
            key = (id(item), indent, flow_items)
            done = memo.get(key)
            if done is None:
                text = self.inline(item, flow_items)
                if type(text) is str:
                    done = f"{indent}- {text}\n"
                elif text is _BLOCK:
                    raise _Declined  # a block sequence in a block sequence: none in miogen's files
                else:
                    start = len(out)
                    self.mapping(text, indent + "  ", indent + "- ")
                    done = "".join(out[start:])
                    del out[start:]
                memo[key] = done
            out.append(done)


_SCALAR_TYPES = (str, int, bool, Version)


def _key(k: Any) -> str:
    text = _scalar(k)
    if len(text) > 128:  # libyaml writes a long key as `? key`
        raise _Declined
    return text


# --------------------------------------------------------------------------- through libyaml


def through_libyaml(obj: Any, plan: Plan) -> str:
    """The YAML document of `obj` as events through libyaml's emitter (every event emitted: the reference)."""
    import yaml

    from . import model

    try:  # PyYAML's C implementation; the pure-Python one is the fallback
        dumper: Any = yaml.CSafeDumper
    except AttributeError:  # pragma: no cover - only without libyaml
        dumper = yaml.SafeDumper
    resolver = yaml.resolver.Resolver()
    str_tag = "tag:yaml.org,2002:str"
    scalars: dict[tuple[type, Any], Any] = {}
    memo_types = (model.CType, model.Role, model.Param)  # recurring small values: their events built once
    memo: dict[tuple[int, bool], list[Any]] = {}

    def scalar(value: Any) -> Any:
        key = (type(value), value)
        event = scalars.get(key)
        if event is None:
            if value is None:
                event = yaml.ScalarEvent(None, None, (True, False), "null")
            elif isinstance(value, bool):
                event = yaml.ScalarEvent(None, None, (True, False), "true" if value else "false")
            elif isinstance(value, int):
                event = yaml.ScalarEvent(None, None, (True, False), str(value))
            else:  # a string that would read back as another type (null, true, 1.0, ...) is quoted
                tag = resolver.resolve(yaml.ScalarNode, str(value), (True, False))  # type: ignore[no-untyped-call]
                event = yaml.ScalarEvent(None, None, (tag == str_tag, True), str(value))
            scalars[key] = event
        return event

    def events(obj: Any, flow: bool, out: list[Any], item_flow: bool = False) -> None:
        if type(obj) in memo_types:
            done = memo.get((id(obj), flow))  # by identity: `obj` keeps every one alive; hashing is deep
            if done is None:
                done = memo[(id(obj), flow)] = []
                write(obj, flow, done, item_flow)
            out += done
        else:
            write(obj, flow, out, item_flow)

    def write(obj: Any, flow: bool, out: list[Any], item_flow: bool) -> None:
        fields = plan(type(obj))
        if fields is not None:
            out.append(yaml.MappingStartEvent(None, None, True, flow_style=flow))
            for attr, key, default, omit, field_flow, items in fields:
                value = getattr(obj, attr)
                if omit and value == default:
                    continue
                out.append(scalar(key))
                events(value, flow or field_flow, out, items)
            out.append(yaml.MappingEndEvent())
        elif isinstance(obj, tuple) and type(obj) is not Version:
            out.append(yaml.SequenceStartEvent(None, None, True, flow_style=flow))
            for v in obj:
                events(v, flow or item_flow, out)
            out.append(yaml.SequenceEndEvent())
        elif isinstance(obj, dict):
            out.append(yaml.MappingStartEvent(None, None, True, flow_style=flow))
            for k, v in obj.items():
                out.append(scalar(k))
                events(v, flow, out)
            out.append(yaml.MappingEndEvent())
        else:
            out.append(scalar(obj))

    body: list[Any] = [yaml.StreamStartEvent(), yaml.DocumentStartEvent(explicit=False)]
    events(obj, False, body)
    body += [yaml.DocumentEndEvent(explicit=False), yaml.StreamEndEvent()]
    text: str = yaml.emit(body, Dumper=dumper, width=WIDTH, allow_unicode=True)
    return text


def dumps(obj: Any, plan: Plan) -> str:
    """The YAML document of `obj`: `direct` where it spells everything, else through libyaml."""
    text = direct(obj, plan)
    return text if text is not None else through_libyaml(obj, plan)

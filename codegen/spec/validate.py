"""Applying the string rules (`rules.RULES`) to objects, and the checks that need a whole spec.

`check_model` applies the rules to objects built in memory (the parser, and `resolve.resolve` before anything
is rendered; `spec_io` applies them while converting YAML); `check_spec` adds what needs the whole spec
(declared types, unique names, enum ranges, canonical default arguments); an object checked once is marked
valid (`mark_valid`, `ensure_valid`).
"""

from __future__ import annotations

import types
import typing
import weakref
from collections.abc import Callable, Iterable
from typing import Any

from ..base.record import fields, is_frozen, is_record
from . import literals, reserved
from .ctypes_map import FLOAT_CTYPES, INT_BITS, int_range
from .releases import Version
from .rules import (MAX_ARRAY, MAX_POINTER_DEPTH, MAX_RECORD_SIZE, RULES, VERSION, Rule, Violation, c_name_problem,
                    key_part, short)


FieldCheck = Callable[[Any], None]


def _contains_str(tp: Any) -> bool:
    if tp is str:
        return True
    return any(_contains_str(a) for a in typing.get_args(tp) if typing.get_origin(tp) is not typing.Literal)


_PASSED_MAX = 100_000  # strings remembered per rule
#: the strings each rule accepted (a name or a type recurs all over a spec, under several fields): checked once
_PASSED: dict[Rule, set[str]] = {}


def _accepted(rule: Rule) -> set[str]:
    """The set of strings `rule` accepted so far (shared by every check of it)."""
    passed = _PASSED.get(rule)
    if passed is None:
        passed = _PASSED[rule] = set()
    return passed


def _check_version(v: Any) -> None:
    if not isinstance(v, Version) or VERSION.check(str(v)):
        raise Violation(f"expected a version X.Y.Z (a Version); got {short(v)}")


def _strings(tp: Any, rule: Rule | None, key_rule: Rule | None) -> FieldCheck | None:
    """A check of a converted value of type `tp` whose strings follow `rule` (keys: `key_rule`); a `Version` is
    checked whatever the rules (its numbers: `rules.VERSION`)."""
    if tp is Version:
        return _check_version
    origin = typing.get_origin(tp)
    if tp is str:
        if rule is None:
            return None

        passed = _accepted(rule)

        def check_str(v: Any) -> None:
            if type(v) is str and v in passed:
                return
            if not isinstance(v, str):
                raise Violation(f"expected a string; got {type(v).__name__} {short(v)}")
            why = rule.check(v)
            if why:
                raise Violation(f"{short(v)}: {why}")
            if type(v) is str and len(passed) < _PASSED_MAX:
                passed.add(v)

        return check_str
    if origin is typing.Union or origin is types.UnionType:
        inner = [a for a in typing.get_args(tp) if a is not type(None)]
        sub = _strings(inner[0], rule, key_rule) if len(inner) == 1 else None
        return None if sub is None else (lambda v: None if v is None else sub(v))
    if origin is tuple:
        item = _strings(typing.get_args(tp)[0], rule, key_rule)
        if item is None:
            return None

        def check_tuple(v: Any) -> None:
            for i, x in enumerate(v):
                try:
                    item(x)
                except Violation as exc:
                    raise exc.within(f"[{i}]") from None

        return check_tuple
    if origin is dict:
        k_tp, v_tp = typing.get_args(tp)
        kcheck = _strings(k_tp, key_rule, None)
        vcheck = _strings(v_tp, rule, None) if not is_record(v_tp) else None
        if kcheck is None and vcheck is None:
            return None

        def check_dict(v: Any) -> None:
            for k, x in v.items():
                try:
                    if kcheck is not None:
                        kcheck(k)
                    if vcheck is not None:
                        vcheck(x)
                except Violation as exc:
                    raise exc.within(key_part(k)) from None

        return check_dict
    return None


_FIELD_CHECKS: dict[tuple[type, str], FieldCheck | None] = {}


def field_check(cls: type, name: str, tp: Any) -> FieldCheck | None:
    """The rule check of field `name` of `cls` (its strings and mapping keys), or None."""
    key = (cls, name)
    if key not in _FIELD_CHECKS:
        rule = RULES.get((cls.__name__, name))
        key_rule = RULES.get((cls.__name__, name, "key"))
        _FIELD_CHECKS[key] = _strings(tp, rule, key_rule)
    return _FIELD_CHECKS[key]


def unruled_fields(root: type) -> list[str]:
    """`Class.field` of every string field (or mapping key) reachable from `root` that has no rule."""
    missing: list[str] = []
    seen: set[type] = set()

    def visit(cls: type) -> None:
        if cls in seen:
            return
        seen.add(cls)
        hints = typing.get_type_hints(cls)
        for f in fields(cls):
            tp = hints[f.name]
            for sub in _records_in(tp):
                visit(sub)
            if f.name == "path" and cls.__name__ == "Target":
                continue  # not read from YAML
            if typing.get_origin(tp) is dict:
                k_tp, v_tp = typing.get_args(tp)
                if k_tp is str and (cls.__name__, f.name, "key") not in RULES:
                    missing.append(f"{cls.__name__}.{f.name} (keys)")
                if _contains_str(v_tp) and not is_record(v_tp) and (cls.__name__, f.name) not in RULES:
                    missing.append(f"{cls.__name__}.{f.name}")
            elif _contains_str(tp) and (cls.__name__, f.name) not in RULES:
                missing.append(f"{cls.__name__}.{f.name}")

    visit(root)
    return missing


def _records_in(tp: Any) -> Iterable[type]:
    if is_record(tp) and isinstance(tp, type):
        yield tp
    for a in typing.get_args(tp):
        if not isinstance(a, str):
            yield from _records_in(a)


_HINTS: dict[type, dict[str, Any]] = {}


#: frozen model objects already found valid, by identity (a parse shares its types and parameters, and
#: hashing a frozen record walks all of it); each is kept alive here so its id is not reused; bounded
_VALID_MODELS: dict[int, Any] = {}
_VALID_MAX = 200_000
#: per class: what check_model needs of each field it looks at (see _class_fields), and whether its objects are
#: immutable (then one found valid is remembered)
_FIELDS: dict[type, tuple[list[tuple[str, frozenset[Any] | set[str], bool, bool, FieldCheck]], bool]] = {}
#: per class: whether its objects can never change (frozen, and nothing mutable inside by its type hints)
_IMMUTABLE: dict[type, bool] = {}
_IMMUTABLE_LEAVES = (str, int, float, bool, type(None), Version)


def _immutable_hint(tp: Any) -> bool:
    if tp in _IMMUTABLE_LEAVES:
        return True
    if isinstance(tp, type) and is_record(tp):
        return _immutable_class(tp)
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return True
    if origin in (tuple, typing.Union, types.UnionType, frozenset):
        return all(a is Ellipsis or _immutable_hint(a) for a in typing.get_args(tp))
    return False  # dict, list, Any, ...


def _immutable_class(cls: type) -> bool:
    known = _IMMUTABLE.get(cls)
    if known is None:
        _IMMUTABLE[cls] = False  # while deciding (a recursive type is treated as mutable)
        hints = _HINTS.get(cls)
        if hints is None:
            hints = _HINTS[cls] = typing.get_type_hints(cls)
        known = _IMMUTABLE[cls] = bool(is_frozen(cls) and
                                       all(_immutable_hint(hints[f.name]) for f in fields(cls)))
    return known


def check_model(obj: Any) -> None:
    """Apply the rules to an object built in memory (and everything in it); raises Violation.

    A frozen object found valid once is not walked again, nor is a string a rule accepted once checked again."""
    valid = _VALID_MODELS
    if valid.get(id(obj)) is obj:
        return
    cls = type(obj)
    plan = _FIELDS.get(cls)
    if plan is None:
        if not is_record(cls):  # not a record instance (a record class itself has type `type`)
            return
        plan = _class_fields(cls)
    fields, immutable = plan
    for name, known, optional, shared, check in fields:
        value = getattr(obj, name)
        # what is certainly valid is passed here; anything else is checked in full
        if value is None:
            if optional:
                continue
        elif shared:
            if valid.get(id(value)) is value:
                continue
        elif type(value) is str and value in known:
            continue
        try:
            check(value)
        except Violation as exc:
            raise exc.within(name) from None
    if immutable:
        if len(valid) >= _VALID_MAX:
            valid.clear()
        valid[id(obj)] = obj


def _class_fields(cls: type) -> tuple[list[tuple[str, frozenset[Any] | set[str], bool, bool, FieldCheck]], bool]:
    """Per field of `cls` that has a rule, Literal values or a model object inside it: (name, values certainly
    valid (its Literal values, or the strings its rule accepted so far), whether None is allowed, whether its value
    is a model object found valid by identity, its full check); and whether objects of `cls` are immutable."""
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    out = []
    for f in fields(cls):
        tp = hints[f.name]
        origin = typing.get_origin(tp)
        optional = origin is typing.Union or origin is types.UnionType
        if optional:
            tp = next(a for a in typing.get_args(tp) if a is not type(None))
        literals = typing.get_args(tp) if typing.get_origin(tp) is typing.Literal else None
        check = field_check(cls, f.name, hints[f.name])
        nested = not _plain_hint(hints[f.name])
        if literals is not None or check is not None or nested:  # a bool or an int field: nothing to check
            rule = RULES.get((cls.__name__, f.name))
            known: frozenset[Any] | set[str] = (
                frozenset(literals) if literals is not None and check is None and not nested
                else _accepted(rule) if tp is str and rule is not None and literals is None and not nested
                else frozenset())
            shared = nested and literals is None and check is None
            out.append((f.name, known, optional, shared, _field_check(literals, optional, check, nested)))
    plan = _FIELDS[cls] = (out, _immutable_class(cls))
    return plan


def _field_check(literals: tuple[Any, ...] | None, optional: bool, check: FieldCheck | None,
                 nested: bool) -> FieldCheck:
    """The full check of one field's value: its Literal values, its rule check, the model objects inside it (where
    it is only one of those, that check itself: a call less for each of a parse's thousands of fields)."""
    if literals is None and check is not None and not nested:
        return check
    if literals is None and check is None and nested:
        return _descend  # None and what is valid already: passed by check_model, and by _descend item by item

    def full(value: Any) -> None:
        if literals is not None and value not in literals and not (optional and value is None):
            raise Violation(f"expected one of {', '.join(map(str, literals))}; got {short(value)}")
        if check is not None:
            check(value)
        if nested and value is not None and _VALID_MODELS.get(id(value)) is not value:  # a shared one checked
            _descend(value)

    return full


def _plain_hint(tp: Any) -> bool:
    """True when a value of type `tp` holds no model object (scalars, literals, and containers of them)."""
    if tp in _IMMUTABLE_LEAVES:
        return True
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return True
    if origin in (tuple, typing.Union, types.UnionType, frozenset, list, dict, set):
        return all(a is Ellipsis or _plain_hint(a) for a in typing.get_args(tp))
    return False


def _descend(value: Any) -> None:
    if isinstance(value, tuple):
        valid = _VALID_MODELS
        for i, x in enumerate(value):
            if valid.get(id(x)) is not x and is_record(type(x)):
                try:
                    check_model(x)
                except Violation as exc:
                    raise exc.within(f"[{i}]") from None
    elif is_record(type(value)):
        check_model(value)
    elif isinstance(value, dict):
        for k, x in value.items():
            if is_record(x):
                try:
                    check_model(x)
                except Violation as exc:
                    raise exc.within(key_part(k)) from None


# --------------------------------------------------------------------------- whole-spec checks


def check_spec(spec: Any) -> None:
    """What the field rules alone cannot check (raises Violation with the YAML path):

    each type is well formed and names something declared; no two items share a name in the raw
    module's namespace (and none is a name that module uses itself); enum constants are unique and
    fit their enum's type; struct layouts are plausible; parameters of one function have distinct
    names; default arguments are canonical for their parameter's type.
    """
    declared: dict[str, set[str]] = {
        "int": set(INT_BITS),
        "float": set(FLOAT_CTYPES),
        "enum": {e.name for e in spec.enums},
        "handle": {h.name for h in spec.handles},
        "callback": {c.name for c in spec.callbacks},
        "struct": {n for r in spec.records for n in (r.name, r.typedef) if n},
        "union": {n for r in spec.records for n in (r.name, r.typedef) if n},
    }
    fixed = {"void": "void", "bool": "bool", "char": "char"}
    passed: dict[int, Any] = {}  # types found well formed, by identity (a parse shares them; the spec keeps each alive)

    def check_type(t: Any, parts: list[str]) -> None:
        """`parts`: the YAML path of the type mapping itself."""
        if passed.get(id(t)) is t:
            return
        if t.depth < 0 or t.depth > MAX_POINTER_DEPTH:
            raise Violation(f"pointer depth {t.depth} (at most {MAX_POINTER_DEPTH})", [*parts, "depth"])
        if len(t.const) != t.depth + 1:
            raise Violation(f"depth {t.depth} needs {t.depth + 1} const flags; got {len(t.const)}", parts)
        if t.array is not None and not 0 < t.array <= MAX_ARRAY:
            raise Violation(f"array length must be in [1, {MAX_ARRAY}]; got {t.array}", [*parts, "array"])
        known = declared.get(t.kind)
        if known is not None and t.name not in known:
            raise Violation(f"{t.kind} type {short(t.name)} is not declared in the spec", [*parts, "name"])
        if t.kind in fixed and t.name != fixed[t.kind]:
            raise Violation(f"a {t.kind} type is named {fixed[t.kind]!r}; got {short(t.name)}", [*parts, "name"])
        if t.kind in ("opaque", "incomplete", "handle", "callback", "enum", "struct", "union") and c_name_problem(t.name):
            raise Violation(f"{short(t.name)}: {c_name_problem(t.name)}", [*parts, "name"])
        passed[id(t)] = t

    constants = {e.name: {c.name for c in e.constants} for e in spec.enums}

    def check_params(params: Any, parts: list[str], with_defaults: bool) -> None:
        seen: dict[str, int] = {}
        for j, p in enumerate(params):
            if passed.get(id(p.type)) is not p.type:
                check_type(p.type, [*parts, "params", f"[{j}]", "type"])
            if p.name is not None:
                if p.name in seen:
                    raise Violation(f"parameter {p.name} appears twice (also params[{seen[p.name]}])",
                                    [*parts, "params", f"[{j}]", "name"])
                seen[p.name] = j
            if p.default is not None:
                where = [*parts, "params", f"[{j}]"]
                if not with_defaults:
                    raise Violation("callback parameters take no default argument", [*where, "default"])
                why = literals.check_canonical(p.default, p.type, lambda name: constants.get(name))
                if why:
                    raise Violation(f"{short(p.default)}: {why}", [*where, "default"])

    raw_names: dict[str, str] = {}

    def claim(name: str | None, what: str, parts: list[str]) -> None:
        if name is None:
            return
        if name in reserved.RAW_MODULE:
            raise Violation(f"{name}: the generated raw module uses this name itself", parts)
        if name in raw_names and raw_names[name] != what:
            raise Violation(f"{name} is declared twice ({raw_names[name]} and {what})", parts)
        raw_names[name] = what

    for i, h in enumerate(spec.handles):
        claim(h.name, f"handles[{i}]", ["handles", f"[{i}]", "name"])
    for i, td in enumerate(spec.typedefs):
        claim(td.name, f"typedefs[{i}]", ["typedefs", f"[{i}]", "name"])
        check_type(td.type, ["typedefs", f"[{i}]", "type"])
    all_constants: dict[str, str] = {}
    for i, e in enumerate(spec.enums):
        where = ["enums", f"[{i}]"]
        claim(e.name, f"enums[{i}]", [*where, "name"])
        lo, hi = int_range(e.underlying) if e.underlying in INT_BITS else (0, -1)
        values: dict[str, int] = {}
        for j, c in enumerate(e.constants):
            cw = [*where, "constants", f"[{j}]"]
            if c.name in all_constants:
                raise Violation(f"enum constant {c.name} is declared twice (also {all_constants[c.name]})", [*cw, "name"])
            all_constants[c.name] = e.name
            if not lo <= c.value <= hi:
                raise Violation(f"{c.value} does not fit {e.name}'s type {e.underlying} [{lo}, {hi}]", [*cw, "value"])
            if c.alias_of is not None and c.alias_of not in values and c.alias_of not in all_constants:
                raise Violation(f"alias_of {c.alias_of}: no enum constant of that name is declared before it",
                                [*cw, "alias_of"])
            values[c.name] = c.value

    def check_record(r: Any, name: str, parts: list[str]) -> None:
        if not 0 <= r.size <= MAX_RECORD_SIZE:
            raise Violation(f"size {r.size} (at most {MAX_RECORD_SIZE})", [*parts, "size"])
        if r.align < 1 or r.align > 4096 or r.align & (r.align - 1):
            raise Violation(f"alignment {r.align} is not a power of two up to 4096", [*parts, "align"])
        fields: dict[str, int] = {}
        for j, fld in enumerate(r.fields):
            fw = [*parts, "fields", f"[{j}]"]
            if not 0 <= fld.offset <= r.size:
                raise Violation(f"offset {fld.offset} outside the record's {r.size} bytes", [*fw, "offset"])
            if (fld.type is None) == (fld.record is None):
                raise Violation("a field has either a type or a nested record", fw)
            if fld.type is not None:
                if fld.name is None:
                    raise Violation("a typed field needs a name", fw)
                check_type(fld.type, [*fw, "type"])
            names = [fld.name] if fld.record is None else _flat_names(fld.record)
            for n in names:
                if n is None:
                    continue
                if n in fields:
                    raise Violation(f"field {n} appears twice in {name}", [*fw, "name"])
                fields[n] = j
            if fld.record is not None:
                inner = f"{name}_anon{j}"
                claim(inner, f"{name}.fields[{j}]", [*fw, "record"])
                check_record(fld.record, inner, [*fw, "record"])

    for i, r in enumerate(spec.records):
        where = ["records", f"[{i}]"]
        claim(r.name, f"records[{i}]", [*where, "name"])
        if r.typedef is not None and r.typedef != r.name:
            claim(r.typedef, f"records[{i}]", [*where, "typedef"])
        check_record(r, r.name or "", where)
    for i, c in enumerate(spec.callbacks):
        claim(c.name, f"callbacks[{i}]", ["callbacks", f"[{i}]", "name"])
        check_type(c.returns, ["callbacks", f"[{i}]", "returns"])
        check_params(c.params, ["callbacks", f"[{i}]"], with_defaults=False)
    for i, f in enumerate(spec.functions):
        where = ["functions", f"[{i}]"]
        claim(f.name, f"functions[{i}]", [*where, "name"])
        check_type(f.returns, [*where, "returns"])
        check_params(f.params, where, with_defaults=True)


def _flat_names(r: Any) -> list[str | None]:
    out: list[str | None] = []
    for f in r.fields:
        out += [f.name] if f.record is None else _flat_names(f.record)
    return out




# --------------------------------------------------------------------------- once per spec object

_VALID: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()


def mark_valid(obj: Any) -> None:
    """Record that `obj` (a loaded or parsed spec, loaded annotations) passed its checks."""
    _VALID[id(obj)] = obj


def ensure_valid(obj: Any) -> None:
    """check_model (and check_spec for a spec), unless this very object already passed them (raises
    Violation)."""
    if _VALID.get(id(obj)) is obj:
        return
    check_model(obj)
    if hasattr(obj, "functions") and hasattr(obj, "enums"):
        check_spec(obj)
    mark_valid(obj)

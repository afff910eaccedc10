"""What a string from a spec, annotations or target file may be: every rule in one table.

Every string that reaches generated code (Python or C++) is one of:

- an identifier, under one of the name rules below (ASCII C identifiers; those that become Python
  names are also no Python keyword, start with no underscore and stay away from `reserved`);
- a version `X.Y.Z` (ASCII digits, no leading zeros);
- a restricted token (file name, environment variable, C type spelling, define, ...);
- or free text (`TEXT`: printable characters only), which the templates must escape
  (`codegen/escape.py`).

`RULES` maps each string field of every dataclass read from YAML (`(class name, field)`, and
`(class name, field, "key")` for mapping keys) to its rule; `tests/codegen/test_validate.py` fails when a
string field has no rule. `spec_io` applies the rules while converting YAML (errors name the file,
line and YAML path); `check_model` applies them to objects built in memory (the parser, and
`annotate.resolve` before anything is rendered); `check_spec` adds what needs the whole spec
(declared types, unique names, enum ranges, canonical default arguments). The Python names the
renderer makes are checked with their rules, in `naming.check_names`.
"""

from __future__ import annotations

import dataclasses
import keyword
import re
import types
import typing
import weakref
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from . import literals, reserved
from .ctypes_map import FLOAT_CTYPES, INT_BITS, int_range

#: longest identifier accepted anywhere
MAX_NAME = 128
#: longest free text (a hint, a reason, an error suffix)
MAX_TEXT = 2000
#: deepest pointer nesting of a C type, and largest fixed array length
MAX_POINTER_DEPTH = 8
MAX_ARRAY = 1 << 20
#: largest struct size / field offset (bytes)
MAX_RECORD_SIZE = 1 << 31


class Violation(Exception):
    """A value breaks a rule; `parts` is its YAML path, filled in as the error unwinds."""

    def __init__(self, message: str, parts: list[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.parts: list[str] = parts or []

    def within(self, part: str) -> Violation:
        self.parts.insert(0, part)
        return self

    @property
    def path(self) -> str:
        return "".join(p if p.startswith("[") else f".{p}" for p in self.parts).lstrip(".")


def short(value: Any, limit: int = 60) -> str:
    """repr() of a value, cut to `limit` characters (error messages never carry unbounded data)."""
    try:
        text = repr(value) if not isinstance(value, (list, dict)) or len(value) < 20 else \
            f"<{type(value).__name__} of {len(value)} items>"
    except Exception:  # pragma: no cover - a repr that fails
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def key_part(key: Any) -> str:
    """A mapping key as a YAML path part (bounded, one line)."""
    text = key if isinstance(key, str) else short(key)
    if len(text) > 60 or not text.isprintable() or any(c in text for c in ".[]"):
        text = short(text)
    return text


# --------------------------------------------------------------------------- rules


class Rule(NamedTuple):
    """A named rule for strings: `check` gives why a value breaks it, or None."""

    name: str
    doc: str
    check: Callable[[str], str | None]

    def __call__(self, value: str) -> str | None:
        return self.check(value)


_C_KEYWORDS = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t char32_t class compl
concept const consteval constexpr constinit const_cast continue co_await co_return co_yield decltype default delete
do double dynamic_cast else enum explicit export extern false float for friend goto if inline int long mutable
namespace new noexcept not not_eq nullptr operator or or_eq private protected public register reinterpret_cast
requires restrict return short signed sizeof static static_assert static_cast struct switch template this
thread_local throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t while xor
xor_eq _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn _Static_assert _Thread_local
""".split())

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)


def _c_name(s: str) -> str | None:
    if not s:
        return "an empty name"
    if len(s) > MAX_NAME:
        return f"a name of {len(s)} characters (at most {MAX_NAME})"
    if not _IDENT.fullmatch(s):
        return "not a C identifier (ASCII letters, digits and underscores, not starting with a digit)"
    if s in _C_KEYWORDS:
        return "a C/C++ keyword"
    if s.startswith(reserved.C_PREFIX):
        return f"names starting with {reserved.C_PREFIX!r} are reserved for miogen's generated C++"
    return None


def _api_name(s: str) -> str | None:
    why = _c_name(s)
    if why:
        return why
    if s.startswith("_"):
        return "API names must not start with an underscore (Python treats such names as private or special)"
    if keyword.iskeyword(s):
        return "a Python keyword"
    return None


def _enum_member(s: str) -> str | None:
    why = _api_name(s)
    if why:
        return why
    if s in reserved.ENUM_MEMBER:
        return "a name Python's IntEnum or int uses itself (it cannot be an enum member)"
    return None


_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?: [A-Za-z_][A-Za-z0-9_]*){0,3}", re.ASCII)


def _ctype_name(s: str) -> str | None:
    if len(s) > MAX_NAME:
        return f"a type name of {len(s)} characters (at most {MAX_NAME})"
    if not _WORDS.fullmatch(s):
        return "not a C type name (an identifier, or a builtin spelling such as 'unsigned long long')"
    if s.startswith(reserved.C_PREFIX):
        return f"names starting with {reserved.C_PREFIX!r} are reserved for miogen's generated C++"
    return None


_VERSION = re.compile(r"(?:0|[1-9][0-9]{0,5})\.(?:0|[1-9][0-9]{0,5})\.(?:0|[1-9][0-9]{0,5})", re.ASCII)


def _version(s: str) -> str | None:
    return None if _VERSION.fullmatch(s) else "not a version X.Y.Z (three ASCII numbers, no leading zeros)"


def _regex(pattern: str, what: str, limit: int = MAX_NAME) -> Callable[[str], str | None]:
    def check(s: str) -> str | None:  # compiled at its first use (re keeps it): a parse uses few of these rules
        if len(s) > limit:
            return f"{len(s)} characters (at most {limit})"
        return None if re.fullmatch(pattern, s, re.ASCII) else f"not {what}"

    return check


def _text(limit: int) -> Callable[[str], str | None]:
    def check(s: str) -> str | None:
        if len(s) > limit:
            return f"text of {len(s)} characters (at most {limit})"
        if not s.isprintable():
            bad = next(c for c in s if not c.isprintable())
            return f"text with the non-printable character U+{ord(bad):04X} (control, format or surrogate characters " \
                   f"are refused)"
        return None

    return check


def _int_type(s: str) -> str | None:
    return None if s in INT_BITS else f"not a C integer type ({', '.join(INT_BITS)})"


def _default(s: str) -> str | None:
    if len(s) > literals.MAX_TEXT:
        return f"a default argument of {len(s)} characters"
    return None if re.fullmatch(r"[A-Za-z0-9_.+-]+", s, re.ASCII) else "not a canonical default argument"


C_NAME = Rule("C name", "an ASCII C identifier, no C/C++ keyword, not starting with `miogen_`", _c_name)
API_NAME = Rule("API name", "a C name that is also a safe Python name: no leading underscore, no Python keyword",
                _api_name)
ENUM_MEMBER = Rule("enum constant", "an API name that is no attribute of int/IntEnum (`name`, `value`, `mro`, "
                   "`real`, ...)", _enum_member)
FIELD_NAME = Rule("struct field", "an API name (it becomes a NamedTuple field and a ctypes field)", _api_name)
CTYPE_NAME = Rule("C type name", "an identifier, or up to four identifiers separated by single spaces "
                  "(`unsigned long long`)", _ctype_name)
INT_TYPE = Rule("C integer type", "one of the integer spellings codegen/ctypes_map.py knows", _int_type)
VERSION = Rule("version", "X.Y.Z: three ASCII numbers without leading zeros", _version)
SHA256 = Rule("sha256", "64 lowercase hex digits", _regex(r"[0-9a-f]{64}", "a sha256 (64 lowercase hex digits)"))
C_SPELLING = Rule("C type spelling", "letters, digits, `_`, spaces and `*[](),:&` only", _regex(
    r"[A-Za-z0-9_ *\[\](),:&]*", "a C type spelling (letters, digits, '_', spaces and *[](),:& only)", 256))
FILE_NAME = Rule("file name", "a plain file name: ASCII letters, digits and `_.+-`, not starting with a dot",
                 _regex(r"[A-Za-z0-9_+-][A-Za-z0-9_.+-]*", "a plain file name (ASCII letters, digits and _.+-, "
                        "not starting with a dot)"))
INCLUDE_NAME = Rule("include name", "a header as `#include <...>` names it: file names (see above) joined by `/`",
                    _regex(r"[A-Za-z0-9_+-][A-Za-z0-9_.+-]*(?:/[A-Za-z0-9_+-][A-Za-z0-9_.+-]*)*",
                           "a header name as #include <...> names it (plain file names joined by /)", 256))
DOC_WORD = Rule("doc group", "a Doxygen group name: ASCII letters, digits and underscores",
                _regex(r"[A-Za-z0-9_]+", "a Doxygen group name (ASCII letters, digits and underscores)"))
TARGET_NAME = Rule("target name", "lowercase ASCII letters, digits and underscores, starting with a letter",
                   _regex(r"[a-z][a-z0-9_]*", "a target name (lowercase ASCII letters, digits, underscores)", 64))
LANGUAGE = Rule("language", "`c` or `c++`", _regex(r"c|c\+\+", "c or c++"))
DEFINE = Rule("define", "NAME or NAME=VALUE (VALUE: printable ASCII without spaces)",
              _regex(r"[A-Za-z_][A-Za-z0-9_]*(?:=[!-~]*)?", "a define NAME or NAME=VALUE (printable ASCII, no "
                     "spaces)", 256))
ENV_NAME = Rule("environment variable", "an ASCII identifier", _regex(r"[A-Za-z_][A-Za-z0-9_]*",
                                                                       "an environment variable name"))
PREFIX = Rule("function prefix", "an ASCII identifier", _regex(r"[A-Za-z_][A-Za-z0-9_]*", "an identifier", 32))
DISPLAY = Rule("display name", "ASCII letters, digits, spaces and `._+()-` (it is pasted into messages)",
               _regex(r"[A-Za-z0-9][A-Za-z0-9 ._+()-]*", "a display name (ASCII letters, digits, spaces and "
                      "._+()- only)", 64))
PY_CLASS = Rule("Python class name", "an ASCII identifier starting with an uppercase letter, no keyword",
                lambda s: _regex(r"[A-Z][A-Za-z0-9_]*", "a Python class name (ASCII, starting with an uppercase "
                                 "letter)")(s) or ("a Python keyword" if keyword.iskeyword(s) else None))
WHEEL_DIR = Rule("wheel folder", "a relative folder: file names or `*` patterns of them joined by `/`",
                 _regex(r"[A-Za-z0-9_+*-][A-Za-z0-9_.+*-]*(?:/[A-Za-z0-9_+*-][A-Za-z0-9_.+*-]*)*",
                        "a relative folder (file names or * patterns joined by /, none starting with a dot)", 256))
PATH_TEXT = Rule("path", "printable characters", _text(4096))
TEXT = Rule("text", f"printable characters only, at most {MAX_TEXT}; templates must escape it", _text(MAX_TEXT))
LABEL = Rule("label", "printable characters only, at most 128", _text(128))

#: (class name, field) -> rule for its strings; (class name, field, "key") -> rule for its mapping keys
RULES: dict[tuple[str, ...], Rule] = {
    # the spec (codegen/model.py)
    ("CType", "name"): CTYPE_NAME,
    ("Param", "name"): C_NAME,
    ("Param", "c"): C_SPELLING,
    ("Param", "default"): Rule("default argument", "the canonical spelling (codegen/literals.py)", _default),
    ("Function", "name"): API_NAME,
    ("Function", "group"): DOC_WORD,
    ("Function", "brief"): TEXT,
    ("Param", "doc"): TEXT,
    ("EnumConstant", "name"): ENUM_MEMBER,
    ("EnumConstant", "alias_of"): ENUM_MEMBER,
    ("Enum", "name"): API_NAME,
    ("Enum", "underlying"): INT_TYPE,
    ("Enum", "group"): DOC_WORD,
    ("Field", "name"): FIELD_NAME,
    ("Field", "c"): C_SPELLING,
    ("Record", "name"): API_NAME,
    ("Record", "tag"): C_NAME,
    ("Record", "typedef"): API_NAME,
    ("Record", "group"): DOC_WORD,
    ("Callback", "name"): API_NAME,
    ("Handle", "name"): API_NAME,
    ("Handle", "tag"): C_NAME,
    ("Handle", "group"): DOC_WORD,
    ("Typedef", "name"): API_NAME,
    ("Typedef", "c"): C_SPELLING,
    ("HeaderInfo", "name"): FILE_NAME,
    ("HeaderInfo", "sha256"): SHA256,
    ("ParseInfo", "language"): LANGUAGE,
    ("ParseInfo", "defines"): DEFINE,
    ("Spec", "generator_version"): VERSION,
    ("Spec", "target"): TARGET_NAME,
    ("Spec", "version"): VERSION,
    ("Spec", "release"): LABEL,
    # annotations (codegen/annotate.py)
    ("LengthCall", "call"): API_NAME,
    ("LengthCall", "result"): C_NAME,
    ("LengthCall", "args", "key"): C_NAME,
    ("LengthCall", "args"): C_NAME,
    ("ParamNote", "length"): C_NAME,
    ("ParamNote", "count"): C_NAME,
    ("ParamNote", "since"): VERSION,
    ("ParamNote", "until"): VERSION,
    ("ParamNote", "why"): TEXT,
    ("ParamNote", "null_means"): TEXT,
    ("ParamNote", "element_of"): C_NAME,
    ("ParamNote", "element_table"): C_NAME,
    ("ElementTable", "enum"): API_NAME,
    ("ElementTable", "types", "key"): ENUM_MEMBER,
    ("ElementTable", "why"): TEXT,
    ("ElementQuery", "call"): API_NAME,
    ("ElementQuery", "result"): C_NAME,
    ("ElementQuery", "why"): TEXT,
    ("FieldNote", "null_means"): TEXT,
    ("FieldNote", "why"): TEXT,
    ("RecordNote", "fields", "key"): FIELD_NAME,
    ("RecordNote", "since"): VERSION,
    ("RecordNote", "until"): VERSION,
    ("RecordNote", "why"): TEXT,
    ("FunctionNote", "params", "key"): C_NAME,
    ("FunctionNote", "since"): VERSION,
    ("FunctionNote", "until"): VERSION,
    ("FunctionNote", "why"): TEXT,
    ("Variant", "since"): VERSION,
    ("Variant", "until"): VERSION,
    ("Variant", "why"): TEXT,
    ("Variant", "params", "key"): C_NAME,
    ("Ownership", "create"): API_NAME,
    ("Ownership", "destroy"): API_NAME,
    ("Ownership", "owner"): API_NAME,
    ("Ownership", "since"): VERSION,
    ("Ownership", "until"): VERSION,
    ("Ownership", "why"): TEXT,
    ("Rules", "count_names"): C_NAME,
    ("Rules", "nullable_buffers"): C_NAME,
    ("Rules", "scratch_buffers"): C_NAME,
    ("Rules", "element_tables", "key"): C_NAME,
    ("Rules", "element_queries", "key"): API_NAME,
    ("Rules", "extent_queries", "key"): API_NAME,
    ("Rules", "buffer_sizes", "key"): C_NAME,
    ("Rules", "buffer_sizes"): C_NAME,
    ("ExtentQuery", "call"): API_NAME,
    ("ExtentQuery", "type"): C_NAME,
    ("ExtentQuery", "dims"): C_NAME,
    ("ExtentQuery", "strides"): C_NAME,
    ("ExtentQuery", "table"): C_NAME,
    ("ExtentQuery", "suffix"): C_NAME,
    ("ExtentQuery", "why"): TEXT,
    ("Annotations", "handles", "key"): API_NAME,
    ("Annotations", "functions", "key"): API_NAME,
    ("Annotations", "records", "key"): API_NAME,
    # target facts (codegen/target.py)
    ("ExportedFunction", "declaration"): TEXT,
    ("ExportedFunction", "since"): VERSION,
    ("ExportedFunction", "until"): VERSION,
    ("ExportedFunction", "source"): TEXT,
    ("ReleaseRecords", "releases", "key"): VERSION,
    ("ReleaseRecord", "shipped_in"): LABEL,
    ("ReleaseRecord", "header"): TEXT,
    ("ReleaseRecord", "abi"): TEXT,
    ("ReleaseRecord", "library"): TEXT,
    ("DiagnosticHint", "match"): TEXT,
    ("DiagnosticHint", "hint"): TEXT,
    ("StatusException", "name"): PY_CLASS,
    ("StatusException", "also"): PY_CLASS,
    ("StatusException", "since"): VERSION,
    ("Target", "name"): TARGET_NAME,
    ("Target", "display_name"): DISPLAY,
    ("Target", "header"): FILE_NAME,
    ("Target", "function_prefix"): PREFIX,
    ("Target", "status_type"): API_NAME,
    ("Target", "success_constant"): ENUM_MEMBER,
    ("Target", "beta_macro"): C_NAME,
    ("Target", "default_defines"): DEFINE,
    ("Target", "library_names"): FILE_NAME,
    ("Target", "library_env"): ENV_NAME,
    ("Target", "skip_version_check_env"): ENV_NAME,
    ("Target", "library_root_env"): ENV_NAME,
    ("Target", "library_roots"): PATH_TEXT,
    ("Target", "find_library_name"): FILE_NAME,
    ("Target", "library_prefix_envs"): ENV_NAME,
    ("Target", "library_wheel_dirs"): WHEEL_DIR,
    ("Target", "error_suffix"): TEXT,
    ("Target", "host_scalar_names"): C_NAME,
    ("Target", "releases", "key"): VERSION,
    ("Target", "releases"): LABEL,
    ("Target", "error_base"): PY_CLASS,
    ("Target", "status_exceptions", "key"): ENUM_MEMBER,
    ("Target", "status_warnings"): ENUM_MEMBER,
    ("Target", "status_hints", "key"): ENUM_MEMBER,
    ("Target", "status_hints"): TEXT,
    ("Target", "api_headers"): FILE_NAME,
    ("Target", "version_header"): FILE_NAME,
    ("Target", "preamble"): INCLUDE_NAME,
    ("Target", "version_macros"): C_NAME,
    ("Target", "version_getter"): API_NAME,
}


# --------------------------------------------------------------------------- applying the rules

FieldCheck = Callable[[Any], None]


def _contains_str(tp: Any) -> bool:
    if tp is str:
        return True
    return any(_contains_str(a) for a in typing.get_args(tp) if typing.get_origin(tp) is not typing.Literal)


_PASSED_MAX = 100_000  # strings remembered per rule check


def _strings(tp: Any, rule: Rule | None, key_rule: Rule | None) -> FieldCheck | None:
    """A check of a converted value of type `tp` whose strings follow `rule` (keys: `key_rule`)."""
    origin = typing.get_origin(tp)
    if tp is str:
        if rule is None:
            return None

        passed: set[str] = set()  # strings this rule accepted: a name or a type recurs all over a spec

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
        vcheck = _strings(v_tp, rule, None) if not dataclasses.is_dataclass(v_tp) else None
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
        _FIELD_CHECKS[key] = _strings(tp, rule, key_rule) if (rule or key_rule) else None
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
        for f in dataclasses.fields(cls):
            tp = hints[f.name]
            for sub in _dataclasses_in(tp):
                visit(sub)
            if f.name == "path" and cls.__name__ == "Target":
                continue  # not read from YAML
            if typing.get_origin(tp) is dict:
                k_tp, v_tp = typing.get_args(tp)
                if k_tp is str and (cls.__name__, f.name, "key") not in RULES:
                    missing.append(f"{cls.__name__}.{f.name} (keys)")
                if _contains_str(v_tp) and not dataclasses.is_dataclass(v_tp) and (cls.__name__, f.name) not in RULES:
                    missing.append(f"{cls.__name__}.{f.name}")
            elif _contains_str(tp) and (cls.__name__, f.name) not in RULES:
                missing.append(f"{cls.__name__}.{f.name}")

    visit(root)
    return missing


def _dataclasses_in(tp: Any) -> Iterable[type]:
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        yield tp
    for a in typing.get_args(tp):
        if not isinstance(a, str):
            yield from _dataclasses_in(a)


_HINTS: dict[type, dict[str, Any]] = {}


#: frozen model objects already found valid, by identity (a parse shares its types and parameters, and
#: hashing a frozen dataclass walks all of it); each is kept alive here so its id is not reused; bounded
_VALID_MODELS: dict[int, Any] = {}
_VALID_MAX = 200_000
#: per class: what check_model needs of each field it looks at (see _class_fields)
_FIELDS: dict[type, list[tuple[str, tuple[Any, ...] | None, bool, Any, bool]]] = {}
#: per class: whether its objects can never change (frozen, and nothing mutable inside by its type hints)
_IMMUTABLE: dict[type, bool] = {}
_IMMUTABLE_LEAVES = (str, int, float, bool, type(None))


def _immutable_hint(tp: Any) -> bool:
    if tp in _IMMUTABLE_LEAVES:
        return True
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
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
        known = _IMMUTABLE[cls] = bool(cls.__dataclass_params__.frozen and  # type: ignore[attr-defined]
                                       all(_immutable_hint(hints[f.name]) for f in dataclasses.fields(cls)))
    return known


def check_model(obj: Any) -> None:
    """Apply the rules to an object built in memory (and everything in it); raises Violation.

    A frozen object found valid once is not walked again."""
    valid = _VALID_MODELS
    if valid.get(id(obj)) is obj:
        return
    cls = type(obj)
    if hasattr(cls, "__dataclass_fields__"):  # a dataclass instance (a dataclass itself has type `type`)
        fields = _FIELDS.get(cls)
        if fields is None:
            fields = _class_fields(cls)
        for name, literals, optional, check, nested in fields:
            value = getattr(obj, name)
            try:
                if literals is not None and value not in literals and not (optional and value is None):
                    raise Violation(f"expected one of {', '.join(map(str, literals))}; got {short(value)}")
                if check is not None:
                    check(value)
                if nested and value is not None and valid.get(id(value)) is not value:  # a shared one checked
                    _descend(value)
            except Violation as exc:
                raise exc.within(name) from None
        if _immutable_class(cls):
            if len(_VALID_MODELS) >= _VALID_MAX:
                _VALID_MODELS.clear()
            _VALID_MODELS[id(obj)] = obj


def _class_fields(cls: type) -> list[tuple[str, tuple[Any, ...] | None, bool, Any, bool]]:
    """Per field of `cls` that has a rule, Literal values or a model object inside it: (name, its Literal values
    or None, whether None is allowed, its rule check or None, whether a model object can sit inside it)."""
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        origin = typing.get_origin(tp)
        optional = origin is typing.Union or origin is types.UnionType
        if optional:
            tp = next(a for a in typing.get_args(tp) if a is not type(None))
        literals = typing.get_args(tp) if typing.get_origin(tp) is typing.Literal else None
        check = field_check(cls, f.name, hints[f.name])
        nested = not _plain_hint(hints[f.name])
        if literals is not None or check is not None or nested:  # a bool or an int field: nothing to check
            out.append((f.name, literals, optional, check, nested))
    _FIELDS[cls] = out
    return out


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
            if valid.get(id(x)) is not x and hasattr(type(x), "__dataclass_fields__"):
                try:
                    check_model(x)
                except Violation as exc:
                    raise exc.within(f"[{i}]") from None
    elif hasattr(type(value), "__dataclass_fields__"):
        check_model(value)
    elif isinstance(value, dict):
        for k, x in value.items():
            if dataclasses.is_dataclass(x):
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

    def check_type(t: Any, parts: list[str]) -> None:
        """`parts`: the YAML path of the type mapping itself."""
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
        if t.kind in ("opaque", "incomplete", "handle", "callback", "enum", "struct", "union") and _c_name(t.name):
            raise Violation(f"{short(t.name)}: {_c_name(t.name)}", [*parts, "name"])

    constants = {e.name: {c.name for c in e.constants} for e in spec.enums}

    def check_params(params: Any, parts: list[str], with_defaults: bool) -> None:
        seen: dict[str, int] = {}
        for j, p in enumerate(params):
            where = [*parts, "params", f"[{j}]"]
            check_type(p.type, [*where, "type"])
            if p.name is not None:
                if p.name in seen:
                    raise Violation(f"parameter {p.name} appears twice (also params[{seen[p.name]}])", [*where, "name"])
                seen[p.name] = j
            if p.default is not None:
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
        claim(f.name, f"functions[{i}]", ["functions", f"[{i}]", "name"])
        check_type(f.returns, ["functions", f"[{i}]", "returns"])
        check_params(f.params, ["functions", f"[{i}]"], with_defaults=True)


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

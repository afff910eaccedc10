"""What a string from a spec, annotations or target file may be: every rule in one table.

Every string that reaches generated code (Python or C++) is one of:

- an identifier, under one of the name rules below (ASCII C identifiers; those that become Python
  names are also no Python keyword, start with no underscore and stay away from `reserved`);
- a version `X.Y.Z` (ASCII digits, no leading zeros);
- a restricted token (file name, environment variable, C type spelling, define, ...);
- or free text (`TEXT`: printable characters only), which the templates must escape
  (`codegen/base/escape.py`).

`RULES` maps each string field of every record read from YAML (`(class name, field)`, and
`(class name, field, "key")` for mapping keys) to its rule; `tests/codegen/test_validate.py` fails when a
string field has no rule. A field typed `Version` (a release, and the `since:`/`until:` of a range) needs no
entry: it is read as `VERSION` allows and held as a `releases.Version`. `spec_io` applies the rules while converting YAML (errors name the file,
line and YAML path); `check_model` applies them to objects built in memory (the parser, and
`resolve.resolve` before anything is rendered); `check_spec` adds what needs the whole spec
(declared types, unique names, enum ranges, canonical default arguments). The Python names the
renderer makes are checked with their rules, in `naming.check_names`.
"""

# no `from __future__ import annotations`: a NamedTuple's annotations made as strings are compiled when its class
# is made (`typing.ForwardRef`), and a process's first compile costs a parse ~9 M instructions
import keyword
import re
from collections.abc import Callable
from typing import Any, NamedTuple

from . import literals, reserved
from ..base.errors import CodegenError
from .ctypes_map import INT_BITS
from .releases import Version


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

    def within(self, part: str) -> "Violation":
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


def c_name_problem(s: str) -> str | None:
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
    why = c_name_problem(s)
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


def _version(s: str) -> str | None:
    """A version in its one spelling: what `Version.parse` reads, written as `str(Version)` writes it."""
    try:
        if str(Version.parse(s)) == s:
            return None
    except CodegenError:
        pass
    return "not a version X.Y.Z (three ASCII numbers, no leading zeros)"


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


C_NAME = Rule("C name", "an ASCII C identifier, no C/C++ keyword, not starting with `miogen_`", c_name_problem)
API_NAME = Rule("API name", "a C name that is also a safe Python name: no leading underscore, no Python keyword",
                _api_name)
ENUM_MEMBER = Rule("enum constant", "an API name that is no attribute of int/IntEnum (`name`, `value`, `mro`, "
                   "`real`, ...)", _enum_member)
FIELD_NAME = Rule("struct field", "an API name (it becomes a NamedTuple field and a ctypes field)", _api_name)
CTYPE_NAME = Rule("C type name", "an identifier, or up to four identifiers separated by single spaces "
                  "(`unsigned long long`)", _ctype_name)
INT_TYPE = Rule("C integer type", "one of the integer spellings codegen/spec/ctypes_map.py knows", _int_type)
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
NAME_WORD = Rule("name word", "a word of a function name after its prefix: ASCII letters and digits, starting with "
                 "an uppercase letter", _regex(r"[A-Z][A-Za-z0-9]*", "a capitalised word (ASCII letters and digits, "
                                              "starting with an uppercase letter)", 32))
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
    # the spec (codegen/spec/model.py)
    ("CType", "name"): CTYPE_NAME,
    ("Param", "name"): C_NAME,
    ("Param", "c"): C_SPELLING,
    ("Param", "default"): Rule("default argument", "the canonical spelling (codegen/spec/literals.py)", _default),
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
    ("Spec", "release"): LABEL,
    # annotations (codegen/semantics/annotations.py)
    ("LengthCall", "call"): API_NAME,
    ("LengthCall", "result"): C_NAME,
    ("LengthCall", "args", "key"): C_NAME,
    ("LengthCall", "args"): C_NAME,
    ("ParamNote", "length"): C_NAME,
    ("ParamNote", "count"): C_NAME,
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
    ("RecordNote", "why"): TEXT,
    ("FunctionNote", "params", "key"): C_NAME,
    ("FunctionNote", "why"): TEXT,
    ("Variant", "why"): TEXT,
    ("Variant", "params", "key"): C_NAME,
    ("Ownership", "create"): API_NAME,
    ("Ownership", "destroy"): API_NAME,
    ("Ownership", "owner"): API_NAME,
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
    # target facts (codegen/spec/target.py)
    ("ExportedFunction", "declaration"): TEXT,
    ("ExportedFunction", "source"): TEXT,
    ("ReleaseRecord", "shipped_in"): LABEL,
    ("ReleaseRecord", "header"): TEXT,
    ("ReleaseRecord", "abi"): TEXT,
    ("ReleaseRecord", "library"): TEXT,
    ("DiagnosticHint", "match"): TEXT,
    ("DiagnosticHint", "hint"): TEXT,
    ("StatusException", "name"): PY_CLASS,
    ("StatusException", "also"): PY_CLASS,
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
    ("Target", "setter_verbs"): NAME_WORD,
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



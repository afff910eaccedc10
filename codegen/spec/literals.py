"""C/C++ default arguments: exact literal parsing, and the canonical spelling a spec stores.

The parser reads a default argument's source text (`010`, `0x1p-3f`, `-1`, `nullptr`, `1'000u`,
`miopenFloat`) with `parse`, converts it to the parameter's C type with `canonical` and stores the
canonical spelling; loading a spec accepts only canonical spellings (`check_canonical`), so the
renderer never sees anything but:

- integer parameters: a decimal integer within the C type's range (`8` for `010`);
- floating-point parameters: Python's `repr` of the value, finite and within the C type's range
  (`0.5`; a literal with an `f` suffix is rounded to float first, as C++ does);
- `bool` parameters: `true` or `false` (any other literal converts as in C++: non-zero is true);
- pointers, handles, callbacks, opaque typedefs: `nullptr` (from `nullptr`, `NULL` or `0`);
- enum parameters: the name of one of that enum's constants.

Refused (an error naming the reason): anything that is not a literal, an enum constant or a
parenthesised/negated one of those; a value outside the parameter's type (C++ would wrap an
unsigned `-1`; miogen refuses it); non-finite floats (`1e309`); a negated unsigned literal
(`-1u`); a negated `true`, `nullptr` or constant; a floating literal for an integer parameter
(C++ truncates it); an integer for an enum parameter (C++ needs a cast); character and string
literals; `long double` literals are read at double precision.
"""

# no `from __future__ import annotations`: a NamedTuple's annotations made as strings are compiled when its class
# is made (`typing.ForwardRef`), and a process's first compile costs a parse ~9 M instructions
import functools
import math
import re
import struct
from collections.abc import Callable
from typing import Literal as TLiteral
from typing import NamedTuple

from .ctypes_map import INT_BITS, int_range
from .model import CType

LiteralKind = TLiteral["int", "float", "bool", "null", "name"]

#: longest default-argument text considered at all
MAX_TEXT = 200


class LiteralError(ValueError):
    """A default argument miogen cannot translate exactly; the message says why."""


class Lit(NamedTuple):
    """A parsed C literal (or enum constant name) of a default argument."""

    kind: LiteralKind
    value: int | float | bool | str | None
    unsigned: bool = False  # an integer literal with a u/U suffix


_DIGITS = r"[0-9](?:'?[0-9])*"
_HEXDIGITS = r"[0-9a-fA-F](?:'?[0-9a-fA-F])*"
_INT_SUFFIX = r"(?P<suffix>(?:[uU](?:ll|LL|[lL])?|(?:ll|LL|[lL])[uU]?)?)"
_INT = re.compile(
    rf"(?:(?P<hex>0[xX]{_HEXDIGITS})|(?P<bin>0[bB][01](?:'?[01])*)|(?P<oct>0(?:'?[0-7])*)|(?P<dec>[1-9](?:'?[0-9])*))"
    rf"{_INT_SUFFIX}",
    re.ASCII,
)
_DEC_FLOAT = (rf"(?P<body>(?:(?:{_DIGITS})?\.{_DIGITS}|{_DIGITS}\.)(?:[eE][+-]?{_DIGITS})?|{_DIGITS}[eE][+-]?{_DIGITS})"
              r"(?P<suffix>[fFlL]?)")
_HEX_FLOAT = rf"(?P<body>0[xX](?:(?:{_HEXDIGITS})?\.{_HEXDIGITS}|{_HEXDIGITS}\.?)[pP][+-]?{_DIGITS})(?P<suffix>[fFlL]?)"


@functools.cache
def _floats() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """_DEC_FLOAT and _HEX_FLOAT, compiled where a default argument is first read that is no integer (a parse seldom
    meets one)."""
    return re.compile(_DEC_FLOAT, re.ASCII), re.compile(_HEX_FLOAT, re.ASCII)


_NAME = r"[A-Za-z_][A-Za-z0-9_]*"  # an enum constant (compiled at the first: most parses meet none)
_ULLONG_MAX = (1 << 64) - 1
_FLT_FORMAT = struct.Struct("<f")


def _float32(value: float) -> float:
    """`value` rounded to IEEE single precision; OverflowError when it would become infinite."""
    return float(_FLT_FORMAT.unpack(_FLT_FORMAT.pack(value))[0])


def parse(text: str) -> Lit:
    """The literal `text` spells (C/C++ syntax); LiteralError when it is none miogen accepts."""
    if len(text) > MAX_TEXT:
        raise LiteralError(f"a default argument of {len(text)} characters is not a literal")
    s = text.strip()
    while s.startswith("(") and s.endswith(")"):
        s = s[1:-1].strip()
    negate = False
    while s[:1] in ("-", "+"):
        if s.startswith(("--", "++")):
            raise LiteralError(f"{text!r} is not a literal")
        if s[0] == "-":
            negate = not negate
        s = s[1:].strip()
        while s.startswith("(") and s.endswith(")"):
            s = s[1:-1].strip()
    lit = _primary(s, text)
    if not negate:
        return lit
    if lit.kind == "int" and lit.unsigned:
        raise LiteralError(f"{text!r} negates an unsigned literal (C++ wraps it around); write the value itself")
    if lit.kind in ("int", "float"):
        assert isinstance(lit.value, (int, float))
        return Lit(lit.kind, -lit.value, lit.unsigned)
    raise LiteralError(f"{text!r} negates {'a constant' if lit.kind == 'name' else lit.value!r}; miogen refuses it")


def _primary(s: str, text: str) -> Lit:
    if s in ("true", "false"):
        return Lit("bool", s == "true")
    if s in ("nullptr", "NULL"):
        return Lit("null", None)
    m = _INT.fullmatch(s)
    if m:
        suffix = m.group("suffix")
        if m.group("hex"):
            value = int(m.group("hex")[2:].replace("'", ""), 16)
        elif m.group("bin"):
            value = int(m.group("bin")[2:].replace("'", ""), 2)
        elif m.group("oct"):
            value = int(m.group("oct").replace("'", ""), 8)
        else:
            value = int(m.group("dec").replace("'", ""), 10)
        if value > _ULLONG_MAX:
            raise LiteralError(f"{text!r} is too large for any C integer type")
        return Lit("int", value, "u" in suffix.lower())
    dec_float, hex_float = _floats()
    m = dec_float.fullmatch(s) or hex_float.fullmatch(s)
    if m:
        body, suffix = m.group("body").replace("'", ""), m.group("suffix")
        try:
            real = float.fromhex(body) if body[:2].lower() == "0x" else float(body)
        except (ValueError, OverflowError):
            raise LiteralError(f"{text!r} is not a finite floating-point value") from None
        if not math.isfinite(real):
            raise LiteralError(f"{text!r} is not finite (it overflows double)")
        if suffix in ("f", "F"):
            try:
                real = _float32(real)
            except OverflowError:
                raise LiteralError(f"{text!r} overflows float") from None
        return Lit("float", real)
    if re.fullmatch(_NAME, s, re.ASCII):
        return Lit("name", s)
    if s[:1] in ("'", '"') or s[:2] in ("L'", 'L"', "u'", 'u"', "U'", 'U"') or s[:3] in ("u8'", 'u8"'):
        raise LiteralError(f"{text!r}: character and string literals are not supported as default arguments")
    raise LiteralError(f"{text!r} is not a literal or an enum constant")


def _is_pointerish(t: CType) -> bool:
    return t.depth > 0 or t.kind in ("handle", "callback", "opaque")


def canonical(lit: Lit, t: CType, constant_value: Callable[[str], int | None] = lambda name: None,
              enum_constants: Callable[[str], set[str] | None] = lambda name: None) -> str:
    """The canonical spelling of `lit` as a default of a parameter of type `t` (see module doc).

    `constant_value(name)`: the value of an enum constant (None: unknown); `enum_constants(enum)`:
    the constants of an enum type (None: unknown, any constant name is accepted).
    """
    kind = lit.kind
    if _is_pointerish(t):
        if kind == "null" or (kind == "int" and lit.value == 0):
            return "nullptr"
        raise LiteralError(f"a pointer parameter ({t.spelling()}) takes only nullptr, NULL or 0 as default")
    if t.array is not None:
        raise LiteralError("array parameters take no default argument")
    if kind == "name":
        assert isinstance(lit.value, str)
        if t.kind == "enum":
            known = enum_constants(t.name)
            if known is not None and lit.value not in known:
                raise LiteralError(f"{lit.value} is not a constant of {t.name}")
            return lit.value
        value = constant_value(lit.value)
        if value is None:
            raise LiteralError(f"{lit.value} is not a known enum constant")
        lit = Lit("int", value)
        kind = "int"
    if t.kind == "bool":
        if kind == "null":
            raise LiteralError("nullptr is not a bool")
        return "true" if lit.value else "false"
    if t.kind == "int":
        if kind == "bool":
            return "1" if lit.value else "0"
        if kind != "int":
            raise LiteralError(f"{t.name} parameter: {'a floating' if kind == 'float' else 'a null'} default is not "
                               f"an integer (C++ would convert it; write the integer)")
        assert isinstance(lit.value, int)
        if t.name not in INT_BITS:
            raise LiteralError(f"unknown integer type {t.name}")
        lo, hi = int_range(t.name)
        if not lo <= lit.value <= hi:
            raise LiteralError(f"{lit.value} is out of range for {t.name} [{lo}, {hi}]")
        return str(lit.value)
    if t.kind == "float":
        if kind == "null":
            raise LiteralError("nullptr is not a number")
        assert isinstance(lit.value, (int, float))
        number = float(lit.value)
        if not math.isfinite(number):
            raise LiteralError(f"{lit.value} is out of range for {t.name}")
        if t.name == "float":
            try:
                _float32(number)
            except OverflowError:
                raise LiteralError(f"{number!r} is out of range for float") from None
        return repr(number)
    if t.kind == "enum":
        raise LiteralError(f"an enum parameter ({t.name}) takes one of its constants as default, not "
                           f"{lit.value!r} (C++ needs a cast)")
    raise LiteralError(f"default arguments of type {t.spelling()} are not supported")


def check_canonical(text: str, t: CType, enum_constants: Callable[[str], set[str] | None] = lambda name: None
                    ) -> str | None:
    """None when `text` is the canonical default of a `t` parameter; otherwise why not."""
    try:
        lit = parse(text)
        want = canonical(lit, t, enum_constants=enum_constants)
    except LiteralError as exc:
        return str(exc)
    if want != text:
        return f"not in canonical form: write {want!r} (the parser stores defaults normalised)"
    return None

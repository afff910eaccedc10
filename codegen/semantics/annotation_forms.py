"""The annotation forms beyond direction, memory, shape and length: one registry entry each.

An annotation form is named by one key: a field of `annotations.FormNotes`, declared there once and carried
both by what annotations.yaml says (`annotations.ParamNote`) and by the resolved model (`resolved.ParamSem`),
None where nothing is said. Its class carries every behaviour of it: the gate check (the
rule a misplaced form breaks), the plan (the wrapper's conversion), the docstring, the stub library,
the call-through driver and the audit's view; the planner, docstrings, stub library, driver and
audit call them. `tests/codegen/test_forms.py` checks every form against docs/annotations.md ("Adding a
form") and that each behaviour is its own method, called where that behaviour is built.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal, assert_never

from ..base.errors import CodegenError
from ..base.escape import docstring_text
from ..spec.model import Spec
from .forms import ByValue, ElementArray, ElementScalar
from .resolved import FunctionSem, ParamSem, Semantics, is_host_scalar
from .stubvalues import chosen_type, last_enum

#: what each form says for itself, in this order (docs/annotations.md lists the same)
BEHAVIOURS = ("gate", "plan", "docstring", "stub", "driver", "audit")


class Form:
    """An annotation form: its key, docs heading and audit forms, and its behaviours as methods named as
    in BEHAVIOURS (gate, plan, docstring, stub, driver, audit), each taking what its one caller has;
    `nothing` names a behaviour the form needs none of, and why (the generic code does it)."""

    key: ClassVar[str]  # its field of annotations.FormNotes: the key in annotations.yaml and in resolved.ParamSem
    also_keys: ClassVar[tuple[str, ...]] = ()  # its other fields of annotations.FormNotes (keys said with `key`)
    heading: ClassVar[str]  # the docs/annotations.md section (### ...) documenting it
    audit_forms: ClassVar[tuple[str, ...]]  # the audit vocabulary forms (audit.vocabulary.FORMS) it states
    # the other ParamSem fields (no form's) a behaviour may read instead of `key` (null_means: nullable)
    also_reads: ClassVar[tuple[str, ...]] = ()
    nothing: ClassVar[dict[str, str]] = {}  # behaviour -> why this form needs none of it

    def gate(self, p: ParamSem, params: Sequence[ParamSem]) -> str | None:
        """The problem of `p` carrying this form where it does not belong, or None."""
        raise NotImplementedError

    def audit(self, p: ParamSem, params: Sequence[ParamSem]) -> dict[str, Any]:
        """The audit view's attributes (audit.vocabulary.AnnView) this form states for `p`."""
        raise NotImplementedError



# --------------------------------------------------------------------------- the annotation forms


def _null_suffix(p: ParamSem) -> str:
    return f" None passes NULL ({p.null_means})." if p.null_means else ""


class Scalar(Form):
    """`scalar: float | double`: a host `void *` scalar read as that type whatever the tensor type."""

    key = "scalar"
    heading = "Host scalars read as float or double"
    audit_forms = ("scalar-float", "scalar-double")
    nothing = {"driver": "the driver passes a value exact as float and double; the stub reads it as MIOpen does"}

    def gate(self, p: ParamSem, params: Sequence[ParamSem]) -> str | None:
        if p.scalar is not None and not is_host_scalar(p):
            return f"scalar: {p.scalar} is for host `void *` scalars"
        return None

    def plan(self, p: ParamSem, py: str, v: str, q: str, flt_max: float) -> tuple[str, str]:
        """(the table of common references, the general conversion statement) of a `scalar:` parameter."""
        c, conv = ("_c_float", "float_scalar") if p.scalar == "float" else ("_c_double", "double_scalar")
        fits = f" and {-flt_max!r} <= {py} <= {flt_max!r}" if p.scalar == "float" else ""  # else checked
        expr = f"_byref({c}({py})) if type({py}) is float{fits} else _s.{conv}({py}, {q}, _fn)"
        pre = f"{v} = " + (f"None if {py} is None else ({expr})" if p.nullable else expr)
        return ("_F32_REFS" if p.scalar == "float" else "_F64_REFS"), pre

    def docstring(self, p: ParamSem, py: str) -> str:
        return f"{py}: read as {p.scalar} whatever the tensor type." + _null_suffix(p)

    def stub(self, p: ParamSem, n: str, tag: str) -> str:
        """The log entry of a host scalar: read as MIOpen reads it (float unless `scalar: double`)."""
        ctype_ = "double" if p.scalar == "double" else "float"
        return f"s += {tag}; s += ({n} ? flt(*static_cast<const {ctype_}*>({n})) : std::string(\"null\"));"

    def audit(self, p: ParamSem, params: Sequence[ParamSem]) -> dict[str, Any]:
        if not is_host_scalar(p) or p.element_of is not None:
            return {}
        return {"scalar_type": {"float": "scalar-float", "double": "scalar-double"}.get(p.scalar or "",
                                                                                        "float-or-double")}


def element_source(src: ParamSem) -> Literal["descriptor", "enum", "pointer"]:
    """What gives the type for `element_of: src`: a descriptor (by value; its rules.element_queries call), an enum
    value, or an out enum pointer."""
    if isinstance(src.form, ByValue):
        return "descriptor" if src.type.kind == "handle" else "enum"
    return "pointer"


class ElementOf(Form):
    """`element_of: P`: a host scalar (`scalar: element`) or array in the element type P gives."""

    key = "element_of"
    also_keys = ("element_table",)
    heading = "Host scalars in a tensor's element type"
    audit_forms = ("scalar-element-type",)

    def gate(self, p: ParamSem, params: Sequence[ParamSem]) -> str | None:
        if p.element_of is None:
            return None
        if p.element_of not in {o.name for o in params} or p.element_of == p.name:
            return f"element_of names {p.element_of!r}, which is no other parameter"
        if not (is_host_scalar(p) or p.shape == "array" and p.type.kind == "void" and p.type.depth == 1):
            return "element_of is for host `void *` scalars and arrays"
        src = next(o for o in params if o.name == p.element_of)
        if p.direction != "out" and src.shape != "value":
            return (f"element_of: {p.element_of} is an output, known only after the call; an input needs a type "
                    f"known before it")
        return None

    def plan(self, fs: FunctionSem, p: ParamSem, py_names: dict[str, str]) -> tuple[str, str, tuple[str, ...]]:
        """(the Python expression of the enum value choosing p's element type, valid after `pre`; what it is;
        the statement reading a descriptor's element type first, when `element_of` names a descriptor)."""
        assert p.element_of is not None
        src = fs.param(p.element_of)
        spy = py_names[src.name]
        match element_source(src):
            case "descriptor":  # read once (the `late` line is shared)
                return (f"_type_{spy}", f"the descriptor {spy}",
                        (f"_type_{spy} = _element_type_{src.type.name}(_{spy}, _fn)",))
            case "enum":
                return f"int({spy})", spy, ()
            case "pointer":
                return f"_{spy}.value", spy, ()

    def docstring(self, p: ParamSem, form: ElementScalar | ElementArray, py: str, source: str, encodings: str) -> str:
        """`form`: p's (the planner's match narrows it)."""
        assert p.element_of is not None
        match form:
            case ElementScalar(out=False):
                return (f"{py}: passed in the type {source} gives ({encodings}: float16 via IEEE half, bfloat16 "
                        f"rounded to nearest even, integers range-checked)." + _null_suffix(p))
            case ElementScalar():
                return f"{py}: returned in the type {source} gives ({encodings})."
            case ElementArray():
                return f"{py}: elements in the type {source} gives ({encodings})."
            case _:
                assert_never(form)

    def stub(self, fs: FunctionSem, p: ParamSem, sem: Semantics, spec: Spec) -> str:
        """C++ expression of the type enum value choosing p's element type, as the wrapper saw it."""
        assert p.element_of is not None
        src = fs.param(p.element_of)
        match element_source(src):
            case "descriptor":
                q = sem.queries[src.type.name]
                result = sem.functions[q.call].param(q.result)
                known = last_enum(spec, result.type.name)
                return (f"PICK(long long, std::string(\"{q.call}/{q.result}\"), "
                        f"stub_type(reinterpret_cast<const void*>({src.name}), {known}))")
            case "enum":
                return f"static_cast<long long>({src.name})"
            case "pointer":
                return f"static_cast<long long>(*{src.name})"

    def driver(self, fs: FunctionSem, p: ParamSem, sem: Semantics, scripted: dict[tuple[str, str], Any],
               enum_choice: dict[str, int]) -> tuple[int, str]:
        """The driver picks the type (the constant, its encoding) and scripts it where the wrapper reads it:
        a descriptor's query, an out enum; an enum argument (`enum_choice`) is passed as that constant."""
        assert p.element_of is not None and p.element_table is not None
        value, enc = chosen_type(sem, p.element_table)
        src = fs.param(p.element_of)
        match element_source(src):
            case "descriptor":
                q = sem.queries[src.type.name]
                scripted[q.call, q.result] = value
            case "enum":
                enum_choice[src.name] = value
            case "pointer":
                scripted[fs.name, src.name] = value
        return value, enc

    def audit(self, p: ParamSem, params: Sequence[ParamSem]) -> dict[str, Any]:
        return {"scalar_type": "scalar-element-type"} if is_host_scalar(p) and p.element_of is not None else {}


class NullMeans(Form):
    """`null_means: ...`: what None (NULL) does, for a `nullable: true` parameter."""

    key = "null_means"
    heading = "NULL with a meaning"
    audit_forms = ("nullable-scalar", "nullable-shared-length")
    also_reads = ("nullable",)
    nothing = {"stub": "the stub records NULL like any pointer",
               "driver": "nullable parameters are driven with None by the generic path"}

    def gate(self, p: ParamSem, params: Sequence[ParamSem]) -> str | None:
        return "null_means needs nullable: true" if p.null_means is not None and not p.nullable else None

    def plan(self, p: ParamSem, py: str) -> str | None:
        """The Details note of a parameter whose NULL means something."""
        return f"{py}: None passes NULL ({p.null_means})." if p.null_means else None

    def docstring(self, p: ParamSem) -> str:
        """The end of an Args entry: what None does."""
        from ..base.escape import docstring_text
        if not p.nullable:
            return ""
        if p.null_means:
            return f" None passes NULL: {docstring_text(p.null_means)}."
        return " None passes NULL."

    def audit(self, p: ParamSem, params: Sequence[ParamSem]) -> dict[str, Any]:
        return {"nullable": p.nullable}


class Holds(Form):
    """`holds: address_of_device_pointer`: an out `void **` the callee writes the address of its pointer to."""

    key = "holds"
    heading = "An out pointer receiving an address"
    audit_forms = ("out-address",)
    nothing = {"driver": "the address the stub writes is checked as an out pointer"}

    def gate(self, p: ParamSem, params: Sequence[ParamSem]) -> str | None:
        if p.holds is not None and not (p.direction == "out" and p.shape == "scalar" and p.type.depth == 2
                                        and p.type.kind == "void"):
            return f"holds: {p.holds} is for an out `void **` scalar"
        return None

    def plan(self, p: ParamSem, v: str) -> tuple[str, str] | None:
        """(the returned value, its hint): the device pointer one step further than the address written."""
        if p.holds == "address_of_device_pointer":
            return f"_s.address_held({v}.value)", "int | None"
        return None

    def docstring(self, p: ParamSem, py: str, display_name: str) -> str:
        return (f"{py}: {display_name} writes the address of the pointer it keeps; the device pointer stored there "
                f"is returned.") if p.holds else ""

    def stub(self, fs: FunctionSem, p: ParamSem, known: str) -> str | None:
        """The write of the address of a pointer the stub keeps (`known`: the pointer's C++ value)."""
        if p.holds != "address_of_device_pointer":
            return None
        n = p.name
        return (f"static void* slot_{n} = nullptr; if({n}) {{ slot_{n} = PICK(void*, std::string(\"{fs.name}/{n}\"), "
                f"{known}); *{n} = &slot_{n}; }}")

    def audit(self, p: ParamSem, params: Sequence[ParamSem]) -> dict[str, Any]:
        return {"writes_address": p.holds == "address_of_device_pointer"}


class Per(Form):
    """`per: k`: an input array of k values for each unit of its length."""

    key = "per"
    heading = "Arrays of k values per item"
    audit_forms = ("length-multiple",)

    def gate(self, p: ParamSem, params: Sequence[ParamSem]) -> str | None:
        if p.per is not None and not (p.length and p.direction == "in" and p.shape == "array" and p.per >= 2):
            return "per: needs an input array with a length, and a factor >= 2"
        return None

    def plan(self, fs: FunctionSem, length: str, arrays: Sequence[str], py_names: dict[str, str], v: str) -> str | None:
        """The statement filling in the hidden `length` from the one array of k values per unit sharing it."""
        per = {a: fs.param(a).per for a in arrays}
        if all(k is None for k in per.values()):
            return None
        if len(arrays) != 1:
            raise CodegenError(f"{fs.name}.{length}: arrays of several elements per unit ({', '.join(arrays)}) "
                               f"cannot share one length")
        a = arrays[0]
        return f'{v} = _s.length_per(_fn, "{py_names[a]}", _{py_names[a]}, {per[a]})'

    def docstring(self, p: ParamSem, py: str) -> str | None:
        if p.per is None:
            return None
        return (f"{py}: {p.per} values for each of the {p.length} items (its length must be a multiple of {p.per}; "
                f"{p.length} = len({py}) // {p.per}).")

    def stub(self, p: ParamSem, length: str) -> str:
        """The number of elements the stub logs."""
        return length if p.per is None else f"({length}) * {p.per}"

    def driver(self, p: ParamSem) -> int:
        """How many values the driver passes: three units."""
        return 3 * (1 if p.per is None else p.per)

    def audit(self, p: ParamSem, params: Sequence[ParamSem]) -> dict[str, Any]:
        return {"length_factor": 1 if p.per is None else p.per}


class Returned(Form):
    """`returned: true`: an output count (named by another parameter's `count:`) that is data too."""

    key = "returned"
    heading = "Counts that are data"
    audit_forms = ("dropped-output",)
    nothing = {"stub": "an output count is written like any out integer"}

    def gate(self, p: ParamSem, params: Sequence[ParamSem]) -> str | None:
        if p.returned and not any(o.count == p.name for o in params):
            return "returned: is for an output count (named by another parameter's count:)"
        return None

    def plan(self, p: ParamSem, v: str, py: str) -> dict[str, Any]:
        """The ParamPlan fields returning the count beside the arrays it cuts (none: only passed)."""
        return {"out": f"{v}.value", "out_name": py} if p.returned else {}

    def docstring(self, fs: FunctionSem, p: ParamSem, py_names: dict[str, str]) -> str | None:
        if not p.returned:
            return None
        cut = ", ".join(py_names[o.name] for o in fs.params if o.count == p.name)
        return (f"{py_names[p.name]}: returned as it is; it also cuts {cut} (which hold at most the length the "
                f"caller asked for).")

    def driver(self, p: ParamSem, written: int) -> int | None:
        """What the driver expects of a returned count: what the stub wrote (`written`)."""
        return written if p.returned else None

    def audit(self, p: ParamSem, params: Sequence[ParamSem]) -> dict[str, Any]:
        count_of = next((o.name for o in params if o.count == p.name), None)
        returned = bool(p.returned)
        return {"returned": not (p.direction == "out" and p.shape == "opaque") and (count_of is None or returned),
                "count_of": count_of if not returned else None}


SCALAR, ELEMENT_OF, NULL_MEANS, HOLDS, PER, RETURNED = Scalar(), ElementOf(), NullMeans(), Holds(), Per(), Returned()
FORMS: tuple[Form, ...] = (SCALAR, ELEMENT_OF, NULL_MEANS, HOLDS, PER, RETURNED)


def gate_problems(p: ParamSem, params: Sequence[ParamSem]) -> list[str]:
    """The problems of `p`'s forms (in registry order)."""
    return [problem for form in FORMS if (problem := form.gate(p, params)) is not None]

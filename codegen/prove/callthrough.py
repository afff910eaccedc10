"""The call-through driver: pushes every typed wrapper of a rendered package through the stub library
(codegen/prove/stublib.py) and checks the values both ways (codegen/semantics/stubvalues.py)."""

from __future__ import annotations

import ctypes
from types import ModuleType
from typing import Any, assert_never


from ..base.record import record
from ..semantics import annotation_forms, forms
from ..semantics.resolved import FunctionSem, ParamSem, Semantics
from ..spec.model import CType, Spec, flat_fields, flat_fields_grouped
from ..semantics.stubvalues import (count_of, fixed_outputs, last_enum, length_sources, out_element, out_float, out_handle,
                         out_int, out_ptr, wide)


@record(frozen=False)
class CallResult:
    function: str
    problems: list[str]


#: added to every address the driver passes: above 4 GiB, so an address cut to 32 bits anywhere on
#: its way to C (a Python int handed to ctypes without a pointer type) shows in the stub's log
_HIGH = 0x7A5A_0000_0000


class Driver:
    """Calls every typed wrapper of a rendered package through the stub library and checks both ways."""

    def __init__(self, pkg: ModuleType, spec: Spec, sem: Semantics, stub: ctypes.CDLL, prefix: str,
                 version_getter: str | None = None) -> None:
        from ..semantics import naming

        self.fixed = fixed_outputs(spec, version_getter)
        self.pkg = pkg
        self.api = pkg.api
        self.raw = pkg.raw
        self.spec = spec
        self.sem = sem
        self.stub = stub
        self.prefix = prefix
        self.naming = naming
        stub.miogen_stub_log.restype = ctypes.c_char_p
        stub.miogen_stub_set_status.argtypes = [ctypes.c_char_p, ctypes.c_int]
        stub.miogen_stub_set_out.argtypes = [ctypes.c_char_p, ctypes.c_longlong]
        self.scripted: dict[tuple[str, str], int] = {}  # outputs scripted for the current call
        self.handle_class = {h.name: getattr(self.api, naming.class_name(h.name, prefix)) for h in spec.handles}
        self.length_sources = length_sources(sem)
        self.enum_class = {e.name: getattr(self.raw, e.name) for e in spec.enums}

    def log(self) -> list[dict[str, str]]:
        text = (self.stub.miogen_stub_log() or b"").decode()
        calls = []
        for line in text.splitlines():
            fn, *items = line.split("\t")
            entry = {"": fn}
            for item in items:
                key, _, value = item.partition("=")
                entry[key] = value
            calls.append(entry)
        return calls

    # ---------------------------------------------------------------- arguments
    def value_for(self, p: ParamSem, i: int, k: int = 0) -> tuple[Any, str]:
        """A Python argument for one element, and how the stub should log it."""
        t = p.type
        kind = t.kind
        if kind == "handle":
            addr = _HIGH + 0x50000 + 0x10 * i + 8 * k
            return self.handle_class[t.name].from_address(addr), str(addr)
        if kind == "enum":
            member = list(self.enum_class[t.name])[-1]
            return member, str(int(member.value))
        if kind == "bool":
            return True, "1"
        if kind == "float":
            v = 1.5 + i + k
            return v, repr(v)
        if kind == "int":
            v = wide(t.name, 3 + i + k)
            return v, str(v)
        if kind == "char":
            return 65, "65"
        return _HIGH + 0x80000 + 0x100 * i + 8 * k, str(_HIGH + 0x80000 + 0x100 * i + 8 * k)

    def args_for(self, fs: FunctionSem, plan_params: list[tuple[str, str]]) -> tuple[list[Any], dict[str, str]]:
        """Positional arguments for the visible parameters, and the expected stub log entries."""
        visible = {c: py for c, py in plan_params if py}
        args: list[Any] = []
        expect: dict[str, str] = {}
        lengths: dict[str, int] = {}
        for p in fs.params:
            if isinstance(p.form, forms.Array) and p.direction in ("in", "inout") and p.length:
                lengths[p.length] = 3
        # values whose type another argument chooses: the driver picks the type (and scripts a query for it)
        types: dict[str, tuple[int, str]] = {}  # parameter -> (type constant, encoding)
        enum_choice: dict[str, int] = {}  # an enum argument choosing a type -> the constant passed
        for p in fs.params:
            if p.element_of is None or p.element_table is None:
                continue
            types[p.name] = annotation_forms.ELEMENT_OF.driver(fs, p, self.sem, self.scripted, enum_choice)
        for p in fs.params:
            n, i = p.name, p.index
            if n not in visible:
                if n in lengths and isinstance(p.form, forms.ByValue):
                    expect[n] = str(lengths[n])
                continue
            if n in enum_choice:
                member = self.enum_class[p.type.name](enum_choice[n])
                args.append(member)
                expect[n] = str(int(member))
                continue
            form = p.form
            match form:
                case forms.ElementScalar() if n in types:  # in the type the driver chose
                    v, e = self.element_value(types[n][1], i)
                    args.append(v)
                    expect[n] = e
                case forms.ElementArray() if n in types:
                    pairs = [self.element_value(types[n][1], i, k) for k in range(3)]
                    args.append([v for v, _ in pairs])
                    expect[n] = "[" + ",".join(e for _, e in pairs) + "]"
                case forms.Value() | forms.Length():
                    if n in {q.length for q in fs.params
                              if q.direction == "out" and isinstance(q.form, (forms.Array, forms.Blob, forms.String))}:
                        args.append(4)
                        expect[n] = "4"
                        continue
                    if p.type.kind == "opaque":
                        v = _HIGH + 0x60000 + i
                        args.append(v)
                        expect[n] = str(v)
                        continue
                    if p.type.kind == "callback":
                        args.append(None)
                        expect[n] = "0"
                        continue
                    v, e = self.value_for(p, i)
                    args.append(v)
                    expect[n] = e
                case forms.Callback():
                    args.append(_Callback(p.type, self.spec))
                case forms.Buffer() | forms.Opaque():
                    v = _HIGH + 0x70000 + 0x100 * i
                    args.append(v)
                    expect[n] = str(v)
                case forms.ByPointer() if p.type.kind == "void" and p.memory == "host":
                    scale = 0.5 + i
                    args.append(scale)
                    expect[n] = repr(scale)
                case forms.String():
                    args.append("abc")
                    expect[n] = "abc"
                case forms.Blob():
                    args.append(b"\x01\x02\x03")
                    expect[n] = "010203"
                case forms.Array():
                    elem = ParamSem(name=n, index=i, type=p.type.pointee(), direction="in", memory=p.memory,
                                    shape="scalar", source="type")
                    values, logged = [], []
                    for k in range(annotation_forms.PER.driver(p)):
                        if elem.type.kind in ("struct", "union"):
                            v, e = self.struct_value(elem.type, i, k)
                        elif elem.type.kind == "void":
                            v, e = _HIGH + 0x90000 + 0x100 * i + 8 * k, str(_HIGH + 0x90000 + 0x100 * i + 8 * k)
                        else:
                            v, e = self.value_for(elem, i, k)
                        values.append(v)
                        logged.append(e)
                    args.append(values)
                    expect[n] = "[" + ",".join(logged) + "]"
                case forms.ByPointer():  # scalar passed by pointer (in / inout)
                    elem = ParamSem(name=n, index=i, type=CType(kind=p.type.kind, name=p.type.name),
                                    direction="in", memory="host", shape="scalar", source="type")
                    v, e = self.value_for(elem, i)
                    args.append(v)
                    expect[n] = e
                case _:
                    assert_never(form)
        return args, expect

    def element_value(self, enc: str, i: int, k: int = 0) -> tuple[Any, str]:
        """A Python value for an element of encoding `enc`, and how the stub logs it (decoded)."""
        if enc in ("float16", "bfloat16", "float32", "float64"):
            v = 0.5 + i + k
            return v, repr(v)
        if enc == "bool":
            return True, "1"
        if enc == "pointer":
            return _HIGH + 0xA0000 + 8 * k, str(_HIGH + 0xA0000 + 8 * k)
        v2 = 3 + i + k
        return v2, str(v2)

    def struct_value(self, t: CType, i: int, k: int) -> tuple[Any, str]:
        fsem = self.sem.records[t.name].fields if t.name in self.sem.records else {}
        if fsem:  # a record with field semantics: a tuple of Python values (handles as objects)
            values: list[Any] = []
            shown: list[str] = []
            for m, (fname, ft) in enumerate(flat_fields(self.spec.record(t.name))):
                f = fsem.get(fname)
                form = None if f is None else f.form
                match form:
                    case forms.HandleField():
                        addr = _HIGH + 0x50000 + 0x10 * i + 0x100 * (k + 1)
                        values.append(self.handle_class[ft.name].from_address(addr))
                        shown.append(str(addr))
                    case forms.BufferField() | forms.AddressField():
                        addr = 0xB0000 + 0x100 * i + 8 * k
                        values.append(addr)
                        shown.append(str(addr))
                    case None if ft.depth == 0 and ft.kind == "enum":
                        member = list(self.enum_class[ft.name])[-1]
                        values.append(member)
                        shown.append(str(int(member.value)))
                    case None if ft.depth == 0 and ft.kind == "int":
                        values.append(3 + i + k + m)
                        shown.append(str(3 + i + k + m))
                    case None if ft.depth == 0 and ft.kind == "float":
                        values.append(1.5 + i + k + m)
                        shown.append(repr(1.5 + i + k + m))
                    case None:
                        values.append(None)
                        shown.append("0")
                    case _:
                        assert_never(form)
            return tuple(values), "(" + ";".join(shown) + ")"
        cls = getattr(self.raw, t.name)
        obj = cls()
        logged = []
        for m, (fname, ft) in enumerate(flat_fields(self.spec.record(t.name))):
            if ft.depth == 0 and ft.kind == "int":
                v = 3 + i + k + m
                setattr(obj, fname, v)
                logged.append(str(v))
            elif ft.depth == 0 and ft.kind == "enum":
                v = list(self.enum_class[ft.name])[-1].value
                setattr(obj, fname, v)
                logged.append(str(v))
            elif ft.depth == 0 and ft.kind == "float":
                v2 = 1.5 + i + k + m
                setattr(obj, fname, v2)
                logged.append(repr(v2))
            else:
                logged.append("0")
        return obj, "(" + ";".join(logged) + ")"

    # ---------------------------------------------------------------- outputs
    def expected_out(self, fs: FunctionSem, p: ParamSem) -> Any:
        if (fs.name, p.name) in self.fixed:
            return self.fixed[fs.name, p.name]
        if (fs.name, p.name) in self.scripted:
            return self.scripted[fs.name, p.name]
        t = p.type
        elem = CType(kind=t.kind, name=t.name, depth=max(t.depth - 1, 0))
        written = annotation_forms.RETURNED.driver(p, count_of(4))  # an output count: what the stub wrote (min(length, 2))
        if written is not None:
            return written
        form = p.form
        match form:
            case forms.ElementScalar():  # written in the type the driver chose
                return ("number", out_element(p.index))
            case forms.ElementArray():
                return [("number", out_element(p.index, k)) for k in range(count_of(4) if p.count else 4)]
            case forms.String():
                return "stub"[: max(self.out_length(p) - 1, 0)]  # snprintf keeps room for the NUL
            case forms.Blob():
                return bytes((p.index + k) & 255 for k in range(self.out_length(p)))
            case forms.InArray() | forms.OutArray():
                n = self.out_length(p)
                return [self.known_py(elem, p.index, k, small=True) for k in range(count_of(n) if p.count else n)]
            case forms.ByPointer() | forms.ByValue() | forms.Callback() | forms.Opaque() | forms.Buffer():
                return self.known_py(elem, p.index, 0, small=(fs.name, p.name) in self.length_sources)
            case _:
                assert_never(form)

    def out_length(self, p: ParamSem) -> int:
        """The length of an output sequence the stub writes: what its sizing call wrote, else 4."""
        if p.length_call:
            return out_int(self.sem.functions[p.length_call.call].param(p.length_call.result).index)
        return 4

    def known_py(self, t: CType, i: int, k: int, small: bool = False) -> Any:
        kind = t.kind
        if kind == "int":
            return out_int(i, k) if small else wide(t.name, out_int(i))
        if kind == "float":
            return ("approx", out_float(i, k))
        if kind == "bool":
            return True
        if kind == "enum":
            return last_enum(self.spec, t.name)
        if kind == "handle":
            return ("handle", out_handle(i, k))
        if kind in ("opaque", "callback"):
            return out_handle(i, k)
        if kind in ("struct", "union"):
            vals: list[Any] = []
            first: dict[str, Any] = {}
            for m, (_, ft, group) in enumerate(flat_fields_grouped(self.spec.record(t.name))):
                if group is not None and group in first:  # reads what the union's first member wrote
                    vals.append(first[group])
                    continue
                if ft.depth == 0 and ft.kind == "int":
                    vals.append(out_int(i, k, m))
                elif ft.depth == 0 and ft.kind == "enum":
                    vals.append(last_enum(self.spec, ft.name))
                elif ft.depth == 0 and ft.kind == "float":
                    vals.append(("approx", out_float(i, k, m)))
                elif ft.depth == 0 and ft.kind == "bool":
                    vals.append(True)
                else:
                    vals.append(None)
                if group is not None:
                    first[group] = vals[-1]
            return tuple(vals)
        return out_ptr(i, k)

    @staticmethod
    def same(expected: Any, actual: Any) -> bool:
        if isinstance(expected, tuple) and len(expected) == 2 and expected[0] == "number":
            return isinstance(actual, (int, float)) and not isinstance(actual, bool) and actual == expected[1]
        if isinstance(expected, tuple) and len(expected) == 2 and expected[0] == "approx":
            return isinstance(actual, float) and abs(actual - expected[1]) < 1e-6
        if isinstance(expected, tuple) and len(expected) == 2 and expected[0] == "handle":
            return bool(getattr(actual, "address", None) == expected[1])
        if isinstance(expected, (list, tuple)):
            return (isinstance(actual, (list, tuple)) and len(actual) == len(expected)
                    and all(Driver.same(e, a) for e, a in zip(expected, actual, strict=True)))
        return bool(expected == actual)

    # ---------------------------------------------------------------- one call
    def call(self, fs: FunctionSem, plan_params: list[tuple[str, str]], py_name: str,
             out_names: list[str]) -> CallResult:
        problems: list[str] = []
        fn = getattr(self.api, py_name)
        self.scripted = {}
        args, expect = self.args_for(fs, plan_params)
        self.stub.miogen_stub_reset()
        for (sfn, sparam), scripted in self.scripted.items():
            self.stub.miogen_stub_set_out(f"{sfn}/{sparam}".encode(), scripted)
        try:
            result = fn(*args)
        except Exception as exc:  # noqa: BLE001 - reported as a problem
            return CallResult(fs.name, [f"raised {type(exc).__name__}: {exc}"])
        calls = [c for c in self.log() if c[""] == fs.name]
        if len(calls) != 1:
            return CallResult(fs.name, [f"expected 1 logged call, got {len(calls)}"])
        logged = calls[0]
        for name, value in expect.items():
            got = logged.get(name)
            if got is None:
                problems.append(f"{name}: not logged")
            elif not _same_text(value, got):
                problems.append(f"{name}: passed {value}, C saw {got}")
        outs = {p.name: p for p in fs.params if p.direction in ("out", "inout")
                and not isinstance(p.form, (forms.ByValue, forms.Buffer, forms.Callback, forms.Opaque))
                and (not p.hidden or p.returned)}
        if outs:
            if result is None or (len(out_names) > 1 and not isinstance(result, tuple)):
                return CallResult(fs.name, [f"expected outputs {', '.join(out_names)}; got {result!r}"])
            values = [result] if len(out_names) == 1 else list(result)
            for c_name, value in zip(out_names, values, strict=False):
                exp = self.expected_out(fs, outs[c_name])
                if not self.same(exp, value):
                    problems.append(f"output {c_name}: expected {exp!r}, got {value!r}")
        return CallResult(fs.name, problems)


def _same_text(expected: str, got: str) -> bool:
    if expected == got:
        return True
    try:
        return abs(float(expected) - float(got)) < 1e-6
    except ValueError:
        pass
    if expected.startswith("[") and got.startswith("["):
        e, g = expected[1:-1].split(","), got[1:-1].split(",")
        return len(e) == len(g) and all(_same_text(a, b) for a, b in zip(e, g, strict=True))
    if expected.startswith("(") and got.startswith("("):
        e, g = expected[1:-1].split(";"), got[1:-1].split(";")
        return len(e) == len(g) and all(_same_text(a, b) for a, b in zip(e, g, strict=True))
    return False


class _Callback:
    """A Python callable for a callback parameter; records its calls."""

    def __init__(self, t: CType, spec: Spec) -> None:
        cb = next(c for c in spec.callbacks if c.name == t.name)
        self.returns_value = not (cb.returns.kind == "void" and cb.returns.depth == 0)
        self.calls: list[tuple[Any, ...]] = []

    def __call__(self, *args: Any) -> Any:
        self.calls.append(args)
        return 0x4000 if self.returns_value else None


def run_call_through(pkg: ModuleType, spec: Spec, sem: Semantics, stub: ctypes.CDLL, prefix: str,
                     plans: dict[str, tuple[str, list[tuple[str, str]], list[str]]],
                     version_getter: str | None = None) -> list[CallResult]:
    """Drive every function; `plans` maps C name -> (python name, [(c param, py param)], [out param names]).

    Each wrapper is driven twice: as users call it (its binding without argtypes, raw.DIRECT), and with
    that binding swapped for the raw module's prototype, so the argtypes `raw` users rely on are
    checked against the C functions as well."""
    driver = Driver(pkg, spec, sem, stub, prefix, version_getter)

    def each() -> list[CallResult]:
        out = []
        for f in spec.functions:
            py_name, params, outs = plans[f.name]
            out.append(driver.call(sem.functions[f.name], params, py_name, outs))
        return out

    direct = each()
    raw_module = pkg._state.bound_modules[0]  # the bound release's raw module
    for name in raw_module.PROTOTYPES:
        setattr(raw_module.DIRECT, name, getattr(raw_module, name))
    try:
        typed = each()
    finally:
        raw_module._reset()
    return [CallResult(d.function, d.problems + [f"through the raw prototype: {p}" for p in t.problems])
            for d, t in zip(direct, typed, strict=True)]

"""Spec + annotations -> the plans of one release (codegen/render/plans.py): names, checks and conversions
written as Python source strings the templates paste. Deterministic: header order, no hashes of sets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, assert_never


from ..base.record import replace
from . import docstrings
from ..semantics import annotation_forms, forms, naming
from ..semantics.resolved import FieldSem, FunctionSem, ParamSem, Semantics
from ..spec.ctypes_map import FLOAT_CTYPES, INT_CTYPES, base_ctype, ctype, int_range
from .direct import direct_arg
from ..spec.model import CType, Record, Spec, flat_fields
from .plans import (CallbackPlan, EnumPlan, ExtentPlan, FieldPlan, FunctionPlan, HandlePlan, ParamPlan, Plan, QueryPlan,
                    RecordPlan, TablePlan)
from ..spec.target import Target, check_target

_LOWER = "abcdefghijklmnopqrstuvwxyz"


FLT_MAX = 3.4028234663852886e38  # the largest finite C float

class _Planner:
    def __init__(self, spec: Spec, sem: Semantics, target: Target, added_in: dict[str, str]) -> None:
        self.spec = spec
        self.sem = sem
        self.target = target
        self.prefix = target.function_prefix
        self.added_in = added_in
        self.enum_names = {e.name for e in spec.enums}
        self.handle_class = {h.name: naming.class_name(h.name, self.prefix) for h in spec.handles}
        self.record_class = {r.name: naming.class_name(r.typedef or r.name, self.prefix) for r in spec.records if r.name}
        self.record_class.update({r.typedef: self.record_class[r.name] for r in spec.records if r.name and r.typedef})
        self.enum_class = {e.name: naming.class_name(e.name, self.prefix) for e in spec.enums}
        self.fn_py = {f.name: naming.function_name(f.name, self.prefix) for f in spec.functions}
        self.destroy_of = {h.destroy: self.handle_class[h.name] for h in sem.handles.values() if h.destroy}

    # ------------------------------------------------------------------ types
    def api_ctype(self, t: CType) -> str:
        """ctypes expression of the base type of `t`, as written inside api.py."""
        expr = base_ctype(t, self.spec)
        return f"_raw.{expr}" if t.kind in ("struct", "union", "callback") else expr

    def scalar_hint(self, t: CType) -> str:
        k = t.kind
        if k == "bool":
            return "bool"
        if k == "int":
            return "int"
        if k == "float":
            return "float"
        if k == "char":
            return "int | bytes"
        if k == "enum":
            return f"{self.enum_class.get(t.name, 'int')} | int"
        if k == "handle":
            return self.handle_class[t.name]
        if k in ("struct", "union"):
            return self.record_class.get(t.name, "object")
        return "int"

    def out_hint(self, t: CType) -> str:
        k = t.kind
        if k == "enum":
            return f"{self.enum_class[t.name]} | int" if t.name in self.enum_class else "int"
        if k == "handle":
            return f"{self.handle_class[t.name]} | None"
        if k in ("struct", "union"):
            return self.record_class[t.name]
        if k in ("void", "opaque", "callback") or t.depth > 0:
            return "int | None"
        return self.scalar_hint(t)

    def convert_out(self, t: CType, expr: str, owned: bool, owner: str | None) -> str:
        """Python value of a C value `expr` of base type `t` (one element)."""
        k = t.kind
        if k == "enum" and t.name in self.enum_class:
            return f"_V_{t.name}.get({expr}, {expr})" if expr.isidentifier() or expr.endswith(".value") \
                else f"_s.to_enum({self.enum_class[t.name]}, {expr})"
        if k == "handle":
            return f"{self.handle_class[t.name]}._from_c({expr}, {owned}{', ' + owner if owner else ''})"
        if k in ("struct", "union"):
            return f"{self.record_class[t.name]}._from_c({expr})"
        if k == "bool":
            return f"bool({expr})"
        return expr

    def elem(self, t: CType) -> str:
        """The `_s.Elem` converting input-array elements of base type `t` (a module-level constant)."""
        base = t.kind
        if base == "handle":
            return f"_s.handle_elem({self.handle_class[t.name]})"
        if base == "void":
            return "_s.buffer_elem()"
        if base == "enum":
            return f"_s.enum_elem({self.api_ctype(t)}, {self.enum_class[t.name]})"
        if base == "int":
            lo, hi = int_range(t.name)
            return f"_s.int_elem({INT_CTYPES[t.name]}, {lo}, {hi})"
        if base == "float":
            return f"_s.float_elem({FLOAT_CTYPES[t.name]})"
        if base == "bool":
            return "_s.bool_elem(ctypes.c_bool)"
        if base in ("struct", "union"):
            return f"_s.struct_elem(_raw.{t.name})"
        return "_s.buffer_elem()"

    # ------------------------------------------------------------------ functions
    def function(self, fs: FunctionSem) -> FunctionPlan:
        spec_fn = self.spec.function(fs.name)
        fn = fs.name
        params: list[ParamPlan] = []
        py_names = self.py_params(fs)
        by_name = {p.name: p for p in fs.params}
        # groups of input arrays sharing a hidden length
        shared: dict[str, list[str]] = {}
        for p in fs.params:
            if p.length and isinstance(p.form, (forms.InArray, forms.ElementArray, forms.InBlob)) \
                    and p.direction == "in" and by_name[p.length].hidden:
                shared.setdefault(p.length, []).append(p.name)
        owner_param = self._owner_param(fs)
        creates = fs.creates
        has_default = False
        for p in fs.params:
            plan = self.param(fs, p, py_names, shared, owner_param, creates)
            if isinstance(p.form, forms.Buffer) and not p.form.typed:
                plan = self._buffer_checks(fs, p, plan, py_names)
            if plan.default is not None:
                has_default = True
            elif has_default and plan.py:
                plan = ParamPlan(**{**plan.__dict__, "default": "None", "hint": plan.hint + " | None"})
            params.append(plan)
        outs = [(p.out_name or "", p.out_hint or "object", p.out or "") for p in params if p.out]
        status = spec_fn.returns.kind == "enum" and spec_fn.returns.name == self.target.status_type
        if not status:
            t = spec_fn.returns
            if t.kind == "char" and t.depth == 1:
                outs = [("result", "str", "_ret.decode('utf-8', 'replace') if _ret is not None else ''")]
            elif t.kind != "void" or t.depth:
                outs = [("result", self.out_hint(t), "_ret")]
        if not outs:
            returns, result_class, return_expr = "None", None, "None"
        elif len(outs) == 1:
            returns, result_class, return_expr = outs[0][1], None, outs[0][2]
        else:
            result_class = naming.result_name(fn, self.prefix)
            returns = result_class
            return_expr = f"_new({result_class}, ({', '.join(o[2] for o in outs)}))"
        c_params = ", ".join(p.name or "" for p in spec_fn.params)
        c_return = spec_fn.returns if not status and (spec_fn.returns.kind != "void" or spec_fn.returns.depth) else None
        doc = docstrings.function_doc(self, fs, params, py_names, owner_param, result_class, outs, c_return,
                                     spec_fn)
        destroys = self.destroy_of.get(fn)
        destroys_param = next(
            (py_names[p.name] for p in fs.params if isinstance(p.form, forms.ByValue) and p.type.kind == "handle"
             and destroys and self.handle_class[p.type.name] == destroys), None)
        argtypes = tuple(ctype(p.type, self.spec) for p in spec_fn.params)
        direct = [direct_arg(p, plan.arg, a) for p, plan, a in zip(fs.params, params, argtypes)]
        keep = tuple("_" + py_names[p.name] for p in fs.params if isinstance(p.form, forms.Callback))
        keep_on = next((py_names[p.name] for p in fs.params if isinstance(p.form, forms.ByValue)
                        and p.type.kind == "handle"), None)
        return FunctionPlan(
            c_name=fn,
            py_name=self.fn_py[fn],
            params=tuple(params),
            returns=returns,
            result_class=result_class,
            result_fields=tuple((o[0], o[1]) for o in outs) if result_class else (),
            return_expr=return_expr,
            restype="ctypes.c_uint" if status else ctype(spec_fn.returns, self.spec),
            argtypes=argtypes,
            direct_args=None if None in direct else tuple(a for a in direct if a is not None),
            status=status,
            summary=f"{fn}({c_params})",
            group=spec_fn.group,
            beta=spec_fn.beta,
            deprecated=spec_fn.deprecated,
            undeclared=spec_fn.undeclared,
            added_in=self.added_in.get(fn),
            destroys=destroys,
            destroys_param=destroys_param,
            keep=keep,
            keep_on=keep_on,
            doc=doc,
        )

    def _setter(self, fn: str) -> bool:
        """A function that sets what its first argument describes: `<prefix><verb>...`, a verb of the target's
        `setter_verbs` as a whole word (the wrapper refuses a shared descriptor there; miopenSetTensor,
        miopenSetProblemTensorDescriptor, ... only read a descriptor they take further on)."""
        rest = naming.strip_prefix(fn, self.prefix)
        return any(rest.startswith(verb) and rest[len(verb):len(verb) + 1] not in ("", *_LOWER)
                   for verb in self.target.setter_verbs)

    def _buffer_checks(self, fs: FunctionSem, p: ParamSem, plan: ParamPlan, py_names: dict[str, str]) -> ParamPlan:
        """A device buffer whose size the wrapper can know (not an int address) checked against the descriptor that
        describes it (rules.extent_queries: the parameter named as the buffer plus the query's suffix) and the byte
        count passed with it (rules.buffer_sizes), after every argument is converted."""
        py = py_names[p.name]
        checks: list[str] = []
        notes: list[str] = []
        for q_handle, q in self.sem.extents.items():
            desc = next((d for d in fs.params if d.name == p.name + q.suffix and isinstance(d.form, forms.ByValue)
                         and d.type.kind == "handle" and d.type.name == q_handle), None)
            if desc is not None:
                dpy = py_names[desc.name]
                checks.append(f"_s.check_described({py}, \"{py}\", _fn, _extent_{q_handle}, {dpy})")
                notes.append(f"the bytes {dpy} spans")
        for size_name in self.sem.sizes.get(p.name, ()):  # by-value integers where passed (resolve's gate)
            size = next((s for s in fs.params if s.name == size_name), None)
            if size is not None:
                spy = py_names[size.name]
                checks.append(f"_s.check_sized({py}, \"{py}\", _fn, {spy}, \"{spy}\")")
                notes.append(f"{spy} bytes")
                break
        if not checks:
            return plan
        guard = f"if type({py}) is not int{f' and {py} is not None' if p.nullable else ''}:"
        note = f"{py}: where its size is known (not an int address), it must hold {' and '.join(notes)}."
        return replace(plan, mid=(*plan.mid, guard, *(f"    {c}" for c in checks)),
                       note=note if plan.note is None else f"{plan.note} {note}")

    def py_params(self, fs: FunctionSem) -> dict[str, str]:
        """Python names of the parameters; where two C names snake to the same name, the one not
        already spelt that way keeps its C spelling (e.g. `stateStep` beside `state_step`)."""
        return naming.param_names([p.name for p in fs.params])  # the rule naming.check_names checks

    def _owner_param(self, fs: FunctionSem, handle: str | None = None) -> str | None:
        """The parameter holding the owner of the handle `fs` creates (or returns: `handle`), if it takes one."""
        handle = handle or fs.creates
        if handle is None or handle not in self.sem.handles:
            return None
        owner = self.sem.handles[handle].owner
        if owner is None:
            return None
        for p in fs.params:
            if isinstance(p.form, forms.ByValue) and p.type.kind == "handle" and p.type.name == owner:
                return self.py_params(fs)[p.name]
        return None

    def param(
        self,
        fs: FunctionSem,
        p: ParamSem,
        py_names: dict[str, str],
        shared: dict[str, list[str]],
        owner_param: str | None,
        creates: str | None,
    ) -> ParamPlan:
        fn = fs.name
        py = py_names[p.name]
        v = "_" + py  # the C-side variable
        t = p.type
        q = f'"{py}"'
        default = self._default(p)
        base = dict(c_name=p.name, py="", hint="", default=None, pre=(), mid=(), alloc=(), arg=v, out=None,
                    out_hint=None, out_name=None)

        def make(**kw: Any) -> ParamPlan:
            return ParamPlan(**{**base, **kw})

        form = p.form
        nullable = "True" if p.nullable else "False"
        opt = " | None" if p.nullable else ""
        match form:
            case forms.Length():  # a length filled in from input sequences
                arrays = shared.get(p.name, [])
                per_line = annotation_forms.PER.plan(fs, p.name, arrays, py_names, v)
                if per_line is not None:
                    return make(mid=(per_line,))
                if len(arrays) == 1:
                    return make(mid=(f"{v} = 0 if _{py_names[arrays[0]]} is None else len(_{py_names[arrays[0]]})",))
                listing = ", ".join(f'"{py_names[a]}": _{py_names[a]}' for a in arrays)
                return make(mid=(f"{v} = _s.common_length(_fn, {{{listing}}})",))
            case forms.Count():  # an output count consumed by an output array
                returned = annotation_forms.RETURNED.plan(p, v, py)
                if returned:  # data of its own too: returned beside the arrays it cuts
                    return make(alloc=(f"{v} = {self.api_ctype(t)}()",), arg=f"_byref({v})", **returned,
                                out_hint=self.out_hint(t.pointee()),
                                note=annotation_forms.RETURNED.docstring(fs, p, py_names))
                return make(alloc=(f"{v} = {self.api_ctype(t)}()",), arg=f"_byref({v})")
            case forms.Value():
                return self._value_param(p, py, v, q, default, make, writes=p.index == 0 and self._setter(fn))
            case forms.Callback():
                return make(py=py, hint=f"Callable[..., Any]{opt}", default=default,
                            pre=(f"{v} = _s_callback({py}, _raw.{t.name}, {q}, _fn)",))
            case forms.Opaque():
                return make(py=py, hint="int | None", default=default or ("None" if p.nullable else None),
                            pre=(f"{v} = _s.as_opaque({py}, {q}, _fn)",))
            case forms.Buffer(typed=typed):
                if not typed:  # fast path: an int address passed before (its c_void_p)
                    pre: tuple[str, ...] = (
                        f"{v} = _DEVICE_ARGS.get({py}) if type({py}) is int else None",
                        f"if {v} is None{f' and {py} is not None' if p.nullable else ''}:",
                        f"    {v} = _s.device_arg({py}, {q}, _fn, {nullable})")
                else:  # a typed pointer to device memory: the address cast
                    none = f"None if {py} is None else " if p.nullable else ""  # fast paths: NULL where allowed, and
                    pre = (  # a non-NULL int address that fits 64 bits
                        f"{v} = {py} if type({py}) is int and 0 < {py} < {1 << 64} else {none}_s.as_device_ptr({py}, "
                        f"{q}, _fn, {nullable})",
                        f"{v} = _s.typed_pointer({v}, {ctype(t, self.spec)})")
                return make(py=py, hint=f"DeviceBuffer{opt}", default=default, pre=pre)
            case forms.InString():
                return make(py=py, hint=f"str{opt}", default=default,
                            pre=(f"{v} = _s.as_cstring({py}, {q}, _fn, {nullable})",))
            case forms.OutString():
                return self._out_bytes(fs, p, py, v, make, text=True)
            case forms.OutBlob():
                return self._out_bytes(fs, p, py, v, make, text=False)
            case forms.InBlob():
                return make(py=py, hint="bytes", default=default,
                            pre=(f"{v}, _len_{py} = _s.as_blob({py}, {q}, _fn)",))
            case forms.ElementArray():
                return self._element_array(fs, p, form, py, v, q, default, make, py_names)
            case forms.OutArray():
                return self._out_array(fs, p, py, v, make, owner_param, creates)
            case forms.InArray():
                elem = self.elem(t)
                rec = self.sem.records.get(t.name) if t.kind in ("struct", "union") else None
                note = annotation_forms.NULL_MEANS.plan(p, py)
                if rec is not None:
                    elem = self.record_elem(t.name)
                    cls = self.record_class[t.name]
                    note = (f"{py}: {cls} records (or tuples of their fields): "
                            + "; ".join(self._field_note(f) for f in rec.fields.values()) + ".")
                hint = f"Sequence[{self._elem_hint(t)}]{opt}"
                note = annotation_forms.PER.docstring(p, py) or note
                return make(py=py, hint=hint, default=default, note=note,
                            pre=(f"{v} = _s.in_array({py}, {elem}, {q}, _fn, {nullable})",))
            case forms.HostScalar():  # a host scaling factor
                return self._host_scalar(p, py, v, q, default, make, annotation_forms.NULL_MEANS.plan(p, py))
            case forms.ElementScalar():  # a host scalar in the element type another argument gives
                return self._element_scalar(fs, p, form, py, v, q, default, make, py_names)
            case forms.InScalar():  # a single element passed by pointer
                ct = self.api_ctype(t) if not (t.kind == "void" and t.depth == 2) else "ctypes.c_void_p"
                conv = self._scalar_in(t, py, q, p.nullable)
                ref = (f"{v} = None if {py} is None else _byref({ct}({py}))" if p.nullable
                       else f"{v} = _byref({ct}({py}))")
                return make(py=py, hint=self.scalar_hint(t) + opt, default=default, pre=(*conv, ref))
            case forms.InOutScalar():  # passed by pointer, the new value returned
                ct, value = self._pointer_out(fs, p, v, owner_param, creates)
                conv = self._scalar_in(t, py, q, False)
                return make(py=py, hint=self.scalar_hint(t), default=default,
                            pre=conv + (f"{v} = {ct}({py})",), arg=f"_byref({v})",
                            out=value, out_hint=self.out_hint(t.pointee()), out_name=py)
            case forms.OutScalar():
                ct, value = self._pointer_out(fs, p, v, owner_param, creates)
                hint = self.out_hint(t.pointee())
                if creates is not None and t.kind == "handle" and t.name == creates:  # a create function: the new
                    value = (f"{self.handle_class[t.name]}._created({v}.value, _fn"  # object, never None
                             f"{', ' + owner_param if owner_param else ''})")
                    hint = self.handle_class[t.name]
                note = None
                held = annotation_forms.HOLDS.plan(p, v)
                if held is not None:  # MIOpen writes &field: the device pointer is one step further
                    value, hint = held
                    note = annotation_forms.HOLDS.docstring(p, py, self.target.display_name)
                return make(alloc=(f"{v} = {ct}()",), arg=f"_byref({v})", out=value, out_hint=hint, out_name=py,
                            note=note)
            case _:
                assert_never(form)

    def _pointer_out(self, fs: FunctionSem, p: ParamSem, v: str, owner_param: str | None,
                     creates: str | None) -> tuple[str, str]:
        """(the ctypes type of the element, the returned value) of an output passed by pointer."""
        t = p.type
        ct = "ctypes.c_void_p" if (t.kind == "void" and t.depth == 2) else self.api_ctype(t)
        owned = creates is not None and t.kind == "handle" and t.name == creates
        # a handle another object owns (e.g. a fusion plan's op) keeps that owner alive, created or not
        owner = owner_param if owned else self._owner_param(fs, t.name) if t.kind == "handle" else None
        value = self.convert_out(t, f"{v}.value" if t.kind not in ("struct", "union") else v, owned, owner)
        if t.kind == "callback":  # a function pointer comes back as its address
            value = f"ctypes.cast({v}, ctypes.c_void_p).value"
        return ct, value

    # ------------------------------------------------------------------ forms beyond the C type
    def _table_refs(self, p: ParamSem) -> tuple[str, str]:
        assert p.element_table is not None
        return f"_ET_{p.element_table}", f"_EN_{p.element_table}"

    def _encodings_hint(self, p: ParamSem) -> str:
        assert p.element_table is not None
        encs = set(self.sem.tables[p.element_table].types.values()) if p.element_table in self.sem.tables else set()
        hints: list[str] = []
        if encs & {"float16", "bfloat16", "float32", "float64"}:
            hints.append("float")
        if encs & {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "pointer"}:
            hints.append("int")
        if "bool" in encs:
            hints.append("bool")
        if "pointer" in encs:
            hints.append("None")
        return " | ".join(hints) or "float"

    def _table_note(self, p: ParamSem) -> str:
        assert p.element_table is not None
        table = self.sem.tables.get(p.element_table)
        if table is None:
            return ""
        encs = sorted(set(table.types.values()), key=lambda e: list(table.types.values()).index(e))
        return f"{', '.join(encs)}"

    def _element_scalar(self, fs: FunctionSem, p: ParamSem, form: forms.ElementScalar, py: str, v: str, q: str,
                        default: str | None, make: Callable[..., ParamPlan], py_names: dict[str, str]) -> ParamPlan:
        """A host scalar (read, or written: `form.out`) in the element type another argument gives."""
        et, en = self._table_refs(p)
        tv, source, query = annotation_forms.ELEMENT_OF.plan(fs, p, py_names)
        note = annotation_forms.ELEMENT_OF.docstring(p, form, py, source, self._table_note(p))
        if form.out:
            enc = f"_s.element_encoding({et}, {en}, {tv}, {q}, _fn, {source!r})"
            return make(alloc=(f"{v} = _s.element_out(1, 'uint64')",), arg=v,
                        out=f"_s.element_values({v}, {enc}, 1)[0]", out_hint=self._encodings_hint(p),
                        out_name=py, note=note)
        opt = " | None" if p.nullable else ""
        guard = f"None if {py} is None else " if p.nullable else ""
        check = (f"if {py} is not None and type({py}) is not float:" if p.nullable
                 else f"if type({py}) is not float:", f"    {py} = _s.as_real({py}, {q}, _fn)")
        late = query + (f"{v} = {guard}_s.element_scalar({py}, _s.element_encoding({et}, {en}, {tv}, {q}, _fn, "
                f"{source!r}), {q}, _fn)",)
        return make(py=py, hint=f"float{opt}", default=default, pre=check, late=late, note=note)

    def _host_scalar(self, p: ParamSem, py: str, v: str, q: str, default: str | None,
                     make: Callable[..., ParamPlan], null_note: str | None) -> ParamPlan:
        """A host scaling factor: read as `scalar:` says, else as float (or the ctypes type passed)."""
        opt = " | None" if p.nullable else ""
        if p.scalar is not None:
            refs, pre = annotation_forms.SCALAR.plan(p, py, v, q, FLT_MAX)
            return make(py=py, hint=f"float | ctypes.c_float | ctypes.c_double{opt}", default=default,
                        pre=self._common_scalar(py, v, refs, pre), note=annotation_forms.SCALAR.docstring(p, py))
        expr = (f"_byref(_c_float({py})) if type({py}) is float and {-FLT_MAX!r} <= {py} <= {FLT_MAX!r} "
                f"else _s.host_scalar({py}, {q}, _fn)")  # a float that fits a C float, else checked
        scalar = f"{v} = " + (f"None if {py} is None else ({expr})" if p.nullable else expr)
        return make(py=py, hint=f"float | ctypes.c_float | ctypes.c_double{opt}", default=default,
                    pre=self._common_scalar(py, v, "_F32_REFS", scalar), note=null_note)

    @staticmethod
    def _common_scalar(py: str, v: str, refs: str, general: str) -> tuple[str, ...]:
        """A host scaling factor: the common values (1.0, 0.0, ...) from a table of references made once
        (C only reads them: `const void *`), as Caffe2's k_one/k_zero; a zero only when it is +0.0 (the
        table's key 0.0 also matches -0.0); anything else through `general`."""
        return (f"{v} = {refs}.get({py}) if type({py}) is float and ({py} or _copysign(1.0, {py}) > 0) else None",
                f"if {v} is None:",
                f"    {general}")

    def _element_array(self, fs: FunctionSem, p: ParamSem, form: forms.ElementArray, py: str, v: str, q: str,
                       default: str | None, make: Callable[..., ParamPlan], py_names: dict[str, str]) -> ParamPlan:
        et, en = self._table_refs(p)
        tv, source, query = annotation_forms.ELEMENT_OF.plan(fs, p, py_names)
        note = annotation_forms.ELEMENT_OF.docstring(p, form, py, source, self._table_note(p))
        enc = f"_s.element_encoding({et}, {en}, {tv}, {q}, _fn, {source!r})"
        if p.direction == "in":
            nullable = "True" if p.nullable else "False"
            opt = " | None" if p.nullable else ""
            return make(py=py, hint=f"Sequence[{self._encodings_hint(p)}]{opt}", default=default,
                        pre=(f"{v} = _s.as_sequence({py}, {q}, _fn, {nullable})",),
                        late=query + (f"{v} = _s.element_array({v}, {enc}, {q}, _fn)",), note=note)
        stmts, n = self._length_expr(fs, p, py)
        count = f"_{self.py_params(fs)[p.count]}.value" if p.count else None
        upto = f"min({count}, {n})" if count else n
        return make(alloc=stmts + (f"_enc_{py} = {enc}", f"{v} = _s.element_out({n}, _enc_{py})"), arg=v,
                    out=f"_s.element_values({v}, _enc_{py}, {upto})", out_hint=f"list[{self._encodings_hint(p)}]",
                    out_name=py, note=note)

    def _field_note(self, f: FieldSem) -> str:
        form = f.form
        match form:
            case forms.HandleField():
                text = f"{f.name} a {self.handle_class[f.type.name]}"
            case forms.BufferField():
                text = f"{f.name} device memory"
            case forms.AddressField():
                text = f"{f.name} a host address"
            case _:
                assert_never(form)
        return text + (" or None" if f.nullable else "") + (f" (None: {f.null_means})" if f.null_means else "")

    def record_elem(self, name: str) -> str:
        rec = self.sem.records[name]
        r = self.spec.record(name)
        names = tuple(n for n, _ in flat_fields(r))
        fields = ", ".join(
            f'"{f.name}": ("{f.shape}", {self.handle_class[f.type.name] if isinstance(f.form, forms.HandleField) else "None"}, '
            f'{f.nullable})' for f in rec.fields.values())
        return f"_s.record_elem(_raw.{name}, {names!r}, {{{fields}}})"

    def _elem_hint(self, t: CType) -> str:
        if t.kind == "void":
            return "DeviceBuffer | None"
        if t.kind in ("struct", "union"):
            if t.name in self.sem.records:
                return f"{self.record_class[t.name]} | _raw.{t.name} | tuple[Any, ...]"
            return f"_raw.{t.name} | tuple[Any, ...]"
        return self.scalar_hint(t)

    def _scalar_in(self, t: CType, py: str, q: str, nullable: bool) -> tuple[str, ...]:
        guard = f"{py} is not None and " if nullable else ""
        k = t.kind
        if k == "int" and t.depth <= 1:
            lo, hi = int_range(t.name)
            return (f"if {guard}(type({py}) is not int or not {lo} <= {py} <= {hi}):",
                    f"    {py} = _s.as_int({py}, {lo}, {hi}, {q}, _fn)")
        if k == "float" and t.name == "float":  # refused where it would round to infinity
            return (f"if {guard}(type({py}) is not float or not {-FLT_MAX!r} <= {py} <= {FLT_MAX!r}):",
                    f"    {py} = _s.as_float32({py}, {q}, _fn)")
        if k == "float":
            return (f"if {guard}type({py}) is not float:", f"    {py} = _s.as_float({py}, {q}, _fn)")
        if k == "char" and t.depth == 0:
            return (f"if {guard}(type({py}) is not bytes or len({py}) != 1):", f"    {py} = _s.as_char({py}, {q}, _fn)")
        if k == "bool":
            return (f"if {guard}type({py}) is not bool:", f"    {py} = _s.as_bool({py}, {q}, _fn)")
        if k == "enum" and t.name in self.enum_class:
            cls = self.enum_class[t.name]
            return (f"if {guard}type({py}) is not {cls}:", f"    {py} = _s.as_enum({py}, {cls}, {q}, _fn)")
        if k == "handle":
            cls = self.handle_class[t.name]
            return (f"{py} = _s.as_handle({py}, {cls}, {q}, _fn, {nullable})",)
        return ()

    def _value_param(self, p: ParamSem, py: str, v: str, q: str, default: str | None, make: Callable[..., ParamPlan],
                     writes: bool = False) -> ParamPlan:
        t = p.type
        mk = make
        k = t.kind
        if k == "handle":
            cls = self.handle_class[t.name]
            nullable = "True" if p.nullable else "False"
            if writes:  # the handle a setter changes: its own class only (a shared descriptor is refused)
                pre = (f"{v}: ctypes.c_void_p | None = {py}._cp if type({py}) is {cls} else None",
                       f"if {v} is None:",
                       f"    {v} = _s.handle_arg({py}, {cls}, {q}, _fn, {nullable}, writes=True)")
            else:  # the class or a subclass the runtime shares (HandleBase._fast_types): one set lookup
                some = f"{py} is not None and " if p.nullable else ""  # (narrows the type for the checker)
                pre = (f"{v}: ctypes.c_void_p | None = {py}._cp if {some}type({py}) in _FAST_{cls} else None",
                       f"if {v} is None:",
                       f"    {v} = _s.handle_arg({py}, {cls}, {q}, _fn, {nullable})")
            return mk(py=py, hint=cls + (" | None" if p.nullable else ""), default=default, pre=pre)
        if k == "opaque":
            return mk(py=py, hint="Stream", default=default,
                      pre=(f"{v} = _s.as_stream({py}, {q}, _fn)",))
        if k == "callback":
            return mk(py=py, hint="Callable[..., Any] | None", default=default,
                      pre=(f"{v} = _s_callback({py}, _raw.{t.name}, {q}, _fn)",))
        if k in ("struct", "union"):
            return mk(py=py, hint=f"_raw.{t.name}", default=default, pre=(f"{v} = {py}",))
        return mk(py=py, hint=self.scalar_hint(t), default=default, arg=py,
                  pre=self._scalar_in(t, py, q, False))

    def _default(self, p: ParamSem) -> str | None:
        d = p.default
        if d is None:
            return None
        mapping = {"nullptr": "None", "NULL": "None", "false": "False", "true": "True"}
        if d in mapping:
            return mapping[d]
        try:
            return repr(int(d, 0))
        except ValueError:
            pass
        try:
            return repr(float(d.rstrip("fF")))
        except ValueError:
            return None

    def _length_expr(self, fs: FunctionSem, p: ParamSem, py: str) -> tuple[tuple[str, ...], str]:
        """Statements and the expression giving the element count of an output array/blob."""
        if p.length_call:
            callee = self.sem.functions[p.length_call.call]
            names = self.py_params(fs)
            mapped = p.length_call.args
            args = ", ".join(names[mapped.get(q.name, q.name)] for q in callee.params
                             if q.name != p.length_call.result and not q.hidden and q.direction != "out")
            var = f"_len_{self.fn_py[callee.name]}"
            return (f"{var} = {self.fn_py[callee.name]}({args})",), var
        assert p.length is not None
        lp = self.py_params(fs)[p.length]
        length_param = fs.param(p.length)
        if isinstance(length_param.form, forms.ByValue):  # checked here: it sizes an allocation before its check runs
            hi = int_range(length_param.type.name)[1] if length_param.type.kind == "int" else (1 << 63) - 1
            return (f"{lp} = _s.check_length({lp}, {chr(34)}{lp}{chr(34)}, _fn, {hi})",), lp
        return (), f"_{lp}.value"

    def _out_array(self, fs: FunctionSem, p: ParamSem, py: str, v: str, make: Callable[..., ParamPlan], owner_param: str | None,
                   creates: str | None) -> ParamPlan:
        t = p.type
        stmts, n = self._length_expr(fs, p, py)
        if t.kind == "void" and t.depth == 2:
            ct = "ctypes.c_void_p"
        elif t.kind in ("struct", "union"):
            ct = f"_raw.{t.name}"
        else:
            ct = self.api_ctype(t)
        count = f"_{self.py_params(fs)[p.count]}.value" if p.count else None
        upto = f"min({count}, {n})" if count else n
        owned = creates is not None and t.kind == "handle" and t.name == creates
        elem = self.convert_out(t, "_e", owned, owner_param)
        out = f"{v}[:{upto}]" if elem == "_e" else f"[{elem} for _e in {v}[:{upto}]]"
        hint = f"list[{self.out_hint(t.pointee())}]"
        return make(alloc=stmts + (f"{v} = ({ct} * {n})()",), out=out, out_hint=hint,
                    out_name=py)

    def _out_bytes(self, fs: FunctionSem, p: ParamSem, py: str, v: str, make: Callable[..., ParamPlan], text: bool) -> ParamPlan:
        stmts, n = self._length_expr(fs, p, py)
        out = f"{v}.value.decode('utf-8', 'replace')" if text else f"{v}.raw[:{n}]"
        return make(pre=stmts + (f"{v} = ctypes.create_string_buffer({n})",),
                    out=out, out_hint="str" if text else "bytes", out_name=py)

    # ------------------------------------------------------------------ other items
    def record(self, r: Record, name: str, py_name: str) -> RecordPlan:
        fields: list[tuple[str, str]] = []
        anonymous: list[str] = []
        nested: list[RecordPlan] = []
        flat: list[FieldPlan] = []
        for i, f in enumerate(r.fields):
            if f.record is not None:
                inner_name = f"{name}_anon{i}"
                inner = self.record(f.record, inner_name, inner_name)
                nested.append(inner)
                fields.append((f"_anon{i}", inner_name))
                anonymous.append(f"_anon{i}")
                flat.extend(inner.flat)
            else:
                assert f.type is not None and f.name is not None
                fields.append((f.name, ctype(f.type, self.spec)))
                t = f.type
                fsem = self.sem.records[name].fields.get(f.name) if name in self.sem.records else None
                form = None if fsem is None else fsem.form
                match form:
                    case forms.HandleField():  # a pointer to one handle: the handle
                        cls = self.handle_class[t.name]
                        flat.append(FieldPlan(f.name, ctype(t, self.spec), f"{cls} | None",
                                              f"{cls}._from_c(c.{f.name}[0], False) if c.{f.name} else None"))
                    case forms.BufferField():
                        flat.append(FieldPlan(f.name, ctype(t, self.spec), "DeviceBuffer | None", f"c.{f.name}"))
                    case forms.AddressField() | None:  # by its C type
                        if t.depth == 0 and t.kind in ("int", "float", "bool", "enum"):
                            flat.append(FieldPlan(f.name, ctype(t, self.spec), self.out_hint(t),
                                                  self.convert_out(t, f"c.{f.name}", False, None)))
                        else:
                            flat.append(FieldPlan(f.name, ctype(t, self.spec), "int | None", f"c.{f.name}"))
                    case _:
                        assert_never(form)
        return RecordPlan(c_name=name, py_name=py_name, kind=r.kind, fields=tuple(fields), anonymous=tuple(anonymous),
                          nested=tuple(nested), flat=tuple(flat), size=r.size, align=r.align)



def plan(spec: Spec, sem: Semantics, target: Target, banner_info: str, added_in: dict[str, str] | None = None) -> Plan:
    """The plans of one release from its spec and its resolved semantics (`resolve.resolve`)."""
    check_target(spec, target)
    pl = _Planner(spec, sem, target, added_in or {})
    enums = tuple(
        EnumPlan(e.name, pl.enum_class[e.name], INT_CTYPES.get(e.underlying, "ctypes.c_uint"),
                 tuple((c.name, c.value) for c in e.constants))
        for e in spec.enums
    )
    records = tuple(replace(pl.record(r, r.name or "", pl.record_class[r.name]),
                            alias=r.typedef if r.typedef and r.typedef != r.name else None)
                    for r in spec.records if r.name)
    handles = tuple(
        HandlePlan(h.name, pl.handle_class[h.name], sem.handles[h.name].create, sem.handles[h.name].destroy,
                   pl.handle_class.get(sem.handles[h.name].owner or "", None))
        for h in spec.handles
    )
    callbacks = tuple(
        CallbackPlan(c.name, naming.class_name(c.name, target.function_prefix),
                     "ctypes.c_void_p" if c.returns.kind == "void" and c.returns.depth == 1 else ctype(c.returns, spec),
                     tuple(ctype(p.type, spec) for p in c.params))
        for c in spec.callbacks
    )
    functions = tuple(pl.function(sem.functions[f.name]) for f in spec.functions)
    status_enum = target.status_type
    tables = tuple(TablePlan(t.name, "{" + ", ".join(f"{k}: {v!r}" for k, v in t.types.items()) + "}",
                             "{" + ", ".join(f"{k}: {v!r}" for k, v in t.names.items()) + "}")
                   for t in sem.tables.values())
    queries = []
    for hname, q in sem.queries.items():
        callee = sem.functions[q.call]
        args = ", ".join("desc" if isinstance(p.form, forms.ByValue) and p.type.kind == "handle" and p.type.name == hname
                         else "_byref(_t)" if p.name == q.result else "None" for p in callee.params)
        result = callee.param(q.result).type.pointee()
        queries.append(QueryPlan(helper=f"_element_type_{hname}", handle=hname, call=q.call,
                                 result_ctype=pl.api_ctype(result), args=args,
                                 arg_names="{" + ", ".join(f'"{pl.py_params(callee)[p.name]}": '
                                                           + ("desc" if isinstance(p.form, forms.ByValue) else "None")
                                                           for p in callee.params if p.name != q.result) + "}"))
    extents = []
    for hname, x in sem.extents.items():
        callee = sem.functions[x.call]
        names = pl.py_params(callee)
        extents.append(ExtentPlan(helper=f"_extent_{hname}", handle=hname, call=x.call, call_py=pl.fn_py[x.call],
                                  type_field=names[x.type], dims_field=names[x.dims], strides_field=names[x.strides],
                                  table=x.table))
    return Plan(
        spec=spec, target=target, banner_info=banner_info, enums=enums, records=records, handles=handles,
        callbacks=callbacks, opaque_typedefs=tuple(t.name for t in spec.typedefs), functions=functions,
        status_enum=status_enum, status_class=pl.enum_class[status_enum], tables=tables, queries=tuple(queries),
        extents=tuple(extents),
    )

"""The stub library every runtime test loads: C++ source of a library that implements each function of
a spec by writing known values (codegen/semantics/stubvalues.py), and a header declaring the spec as C."""

from __future__ import annotations

from pathlib import Path
from typing import Any, assert_never


from ..semantics import annotation_forms, forms
from ..semantics.resolved import FunctionSem, ParamSem, Semantics
from ..spec.ctypes_map import INT_BITS
from ..render.jinja_env import cpp_environment
from ..spec.model import CType, Param, Record, Spec, flat_fields, flat_fields_grouped
from ..semantics.stubvalues import (UNSIZED_LENGTH, fixed_outputs, last_enum, length_sources, out_element, out_handle, out_int, out_ptr,
                         wide)


class _Stub:
    def __init__(self, spec: Spec, sem: Semantics, status_type: str, version_getter: str | None = None) -> None:
        self.spec = spec
        self.sem = sem
        self.status_type = status_type
        self.length_sources = length_sources(sem)
        # (function, out parameter) -> the value it writes unless scripted: the version function reports
        # the spec's release, so the bindings select that release for a stub
        self.fixed = fixed_outputs(spec, version_getter)
        # (query function, its result parameter) -> the handle type whose element type it reads
        self.query_of = {(q.call, q.result): h for h, q in sem.queries.items()}

    def enc_expr(self, fs: FunctionSem, p: ParamSem) -> str:
        assert p.element_table is not None
        return f"enc_{p.element_table}({annotation_forms.ELEMENT_OF.stub(fs, p, self.sem, self.spec)})"

    def fmt(self, t: CType, expr: str) -> str:
        """C++ expression formatting one value of base type `t` (depth ignored)."""
        k = t.kind
        if k == "int":
            return f"unum(static_cast<unsigned long long>({expr}))" if not INT_BITS[t.name][1] else \
                f"num(static_cast<long long>({expr}))"
        if k == "enum":
            return f"unum(static_cast<unsigned long long>({expr}))"
        if k == "bool":
            return f"num(({expr}) ? 1 : 0)"
        if k == "float":
            return f"flt(static_cast<double>({expr}))"
        if k == "char":
            return f"num(static_cast<long long>({expr}))"
        if k in ("struct", "union"):
            rec = self.spec.record(t.name)
            fsem = self.sem.records[t.name].fields if t.name in self.sem.records else {}
            parts = []
            for fn, ft in flat_fields(rec):
                form = fsem[fn].form if fn in fsem else None
                match form:
                    case forms.HandleField():  # a pointer to a handle variable: the handle
                        parts.append(f"(({expr}).{fn} ? ptr(reinterpret_cast<const void*>(*({expr}).{fn})) "
                                     f": std::string(\"null\"))")
                    case None if ft.depth == 0:
                        parts.append(self.fmt(ft, f"({expr}).{fn}"))
                    case forms.BufferField() | forms.AddressField() | None:  # the address
                        parts.append(f"ptr(reinterpret_cast<const void*>(({expr}).{fn}))")
                    case _:
                        assert_never(form)
            return '"(" + ' + ' + ";" + '.join(parts) + ' + ")"'
        return f"ptr(reinterpret_cast<const void*>({expr}))"

    def known(self, t: CType, i: int, k: str = "0", m: int = 0, small: bool = False) -> str:
        """C++ expression of the known value for an element of base type `t`."""
        kind = t.kind
        if kind == "int":
            if small or k != "0":
                return f"static_cast<{t.name}>({2 + i + m} + {k})"
            v = wide(t.name, 2 + i + m)
            return f"static_cast<{t.name}>({v}{'LL' if INT_BITS[t.name][1] else 'ULL'})"
        if kind == "float":
            return f"static_cast<{t.name}>({0.25 + i + m} + {k})"
        if kind == "bool":
            return "true"
        if kind == "enum":
            return f"static_cast<{t.name}>({last_enum(self.spec, t.name)}u)"
        if kind == "char":
            return f"static_cast<char>({2 + i} + {k})"
        if kind in ("handle", "opaque", "callback"):
            return f"reinterpret_cast<{t.name}>(static_cast<uintptr_t>({out_handle(i)} + 8 * ({k})))"
        return f"reinterpret_cast<void*>(static_cast<uintptr_t>({out_ptr(i)} + 8 * ({k})))"

    def _ctype_name(self, t: CType) -> str:
        if t.kind in ("handle", "opaque", "int", "float", "enum", "bool", "callback"):
            return "bool" if t.kind == "bool" else t.name
        if t.kind == "char":
            return "char"
        return "void*"

    def fill(self, t: CType, target: str, i: int, k: str, key: str, small: bool = False) -> list[str]:
        """Statements writing element k's value into `target`: the known value, or the one a test
        scripted for `key` (a C++ string expression: "fn/param", "fn/param[k]", "fn/param[k].field")."""
        if t.kind in ("struct", "union"):
            lines = []
            seen: set[str] = set()
            for m, (fname, ft, group) in enumerate(flat_fields_grouped(self.spec.record(t.name))):
                if group is not None:  # only the first member of an anonymous union is written
                    if group in seen:
                        continue
                    seen.add(group)
                if ft.depth == 0 and ft.kind in ("int", "float", "bool", "enum"):
                    lines.append(f"{target}.{fname} = PICK({self._ctype_name(ft)}, {key} + \".{fname}\", "
                                 f"{self.known(ft, i, k, m)});")
            return lines
        base = CType(kind="void", name="void") if t.kind == "void" else CType(kind=t.kind, name=t.name)
        value = self.known(base, i, k, small=small)
        return [f"{target} = PICK({self._ctype_name(base)}, {key}, {value});"]

    def length_expr(self, fs: FunctionSem, p: ParamSem) -> str:
        if p.unsized:
            return str(UNSIZED_LENGTH)
        if p.length_call:
            callee = self.sem.functions[p.length_call.call]
            j = callee.param(p.length_call.result).index
            # what the sizing call wrote: its known value, or the value a test scripted for it
            return (f"PICK(long long, std::string(\"{callee.name}/{p.length_call.result}\"), {out_int(j)})")
        assert p.length is not None
        lp = fs.param(p.length)
        return f"static_cast<long long>({p.length})" if isinstance(lp.form, forms.ByValue) else f"static_cast<long long>(*{p.length})"

    def function(self, fs: FunctionSem) -> dict[str, Any]:
        f = self.spec.function(fs.name)
        status = f.returns.kind == "enum" and f.returns.name == self.status_type and f.returns.depth == 0
        body: list[str] = []
        writes: list[str] = []
        counts: dict[str, str] = {}
        for p in fs.params:
            if p.count and p.count not in counts:  # one count may serve several arrays
                counts[p.count] = self.length_expr(fs, p)
                writes.append(f"long long cnt_{p.count} = PICK(long long, std::string(\"{fs.name}/{p.count}\"), "
                              f"std::min<long long>({counts[p.count]}, 2));")
        opaque = next((p.name for p in fs.params if isinstance(p.form, forms.Opaque)), None)
        for p in fs.params:
            t, n = p.type, p.name
            tag = f'"\\t{n}="'
            form = p.form
            match form:
                case forms.Value() | forms.Length():
                    body.append(f"s += {tag}; s += {self.fmt(t, n)};")
                case _ if p.name in counts:  # a count output
                    writes.append(f"if({n}) *{n} = static_cast<{t.name if t.kind == 'int' else 'int'}>(cnt_{n});")
                case forms.Callback():
                    body.append(f"s += {tag}; s += ptr(reinterpret_cast<const void*>({n}));")
                    cb = next(c for c in self.spec.callbacks if c.name == t.name)
                    args = []
                    voids = 0
                    for a in cb.params:
                        spelt = a.type.spelling()
                        if a.type.depth > 0:
                            first = f"static_cast<{spelt}>({opaque})" if opaque else "nullptr"
                            untyped = a.type.kind == "void" and a.type.depth == 1  # never dereferenced by ctypes
                            args.append(first if voids == 0 else
                                        f"reinterpret_cast<{spelt}>(static_cast<uintptr_t>({0x3000 + voids}))" if untyped
                                        else "nullptr")
                            voids += 1
                        else:
                            args.append(f"static_cast<{spelt}>(64)" if a.type.kind != "enum" else f"static_cast<{spelt}>(0)")
                    call = f"{n}({', '.join(args)})"
                    if cb.returns.kind == "void" and cb.returns.depth == 0:
                        writes.append(f"if({n}) {{ {call}; s += \"\\t{n}.called=1\"; }}")
                    else:
                        writes.append(f"if({n}) {{ s += \"\\t{n}.ret=\" + {self.fmt(cb.returns, call)}; }}")
                case forms.Buffer() | forms.Opaque():
                    body.append(f"s += {tag}; s += ptr({n});")
                case forms.ElementScalar(out=True):  # written in the type another output gives
                    key = f'std::string("{fs.name}/{n}")'
                    writes.append(f"if({n}) stub_encode({self.enc_expr(fs, p)}, {n}, "
                                  f"PICK(double, {key}, {out_element(p.index)}));")
                case forms.ElementScalar():  # decoded as MIOpen reads it: in the type another argument gives
                    body.append(f"s += {tag}; s += ({n} ? stub_decode({self.enc_expr(fs, p)}, {n}) "
                                f": std::string(\"null\"));")
                case forms.HostScalar():
                    body.append(annotation_forms.SCALAR.stub(p, n, tag))
                case forms.ElementArray(out=out):  # elements of a type another argument gives
                    length = self.length_expr(fs, p)
                    enc = self.enc_expr(fs, p)
                    if not out:
                        body.append(f"s += {tag}; s += \"[\";")
                        body.append(f"{{ const char* e = {enc}; for(long long k = 0; {n} && e && k < {length}; ++k) "
                                    f"{{ if(k) s += \",\"; s += stub_decode(e, static_cast<const char*>({n}) "
                                    f"+ k * stub_size(e)); }} }}")
                        body.append('s += "]";')
                    else:
                        upto = f"std::min<long long>({length}, cnt_{p.count})" if p.count else length
                        key = f"(std::string(\"{fs.name}/{n}[\") + std::to_string(k) + \"]\")"
                        writes.append(f"{{ const char* e = {enc}; for(long long k = 0; {n} && e && k < {upto}; ++k) "
                                      f"stub_encode(e, static_cast<char*>({n}) + k * stub_size(e), "
                                      f"PICK(double, {key}, {out_element(p.index)} + k)); }}")
                case forms.InString():
                    body.append(f"s += {tag}; s += std::string({n} ? {n} : \"(null)\");")
                case forms.InBlob():
                    body.append(f"s += {tag}; s += hex({n}, {self.length_expr(fs, p)});")
                case forms.InArray() | forms.OutArray(reads=True):
                    elem = t.pointee()
                    length = self.length_expr(fs, p)
                    length = annotation_forms.PER.stub(p, length)
                    body.append(f"s += {tag}; s += \"[\";")
                    body.append(f"for(long long k = 0; {n} && k < {length}; ++k) "
                                f"{{ if(k) s += \",\"; s += {self.fmt(elem, f'{n}[k]')}; }}")
                    body.append('s += "]";')
                case forms.OutString():
                    length = self.length_expr(fs, p)
                    writes.append(f"if({n} && {length} > 0) std::snprintf({n}, {length}, \"stub\");")
                case forms.OutBlob():
                    length = self.length_expr(fs, p)
                    writes.append(f"for(long long k = 0; {n} && k < {length}; ++k) "
                                  f"{n}[k] = static_cast<char>(({p.index} + k) & 255);")
                case forms.OutArray():
                    length = self.length_expr(fs, p)
                    upto = f"std::min<long long>({length}, cnt_{p.count})" if p.count else length
                    elem = t.pointee()
                    key = f"(std::string(\"{fs.name}/{n}[\") + std::to_string(k) + \"]\")"
                    fill = " ".join(self.fill(elem, f"{n}[k]", p.index, "k", key))
                    writes.append(f"for(long long k = 0; {n} && k < {upto}; ++k) {{ {fill} }}")
                case forms.InScalar() | forms.InOutScalar() | forms.OutScalar() | forms.Count():  # by pointer
                    elem = t.pointee()
                    if p.direction in ("in", "inout"):
                        body.append(f"s += {tag}; s += ({n} ? {self.fmt(elem, f'*{n}')} : std::string(\"null\"));")
                    if (fs.name, n) in self.fixed:
                        value = self.fixed[fs.name, n]
                        writes.append(f"if({n}) *{n} = PICK({elem.name}, std::string(\"{fs.name}/{n}\"), {value});")
                    elif (fs.name, n) in self.query_of:  # an element-type query: the type last set on the descriptor
                        h = self.query_of[fs.name, n]
                        hp = next(q.name for q in fs.params if isinstance(q.form, forms.ByValue) and q.type.kind == "handle"
                                  and q.type.name == h)
                        known = last_enum(self.spec, elem.name)
                        writes.append(f"if({n}) *{n} = static_cast<{elem.name}>(PICK(long long, "
                                      f"std::string(\"{fs.name}/{n}\"), stub_type(reinterpret_cast<const void*>({hp}), "
                                      f"{known})));")
                    elif (held := annotation_forms.HOLDS.stub(fs, p, self.known(CType(kind="void", name="void"), p.index))) is not None:
                        writes.append(held)  # the address of a pointer the stub keeps
                    elif p.direction in ("out", "inout"):
                        fill = " ".join(self.fill(elem, f"(*{n})", p.index, "0", f"std::string(\"{fs.name}/{n}\")",
                                                  small=(fs.name, n) in self.length_sources))
                        writes.append(f"if({n}) {{ {fill} }}")
                case _:
                    assert_never(form)
        writes += self.remember(fs)
        params = ", ".join(_param_decl(p) for p in f.params)
        ret = self.status_type if status else _c_spelling(f.returns)
        fallback = '"stub"' if f.returns.kind == "char" else "" if f.returns == CType(kind="void", name="void") else "{}"
        return {"name": f.name, "params": params, "returns": ret if not status else f.returns.name,
                "log": body, "writes": writes, "status": status, "fallback": fallback}


    def remember(self, fs: FunctionSem) -> list[str]:
        """A setter of a queried descriptor's element type (one descriptor of that type by value, and an enum
        argument named like the query's result): the stub keeps the type for the query and the decoders."""
        lines = []
        for h, q in self.sem.queries.items():
            result = self.sem.functions[q.call].param(q.result)
            mine = [p for p in fs.params if isinstance(p.form, forms.ByValue) and p.type.kind == "handle"
                    and p.type.name == h]
            enums = [p for p in fs.params if isinstance(p.form, forms.ByValue) and p.type.kind == "enum"
                     and p.type.name == result.type.pointee().name and p.name == q.result]
            if len(mine) == 1 and len(enums) == 1:
                lines.append(f"stub_remember(reinterpret_cast<const void*>({mine[0].name}), "
                             f"static_cast<long long>({enums[0].name}));")
        return lines

    def tables(self) -> list[dict[str, Any]]:
        return [{"name": t.name, "types": list(t.types.items())} for t in self.sem.tables.values()]


def _param_decl(p: Param) -> str:
    """`type name` as C++ accepts it (`int x[]` parameters are spelt as the pointers they are)."""
    return f"{p.type.spelling() if '[' in p.c else p.c} {p.name}"


def _c_spelling(t: CType) -> str:
    return t.spelling()


def _record_text(r: Record, name: str, indent: str = "") -> str:
    lines = [f"{indent}{r.kind}" + (f" {name}" if name else ""), f"{indent}{{"]
    for f in r.fields:
        if f.record is not None:
            lines.append(_record_text(f.record, "", indent + "    ") + ";")
        elif f.type is not None and f.name is not None:
            lines.append(f"{indent}    {_c_spelling(f.type)} {f.name};")
    lines.append(f"{indent}}}")
    return "\n".join(lines)


def header_source(spec: Spec, banner: str) -> str:
    """C++ declarations of the spec's API (ABI-equivalent to the real header, so without the functions only the
    library declares; no prose)."""
    typedefs = [{"name": t.name, "target": _c_spelling(t.type)} for t in spec.typedefs]
    declared = {t.name for t in spec.typedefs} | {h.name for h in spec.handles}
    used = [t.type for t in spec.typedefs] + [p.type for f in spec.functions for p in f.params]
    opaque = sorted({t.name for t in used if t.kind == "opaque" and t.name not in declared})
    handles = [{"name": h.name, "tag": h.tag} for h in spec.handles]
    enums = [{"name": e.name, "underlying": e.underlying, "constants": [(c.name, c.value) for c in e.constants]}
             for e in spec.enums]
    callbacks = [{"name": c.name, "returns": _c_spelling(c.returns),
                  "params": ", ".join(_c_spelling(p.type) for p in c.params)} for c in spec.callbacks]
    records = []
    for r in spec.records:
        if r.tag and not r.typedef:
            records.append({"text": _record_text(r, r.tag) + ";"})
        else:
            records.append({"text": "typedef " + _record_text(r, r.tag or "") + f" {r.typedef or r.name};"})
    functions = [{"name": f.name, "returns": _c_spelling(f.returns),
                  "params": ", ".join(_param_decl(p) for p in f.params)} for f in spec.functions if not f.undeclared]
    return cpp_environment().get_template("header.h.j2").render(banner=banner, opaque=opaque, typedefs=typedefs, handles=handles,
                                                      enums=enums,
                                                      callbacks=callbacks, records=records, functions=functions)


def stub_source(spec: Spec, sem: Semantics, header: Path, banner: str, status_type: str,
                version_getter: str | None = None) -> str:
    """A stub library logging every call; with `version_getter`, it reports the spec's release."""
    stub = _Stub(spec, sem, status_type, version_getter)
    fns = [stub.function(sem.functions[f.name]) for f in spec.functions]
    return cpp_environment().get_template("stub.cpp.j2").render(banner=banner, header=str(header), functions=fns,
                                                     tables=stub.tables())

"""ABI proof: a gcc-compiled layout probe and a stub library generated from a spec, and a driver
that pushes every typed wrapper through the stub and checks the values both ways.

Known values written by the stubs (parameter index i, element k, struct field m):
ints 2+i(+k+m), floats 0.25+i(+k+m), bools true, enums the enum's last constant, handles
0x10000+0x100*i(+8k), pointers 0x20000+0x100*i(+8k), blobs bytes (i+k)&255, strings "stub";
an output count is min(length, 2).
"""

from __future__ import annotations

import ctypes
import json
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import jinja2

from . import escape
from .annotate import FunctionSem, ParamSem, Semantics
from .ctypes_map import INT_BITS, int_range
from .errors import CodegenError
from .model import CType, Param, Record, Spec
from .render import TEMPLATES
from .target import Target

# --------------------------------------------------------------------------- known values


def out_int(i: int, k: int = 0, m: int = 0) -> int:
    return 2 + i + k + m


def wide(type_name: str, small: int) -> int:
    """A value that uses the whole width (and sign) of an integer type, so width/sign mix-ups show."""
    bits, signed = INT_BITS[type_name]
    if bits == 8:
        return small
    offset = {16: 1000, 32: 70000, 64: 1 << 40}[bits]
    if signed:
        return -(offset + small)
    return (1 << (bits - 1)) + small


def out_float(i: int, k: int = 0, m: int = 0) -> float:
    return 0.25 + i + k + m


def out_handle(i: int, k: int = 0) -> int:
    return 0x10000 + 0x100 * i + 8 * k


def out_ptr(i: int, k: int = 0) -> int:
    return 0x20000 + 0x100 * i + 8 * k


def count_of(n: int) -> int:
    return min(n, 2)


#: elements the driver passes in (and the stub logs of) an input array MIOpen sizes itself
UNSIZED_LENGTH = 3


def out_element(i: int, k: int = 0) -> int:
    """The value a stub writes into element k of an output whose type another argument chooses (it fits
    every numeric encoding exactly: half, bfloat16, int8 ...)."""
    return 2 + i + k


def chosen_type(sem: Semantics, table: str) -> tuple[int, str]:
    """The type constant (value, encoding) the call-through driver picks for a run-time typed value:
    float16 where the table has it (it exercises packing), else float32, else the first numeric one."""
    types = sem.tables[table].types
    for want in ("float16", "float32", "int32", "int64", "int8"):
        for value, enc in types.items():
            if enc == want:
                return value, enc
    value, enc = next(iter(types.items()))
    return value, enc


# --------------------------------------------------------------------------- C++ sources


def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    escape.install(env)  # c_include, c_str_text, comment_block for the C++ templates
    return env


def _flat_fields(r: Record, spec: Spec) -> list[tuple[str, CType]]:
    return [(n, t) for n, t, _ in _flat_fields_u(r)]


def _flat_fields_u(r: Record, group: str | None = None) -> list[tuple[str, CType, str | None]]:
    """Fields with anonymous members flattened; members of one anonymous union share a group name."""
    out: list[tuple[str, CType, str | None]] = []
    for i, f in enumerate(r.fields):
        if f.record is not None:
            inner = f"{group or ''}u{i}" if f.record.kind == "union" else group
            out += _flat_fields_u(f.record, inner)
        elif f.name is not None and f.type is not None:
            out.append((f.name, f.type, group))
    return out


def probe_source(spec: Spec, header: Path, banner: str) -> str:
    records = [{"name": r.name, "fields": [n for n, _ in _flat_fields(r, spec)]} for r in spec.records if r.name]
    enums = [{"name": e.name, "constants": [c.name for c in e.constants]} for e in spec.enums]
    return _env().get_template("probe.cpp.j2").render(banner=banner, header=str(header), records=records, enums=enums)


def _last_enum(spec: Spec, name: str) -> int:
    return spec.enum(name).constants[-1].value


def fixed_outputs(spec: Spec, version_getter: str | None) -> dict[tuple[str, str], int]:
    """(function, out parameter) -> the value a stub writes unless a test scripts another: the version
    function reports the spec's release, so the bindings select that release for the stub."""
    if not version_getter or not any(f.name == version_getter for f in spec.functions):
        return {}
    outs = [p.name or f"arg{i}" for i, p in enumerate(spec.function(version_getter).params)]
    parts = [int(x) for x in spec.miopen_version.split(".")]
    return {(version_getter, n): v for n, v in zip(outs, parts)}


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

    def type_expr(self, fs: FunctionSem, p: ParamSem) -> str:
        """C++ expression of the type enum value choosing p's element type, as the wrapper saw it."""
        assert p.element_of is not None
        src = fs.param(p.element_of)
        if src.shape == "value" and src.type.kind == "handle":
            q = self.sem.queries[src.type.name]
            callee = self.sem.functions[q.call]
            result = callee.param(q.result)
            known = _last_enum(self.spec, result.type.name)
            return (f"PICK(long long, std::string(\"{q.call}/{q.result}\"), "
                    f"stub_type(reinterpret_cast<const void*>({src.name}), {known}))")
        if src.shape == "value":
            return f"static_cast<long long>({src.name})"
        return f"static_cast<long long>(*{src.name})"

    def enc_expr(self, fs: FunctionSem, p: ParamSem) -> str:
        assert p.element_table is not None
        return f"enc_{p.element_table}({self.type_expr(fs, p)})"

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
            for fn, ft in _flat_fields(rec, self.spec):
                if fn in fsem and fsem[fn].shape == "scalar":  # a pointer to a handle variable: the handle
                    parts.append(f"(({expr}).{fn} ? ptr(reinterpret_cast<const void*>(*({expr}).{fn})) "
                                 f": std::string(\"null\"))")
                elif ft.depth == 0:
                    parts.append(self.fmt(ft, f"({expr}).{fn}"))
                else:
                    parts.append(f"ptr(reinterpret_cast<const void*>(({expr}).{fn}))")
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
            return f"static_cast<{t.name}>({_last_enum(self.spec, t.name)}u)"
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
            for m, (fname, ft, group) in enumerate(_flat_fields_u(self.spec.record(t.name))):
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
        return f"static_cast<long long>({p.length})" if lp.shape == "value" else f"static_cast<long long>(*{p.length})"

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
        opaque = next((p.name for p in fs.params if p.shape == "opaque"), None)
        for p in fs.params:
            t, n = p.type, p.name
            tag = f'"\\t{n}="'
            if p.shape == "value":
                body.append(f"s += {tag}; s += {self.fmt(t, n)};")
                continue
            if p.name in counts:  # a count output
                writes.append(f"if({n}) *{n} = static_cast<{t.name if t.kind == 'int' else 'int'}>(cnt_{n});")
                continue
            if p.shape == "callback":
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
                continue
            if p.shape in ("buffer", "opaque"):
                body.append(f"s += {tag}; s += ptr({n});")
                continue
            if p.shape == "scalar" and t.kind == "void" and t.depth == 1 and p.memory == "host":
                if p.scalar_type == "element" and p.direction == "out":  # written in the type another output gives
                    key = f'std::string("{fs.name}/{n}")'
                    writes.append(f"if({n}) stub_encode({self.enc_expr(fs, p)}, {n}, "
                                  f"PICK(double, {key}, {out_element(p.index)}));")
                elif p.scalar_type == "element":  # decoded as MIOpen reads it: in the type another argument gives
                    body.append(f"s += {tag}; s += ({n} ? stub_decode({self.enc_expr(fs, p)}, {n}) "
                                f": std::string(\"null\"));")
                else:
                    ctype_ = "double" if p.scalar_type == "double" else "float"
                    body.append(f"s += {tag}; s += ({n} ? flt(*static_cast<const {ctype_}*>({n})) "
                                f": std::string(\"null\"));")
                continue
            if p.shape == "array" and p.element_of is not None:  # elements of a type another argument gives
                length = self.length_expr(fs, p)
                enc = self.enc_expr(fs, p)
                if p.direction == "in":
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
                continue
            if p.shape == "string" and p.direction == "in":
                body.append(f"s += {tag}; s += std::string({n} ? {n} : \"(null)\");")
                continue
            if p.shape == "blob" and p.direction == "in":
                body.append(f"s += {tag}; s += hex({n}, {self.length_expr(fs, p)});")
                continue
            if p.shape == "array" and p.direction in ("in", "inout"):
                elem = t.pointee()
                length = self.length_expr(fs, p)
                if p.length_factor != 1:
                    length = f"({length}) * {p.length_factor}"
                body.append(f"s += {tag}; s += \"[\";")
                body.append(f"for(long long k = 0; {n} && k < {length}; ++k) "
                            f"{{ if(k) s += \",\"; s += {self.fmt(elem, f'{n}[k]')}; }}")
                body.append('s += "]";')
                continue
            if p.shape in ("array", "blob", "string"):  # outputs
                length = self.length_expr(fs, p)
                if p.shape == "string":
                    writes.append(f"if({n} && {length} > 0) std::snprintf({n}, {length}, \"stub\");")
                elif p.shape == "blob":
                    writes.append(f"for(long long k = 0; {n} && k < {length}; ++k) "
                                  f"{n}[k] = static_cast<char>(({p.index} + k) & 255);")
                else:
                    upto = f"std::min<long long>({length}, cnt_{p.count})" if p.count else length
                    elem = t.pointee()
                    key = f"(std::string(\"{fs.name}/{n}[\") + std::to_string(k) + \"]\")"
                    fill = " ".join(self.fill(elem, f"{n}[k]", p.index, "k", key))
                    writes.append(f"for(long long k = 0; {n} && k < {upto}; ++k) {{ {fill} }}")
                continue
            # scalar by pointer
            elem = t.pointee()
            if p.direction in ("in", "inout"):
                body.append(f"s += {tag}; s += ({n} ? {self.fmt(elem, f'*{n}')} : std::string(\"null\"));")
            if (fs.name, n) in self.fixed:
                value = self.fixed[fs.name, n]
                writes.append(f"if({n}) *{n} = PICK({elem.name}, std::string(\"{fs.name}/{n}\"), {value});")
            elif (fs.name, n) in self.query_of:  # an element-type query: the type last set on the descriptor
                h = self.query_of[fs.name, n]
                hp = next(q.name for q in fs.params if q.shape == "value" and q.type.kind == "handle"
                          and q.type.name == h)
                known = _last_enum(self.spec, elem.name)
                writes.append(f"if({n}) *{n} = static_cast<{elem.name}>(PICK(long long, "
                              f"std::string(\"{fs.name}/{n}\"), stub_type(reinterpret_cast<const void*>({hp}), "
                              f"{known})));")
            elif p.holds == "address_of_device_pointer":  # the address of a pointer the stub keeps
                key = f'std::string("{fs.name}/{n}")'
                writes.append(f"static void* slot_{n} = nullptr; if({n}) {{ slot_{n} = PICK(void*, {key}, "
                              f"{self.known(CType(kind='void', name='void'), p.index)}); *{n} = &slot_{n}; }}")
            elif p.direction in ("out", "inout"):
                fill = " ".join(self.fill(elem, f"(*{n})", p.index, "0", f"std::string(\"{fs.name}/{n}\")",
                                          small=(fs.name, n) in self.length_sources))
                writes.append(f"if({n}) {{ {fill} }}")
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
            mine = [p for p in fs.params if p.shape == "value" and p.type.kind == "handle" and p.type.name == h]
            enums = [p for p in fs.params if p.shape == "value" and p.type.kind == "enum"
                     and p.type.name == result.type.pointee().name and p.name == q.result]
            if len(mine) == 1 and len(enums) == 1:
                lines.append(f"stub_remember(reinterpret_cast<const void*>({mine[0].name}), "
                             f"static_cast<long long>({enums[0].name}));")
        return lines

    def tables(self) -> list[dict[str, Any]]:
        return [{"name": t.name, "types": list(t.types.items())} for t in self.sem.tables.values()]


def length_sources(sem: Semantics) -> set[tuple[str, str]]:
    """(function, parameter) pairs whose output sizes another call's array: kept small by the stub."""
    return {(p.length_call.call, p.length_call.result)
            for fs in sem.functions.values() for p in fs.params if p.length_call}


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
    """C++ declarations of the spec's API (ABI-equivalent to the real header; no prose)."""
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
                  "params": ", ".join(_param_decl(p) for p in f.params)} for f in spec.functions]
    return _env().get_template("header.h.j2").render(banner=banner, opaque=opaque, typedefs=typedefs, handles=handles,
                                                      enums=enums,
                                                      callbacks=callbacks, records=records, functions=functions)


def stub_source(spec: Spec, sem: Semantics, header: Path, banner: str, status_type: str,
                version_getter: str | None = None) -> str:
    """A stub library logging every call; with `version_getter`, it reports the spec's release."""
    stub = _Stub(spec, sem, status_type, version_getter)
    fns = [stub.function(sem.functions[f.name]) for f in spec.functions]
    return _env().get_template("stub.cpp.j2").render(banner=banner, header=str(header), functions=fns,
                                                     tables=stub.tables())


def compile_cpp(source: str, out: Path, target: Target, shared: bool, includes: tuple[Path, ...] = (),
                beta: bool = True) -> Path:
    """g++ the source (against the header and the target's shims); raises with the compiler's output."""
    src = out.with_suffix(".cpp")
    src.write_text(source, encoding="utf-8")
    cmd = ["g++", "-std=c++17", "-O0", "-w", "-o", str(out), str(src)]
    cmd += ["-shared", "-fPIC"] if shared else []
    for inc in includes:
        cmd += ["-I", str(inc)]
    cmd += ["-idirafter", str(target.shim_dir)]
    cmd += [f"-D{d}" for d in target.default_defines]
    if beta:
        cmd += [f"-D{target.beta_macro}"]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise CodegenError(f"g++ failed for {src}:\n{res.stderr[-4000:]}")
    return out


# --------------------------------------------------------------------------- layout check


def check_layout(probe: Path, raw: ModuleType, spec: Spec) -> list[str]:
    """Differences between the compiler's layout/values (probe output) and the ctypes layer."""
    out = subprocess.run([str(probe)], capture_output=True, text=True, check=True).stdout
    problems: list[str] = []
    checked = 0
    for line in out.splitlines():
        rec = json.loads(line)
        checked += 1
        if "enum" in rec:
            cls = getattr(raw, rec["enum"])
            value = cls[rec["constant"]].value
            if value != rec["value"]:
                problems.append(f"{rec['enum']}.{rec['constant']}: C {rec['value']} vs ctypes {value}")
        elif "field" in rec:
            cls = getattr(raw, rec["record"])
            off = getattr(cls, rec["field"]).offset
            if off != rec["offset"]:
                problems.append(f"{rec['record']}.{rec['field']}: offset C {rec['offset']} vs ctypes {off}")
        else:
            cls = getattr(raw, rec["record"])
            if (ctypes.sizeof(cls), ctypes.alignment(cls)) != (rec["size"], rec["align"]):
                problems.append(f"{rec['record']}: size/align C {rec['size']}/{rec['align']} vs ctypes "
                                f"{ctypes.sizeof(cls)}/{ctypes.alignment(cls)}")
    if checked == 0:
        problems.append("the probe printed nothing")
    return problems


# --------------------------------------------------------------------------- call-through driver


@dataclass
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
        from . import naming

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
            if p.shape in ("array",) and p.direction in ("in", "inout") and p.length:
                lengths[p.length] = 3
        # values whose type another argument chooses: the driver picks the type (and scripts a query for it)
        types: dict[str, tuple[int, str]] = {}  # parameter -> (type constant, encoding)
        enum_choice: dict[str, int] = {}  # an enum argument choosing a type -> the constant passed
        for p in fs.params:
            if p.element_of is None or p.element_table is None:
                continue
            value, enc = chosen_type(self.sem, p.element_table)
            types[p.name] = (value, enc)
            src = fs.param(p.element_of)
            if src.shape == "value" and src.type.kind == "handle":
                q = self.sem.queries[src.type.name]
                self.scripted[q.call, q.result] = value
            elif src.shape == "value":
                enum_choice[src.name] = value
            else:
                self.scripted[fs.name, src.name] = value
        for p in fs.params:
            n, i = p.name, p.index
            if n not in visible:
                if n in lengths and p.shape == "value":
                    expect[n] = str(lengths[n])
                continue
            if n in enum_choice:
                member = self.enum_class[p.type.name](enum_choice[n])
                args.append(member)
                expect[n] = str(int(member))
                continue
            if n in types and p.shape == "scalar":
                v, e = self.element_value(types[n][1], i)
                args.append(v)
                expect[n] = e
                continue
            if n in types and p.shape == "array":
                pairs = [self.element_value(types[n][1], i, k) for k in range(3)]
                args.append([v for v, _ in pairs])
                expect[n] = "[" + ",".join(e for _, e in pairs) + "]"
                continue
            if p.shape == "value":
                if n in {q.length for q in fs.params if q.direction == "out" and q.shape in ("array", "blob", "string")}:
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
            elif p.shape == "callback":
                args.append(_Callback(p.type, self.spec))
            elif p.shape in ("buffer", "opaque"):
                v = _HIGH + 0x70000 + 0x100 * i
                args.append(v)
                expect[n] = str(v)
            elif p.shape == "scalar" and p.type.kind == "void" and p.memory == "host":
                scale = 0.5 + i
                args.append(scale)
                expect[n] = repr(scale)
            elif p.shape == "string":
                args.append("abc")
                expect[n] = "abc"
            elif p.shape == "blob":
                args.append(b"\x01\x02\x03")
                expect[n] = "010203"
            elif p.shape == "array":
                elem = ParamSem(name=n, index=i, type=p.type.pointee(), direction="in", memory=p.memory,
                                shape="scalar", source="type")
                values, logged = [], []
                for k in range(3 * p.length_factor):
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
            else:  # scalar passed by pointer (in / inout)
                elem = ParamSem(name=n, index=i, type=CType(kind=p.type.kind, name=p.type.name),
                                direction="in", memory="host", shape="scalar", source="type")
                v, e = self.value_for(elem, i)
                args.append(v)
                expect[n] = e
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
            for m, (fname, ft) in enumerate(_flat_fields(self.spec.record(t.name), self.spec)):
                f = fsem.get(fname)
                if f is not None and f.shape == "scalar":
                    addr = _HIGH + 0x50000 + 0x10 * i + 0x100 * (k + 1)
                    values.append(self.handle_class[f.type.name].from_address(addr))
                    shown.append(str(addr))
                elif f is not None:
                    addr = 0xB0000 + 0x100 * i + 8 * k
                    values.append(addr)
                    shown.append(str(addr))
                elif ft.depth == 0 and ft.kind == "enum":
                    member = list(self.enum_class[ft.name])[-1]
                    values.append(member)
                    shown.append(str(int(member.value)))
                elif ft.depth == 0 and ft.kind == "int":
                    values.append(3 + i + k + m)
                    shown.append(str(3 + i + k + m))
                elif ft.depth == 0 and ft.kind == "float":
                    values.append(1.5 + i + k + m)
                    shown.append(repr(1.5 + i + k + m))
                else:
                    values.append(None)
                    shown.append("0")
            return tuple(values), "(" + ";".join(shown) + ")"
        cls = getattr(self.raw, t.name)
        obj = cls()
        logged = []
        for m, (fname, ft) in enumerate(_flat_fields(self.spec.record(t.name), self.spec)):
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
        if p.also_returned:  # an output count: what the stub wrote (min(length, 2))
            return count_of(4)
        if p.element_of is not None:  # written in the type the driver chose
            if p.shape == "scalar":
                return ("number", out_element(p.index))
            return [("number", out_element(p.index, k)) for k in range(count_of(4) if p.count else 4)]
        if p.shape in ("array", "blob", "string"):
            if p.length_call:
                callee = self.sem.functions[p.length_call.call]
                n = out_int(callee.param(p.length_call.result).index)
            else:
                n = 4
            if p.shape == "string":
                return "stub"[: max(n - 1, 0)]  # snprintf keeps room for the NUL
            if p.shape == "blob":
                return bytes((p.index + k) & 255 for k in range(n))
            upto = count_of(n) if p.count else n
            return [self.known_py(elem, p.index, k, small=True) for k in range(upto)]
        return self.known_py(elem, p.index, 0, small=(fs.name, p.name) in self.length_sources)

    def known_py(self, t: CType, i: int, k: int, small: bool = False) -> Any:
        kind = t.kind
        if kind == "int":
            return out_int(i, k) if small else wide(t.name, out_int(i))
        if kind == "float":
            return ("approx", out_float(i, k))
        if kind == "bool":
            return True
        if kind == "enum":
            return _last_enum(self.spec, t.name)
        if kind == "handle":
            return ("handle", out_handle(i, k))
        if kind in ("opaque", "callback"):
            return out_handle(i, k)
        if kind in ("struct", "union"):
            vals: list[Any] = []
            first: dict[str, Any] = {}
            for m, (_, ft, group) in enumerate(_flat_fields_u(self.spec.record(t.name))):
                if group is not None and group in first:  # reads what the union's first member wrote
                    vals.append(first[group])
                    continue
                if ft.depth == 0 and ft.kind == "int":
                    vals.append(out_int(i, k, m))
                elif ft.depth == 0 and ft.kind == "enum":
                    vals.append(_last_enum(self.spec, ft.name))
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
                and p.shape not in ("value", "buffer", "callback", "opaque") and (not p.hidden or p.also_returned)}
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


def make_tempdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="miogen-abi-"))


@dataclass
class Report:
    library: str
    version: str
    layout_checked: int
    layout_problems: list[str]
    calls: list[CallResult]

    @property
    def ok(self) -> bool:
        return not self.layout_problems and all(not c.problems for c in self.calls)

    def summary(self) -> str:
        bad = [c for c in self.calls if c.problems]
        lines = [f"{self.library} {self.version}: layout {self.layout_checked} facts, {len(self.layout_problems)} mismatches; "
                 f"call-through {len(self.calls)} functions, {len(bad)} failing"]
        lines += [f"  layout: {p}" for p in self.layout_problems]
        for c in bad:
            lines += [f"  {c.function}: {p}" for p in c.problems]
        return "\n".join(lines)


def check(spec: Spec, ann_path: Path, header: Path, target: Target, workdir: Path,
          includes: tuple[Path, ...] = ()) -> Report:
    """Render `spec`, compile the probe and the stub against `header`, and run both checks."""
    import importlib
    import sys

    from .annotate import load_annotations, resolve
    from .files import write_tree
    from .render import plan, render

    ann = load_annotations(ann_path)
    sem = resolve(spec, ann, prefix=target.function_prefix)
    pl = plan(spec, ann, target, "# abi-check build")
    pkg_name = f"miogen_abi_{spec.miopen_version.replace('.', '_')}_{id(workdir) & 0xffff:x}"
    write_tree(render(pl), workdir / pkg_name)
    banner = f"miogen abi-check of MIOpen {spec.miopen_version}"
    probe = compile_cpp(probe_source(spec, header.resolve(), banner), workdir / "probe", target, False, includes,
                        spec.parse.beta)
    stub_path = compile_cpp(stub_source(spec, sem, header.resolve(), banner, target.status_type, target.version_getter),
                            workdir / "libstub.so", target, True,
                            includes, spec.parse.beta)
    sys.path.insert(0, str(workdir))
    try:
        pkg = importlib.import_module(pkg_name)
    finally:
        sys.path.remove(str(workdir))
    stub = ctypes.CDLL(str(stub_path))
    pkg._support.load_library(stub)
    layout_out = subprocess.run([str(probe)], capture_output=True, text=True, check=True).stdout
    layout = check_layout(probe, pkg.raw, spec)
    plans = {
        f.c_name: (f.py_name, [(p.c_name, p.py) for p in f.params], [p.c_name for p in f.params if p.out])
        for f in pl.functions
    }
    calls = run_call_through(pkg, spec, sem, stub, target.function_prefix, plans, target.version_getter)
    return Report(target.display_name, spec.miopen_version, len(layout_out.splitlines()), layout, calls)

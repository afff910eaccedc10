"""C names -> Python names (snake_case functions and parameters, CamelCase classes).

Renaming rules (each documented in docs/limits.md):

- a snake_case name that is a Python keyword or a name the generated modules use for themselves
  gets a trailing underscore (`lambda` -> `lambda_`, `type` -> `type_`);
- a parameter whose name would shadow what a generated wrapper body uses (`s`, `fn`, `raw`, `st`,
  `ret`, `e`, ... see `reserved.PARAM_NAMES`), or that starts with `len_` (the prefix of generated
  length locals), gets a trailing underscore too (`fn` -> `fn_`, its C-side variable `_fn_`);
- a function whose name would be one the package root defines itself (`raw`, `errors`, `hip`,
  `version`, ... see `reserved.PACKAGE`) gets a trailing underscore;
- where two parameters of one function snake to the same name, the one not already spelt that way
  keeps its C spelling (`stateStep` beside `state_step`) when that spelling is usable as it is
  (lowercase first letter, no underscore first, not reserved), else gets `_<index>` (`Handle`
  beside `handle` -> `handle_1`: a kept `Handle` would shadow the class); see `param_names`.

Any other collision (two C functions with one Python name, two classes, ...) is refused by
`check_names`, naming both C names.
"""

from __future__ import annotations

import functools
import keyword
import re
from collections.abc import Sequence
from typing import Any

from ..spec import reserved

_ACRONYM = re.compile(r"([A-Z]+)([A-Z][a-z])")
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_LETTER_DIGIT = re.compile(r"([a-z])([0-9])")


@functools.lru_cache(maxsize=None)  # a pure function of the name; rendering every release asks for each name often
def snake(name: str) -> str:
    """`Get4dTensorDescriptor` -> `get_4d_tensor_descriptor`, `GetRNNLayerParam` -> `get_rnn_layer_param`."""
    s = _ACRONYM.sub(r"\1_\2", name)
    s = _CAMEL.sub(r"\1_\2", s)
    s = _LETTER_DIGIT.sub(r"\1_\2", s)
    s = re.sub(r"_+", "_", s).strip("_").lower()
    return s + "_" if keyword.iskeyword(s) or s in _RESERVED else s


# names the generated modules use for themselves
_RESERVED = {"ctypes", "enum", "typing", "self", "cls", "type", "len", "int", "float", "bool", "min", "list", "tuple",
             "isinstance", "callable", "object", "bytes", "str"}

_FUNCTION_RESERVED = frozenset(n for n in reserved.PACKAGE | reserved.API_MODULE if n.islower())


def strip_prefix(name: str, prefix: str) -> str:
    return name[len(prefix):] if name.startswith(prefix) and len(name) > len(prefix) else name


def function_name(c_name: str, prefix: str) -> str:
    py = snake(strip_prefix(c_name, prefix))
    return py + "_" if py in _FUNCTION_RESERVED else py


def param_name(c_name: str) -> str:
    py = snake(c_name)
    return py + "_" if py in reserved.PARAM_NAMES or (py.startswith("len_") and py != "len_") else py


def param_names(c_names: Sequence[str]) -> dict[str, str]:
    """Python names of one function's parameters (C name -> Python name), as the renderer makes them.

    Each is `param_name` of the C name (`p` in front when that starts with an underscore); where
    two C names snake to the same name, the one not already spelt that way keeps its C spelling
    (`stateStep` beside `state_step`) when that is usable as it is, or else gets `_<index>`. `check_names`
    refuses the result when it is still not a set of distinct, safe names.
    """
    names = {}
    for c in c_names:
        py = param_name(c)
        names[c] = py if not py.startswith("_") else "p" + py
    counts: dict[str, int] = {}
    for py in names.values():
        counts[py] = counts.get(py, 0) + 1
    for c_name, py in list(names.items()):
        if counts[py] > 1 and c_name != py:
            keep = _usable_spelling(c_name) and c_name not in names.values()
            names[c_name] = c_name if keep else f"{py}_{list(names).index(c_name)}"
    return names


def _usable_spelling(c_name: str) -> bool:
    """A C parameter name usable as its Python name as it is: no keyword, no leading underscore (generated
    locals are `_<name>`), no capital first letter (the module's classes: `Handle`, `Any`, ...), nothing
    a wrapper body uses."""
    return (c_name.isidentifier() and c_name.isascii() and not keyword.iskeyword(c_name) and c_name[:1].islower()
            and c_name not in reserved.PARAM_NAMES and not c_name.startswith("len_"))


def class_name(c_name: str, prefix: str) -> str:
    """`miopenDataType_t` -> `DataType`, `miopenTensorDescriptor` -> `TensorDescriptor`."""
    base = strip_prefix(c_name, prefix)
    if base.endswith("_t"):
        base = base[:-2]
    base = base[:1].upper() + base[1:]
    return base.replace("_", "")


def result_name(c_name: str, prefix: str) -> str:
    """The NamedTuple holding several outputs of one function."""
    base = strip_prefix(c_name, prefix)
    return base[:1].upper() + base[1:].replace("_", "") + "Result"


def check_names(spec: Any, prefix: str, sem: Any = None, target: Any = None) -> list[str]:
    """Python names the renderer makes that collide or are unusable; each problem names the C names.

    Namespaces checked: the api module (functions, enum/record/handle classes, result NamedTuples,
    and what `reserved.API_MODULE` and `reserved.PACKAGE` hold), the errors module (the target's
    exception classes), and each wrapper body (parameters, their C-side variables, generated locals).
    `sem` (resolved.Semantics) adds the per-function checks that depend on parameter roles.
    """
    problems: list[str] = []
    api: dict[str, str] = {}

    def claim(py: str, c_name: str, what: str) -> None:
        if not py.isidentifier() or not py.isascii() or keyword.iskeyword(py):
            problems.append(f"{what} {c_name}: its Python name {py!r} is not a valid identifier")
            return
        if py in reserved.API_MODULE or py in reserved.PACKAGE:
            problems.append(f"{what} {c_name}: its Python name {py!r} is a name the generated package uses itself")
            return
        if py in api:
            problems.append(f"{what} {c_name} and {api[py]} both become {py!r} in Python; rename one in the "
                            f"header (or leave one out of the spec)")
            return
        api[py] = f"{c_name}"

    fn_py: dict[str, str] = {}
    for f in spec.functions:
        py = function_name(f.name, prefix)
        fn_py[f.name] = py
        claim(py, f.name, "function")
    for e in spec.enums:
        claim(class_name(e.name, prefix), e.name, "enum")
    for r in spec.records:
        if r.name:
            claim(class_name(r.typedef or r.name, prefix), r.typedef or r.name, "record")
    for h in spec.handles:
        claim(class_name(h.name, prefix), h.name, "handle type")
    if target is not None:
        base = target.error_base
        stem = base[:-5] if base.endswith("Error") else base
        for name, what in ((base, "error_base"), (stem + "Warning", "warning class")):
            if name in reserved.ERRORS_MODULE:
                problems.append(f"target {what} {name}: a name the generated errors module uses itself")
            claim(name, name, f"target {what}")
        for name in (stem + "VersionError", stem + "VersionWarning"):  # _support's classes, in the package root
            if name in api:
                problems.append(f"{api[name]}: its Python name {name!r} is the target's {name} class (package root)")
            api.setdefault(name, f"the target's {name}")
        for status, exc in target.status_exceptions.items():
            if exc.name in reserved.ERRORS_MODULE:
                problems.append(f"target status_exceptions.{status}: {exc.name} is a name the errors module uses itself")
            claim(exc.name, f"{status} ({exc.name})", "status exception")
    if sem is None:
        return problems
    status_type = target.status_type if target is not None else None
    for f in spec.functions:
        fs = sem.functions.get(f.name)
        if fs is None:
            continue
        c_names = [p.name for p in fs.params]
        dup = {n for n in c_names if c_names.count(n) > 1}
        if dup:
            problems.append(f"{f.name}: parameters share the name(s) {', '.join(sorted(dup))} (unnamed parameters "
                            f"are called arg<index>)")
            continue
        py_of = param_names(c_names)
        outs = [p for p in fs.params if p.direction in ("out", "inout") and not p.hidden]
        is_status = f.returns.kind == "enum" and (status_type is None or f.returns.name == status_type)
        if len(outs) > 1 and is_status:
            claim(result_name(f.name, prefix), f.name, "result tuple of")
        locals_: dict[str, str] = {}

        def local(name: str, owner: str) -> None:
            if name in reserved.BODY_LOCALS or (name in locals_ and locals_[name] != owner):
                other = locals_.get(name, "the generated code")
                problems.append(f"{f.name}: parameter {owner} needs the local {name!r}, which {other} uses")
            locals_[name] = owner

        for p in fs.params:
            name = py_of[p.name]
            if not name.isidentifier() or not name.isascii() or keyword.iskeyword(name) or name.startswith("_"):
                problems.append(f"{f.name}: parameter {p.name} becomes {name!r}, not a valid Python parameter name")
                continue
            if name in reserved.PARAM_NAMES:
                problems.append(f"{f.name}: parameter {p.name} becomes {name!r}, which shadows a name the wrapper "
                                f"body uses")
            elif name in api and not name[:1].islower():
                problems.append(f"{f.name}: parameter {p.name} becomes {name!r}, which shadows the class of "
                                f"{api[name]} (the wrapper body uses the module's classes)")
            local(name, p.name)
            local("_" + name, p.name)
            if p.shape == "blob" and p.direction == "in":
                local("_len_" + name, p.name)
            if p.length_call is not None and p.length_call.call in fn_py:
                callee = fn_py[p.length_call.call]
                local("_len_" + callee, f"the length call to {p.length_call.call}")  # shared by its arrays
                if callee in py_of.values():
                    problems.append(f"{f.name}: a parameter named {callee!r} hides the function {p.length_call.call} "
                                    f"that sizes {p.name}")
    return problems

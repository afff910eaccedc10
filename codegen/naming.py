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
`validate.check_names`, naming both C names.
"""

from __future__ import annotations

import functools
import keyword
import re
from collections.abc import Sequence

from . import reserved

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
    (`stateStep` beside `state_step`) when that is usable as it is, or else gets `_<index>`. `validate.check_names`
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

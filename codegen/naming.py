"""C names -> Python names (snake_case functions and parameters, CamelCase classes)."""

from __future__ import annotations

import keyword
import re

_ACRONYM = re.compile(r"([A-Z]+)([A-Z][a-z])")
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_LETTER_DIGIT = re.compile(r"([a-z])([0-9])")


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


def strip_prefix(name: str, prefix: str) -> str:
    return name[len(prefix):] if name.startswith(prefix) and len(name) > len(prefix) else name


def function_name(c_name: str, prefix: str) -> str:
    return snake(strip_prefix(c_name, prefix))


def param_name(c_name: str) -> str:
    return snake(c_name)


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

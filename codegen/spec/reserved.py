"""Names the generated code uses for itself, collected from the templates in one place.

A name derived from a spec (a C name, or the Python name the renderer makes of it) must never be
one of these: it would shadow a module, a helper or a local of the generated code. `naming` renames
parameters and functions that hit them (trailing underscore, documented there); `validate` refuses
every other collision with a message naming the C name. `tests/codegen/test_names.py` renders the fixture
and checks, from the AST of every generated module, that each name the templates introduce is
listed here: a template change that adds a helper fails that test until the name is added.

Sets (by the scope they protect):

- FACADE_MODULE: module-level names of the facade `api.py` / `raw.py` (they hold the bound release's names).
- RAW_MODULE: module-level names of a release's `raw.py` (C names of functions, enums, records, handles,
  typedefs and callbacks live there verbatim), and the builtins its code calls.
- API_MODULE: module-level names of `api.py` (Python names of functions and classes live there),
  and the builtins its module-level code and function bodies use.
- BODY_LOCALS: locals of every generated wrapper body (`_fn`, `_st`, `_ret`, `_e`) and the module
  globals those bodies read. A parameter `x` gets a C-side variable `_x`, so `x` must not be any of
  these without the leading underscore (see PARAM_NAMES).
- BODY_PREFIXES: prefixes of generated locals (`_len_<name>` holds the length of a blob or of a
  `length_call` result).
- PARAM_NAMES: Python parameter names that would shadow a builtin or global the body uses, or whose
  C-side variable `_<name>` would be a BODY_LOCALS name; `naming.param_name` appends `_` to them.
- PACKAGE: names the package root defines itself: the generated `__init__.py` and the handwritten
  `runtime/__init__.py` (`miopen.hip`, `miopen.version`, ...), which star-imports the API.
- ERRORS_MODULE: module-level names of `errors.py` (the target's exception class names live there).
- ENUM_MEMBER: names an IntEnum member must not have (attributes of int and IntEnum, `mro`).
- C_PREFIX: C names must not start with it; the C++ stub and probe may use it for their own locals.
"""

from __future__ import annotations

import enum

RAW_MODULE: frozenset[str] = frozenset({
    "annotations", "ctypes", "enum", "Callable", "Any", "PROTOTYPES", "BETA", "_s", "_lazy", "_reset",
    "_NAMESPACES", "__all__", "globals", "dict", "list", "str", "tuple", "frozenset",
    "DIRECT", "_Direct", "_lazy_direct", "_name", "setattr",
})

#: the api module's aliases of the ctypes types its direct calls wrap values in (direct.DIRECT_ALIASES)
DIRECT_ALIASES: frozenset[str] = frozenset({
    "_c_float", "_c_long", "_c_ulong", "_c_longlong", "_c_ulonglong", "_c_size_t", "_c_ssize_t", "_c_int64",
    "_c_uint64", "_c_double",
})

#: module-level names of the facade modules (`api.py`, `raw.py` beside the releases' sub-packages)
FACADE_MODULE: frozenset[str] = frozenset({"annotations", "TYPE_CHECKING", "Any", "_support", "__getattr__", "__dir__"})

BODY_LOCALS: frozenset[str] = frozenset({
    # locals of a wrapper body
    "_fn", "_st", "_ret", "_e", "_t",
    # module globals the bodies read
    "_s", "_raw", "_errors", "_byref", "_c_double", "_keep_alive", "_s_callback", "_new", "_KEEP_ALIVE",
    "_direct", "_addr", "_copysign", "_F32_REFS", "_F64_REFS", "_DEVICE_ARGS",
}) | DIRECT_ALIASES

BODY_PREFIXES: tuple[str, ...] = ("_len_", "_V_", "_type_")  # `_type_<p>`: the element type `element_of` read

#: prefixes of module-level tables in a release's `api.py`: the element encodings of the vocabulary's
#: `element_tables` (`_EN_<table>`, `_ET_<table>`) and the type queries of `element_queries`
API_PREFIXES: tuple[str, ...] = ("_V_", "_EN_", "_ET_", "_element_type_", "_extent_", "_FAST_")

#: builtins the generated code calls (a module-level or parameter name must not shadow them)
BUILTINS_USED: frozenset[str] = frozenset({
    "type", "int", "float", "bool", "len", "min", "list", "tuple", "dict", "str", "bytes", "object",
    "isinstance", "callable", "classmethod", "property", "TypeError", "ValueError", "RuntimeError",
    "UserWarning", "MemoryError", "NotImplementedError", "frozenset", "getattr", "super", "globals",
})

API_MODULE: frozenset[str] = frozenset({
    "annotations", "ctypes", "Callable", "Mapping", "Sequence", "Any", "NamedTuple", "Protocol", "TypeAlias",
    "DeviceBuffer", "Stream", "SupportsCudaArrayInterface", "SupportsDataPtr", "SupportsDLPack",
    "_s", "_errors", "_raw", "_byref", "_c_double", "_KEEP_ALIVE", "_s_callback", "_keep_alive", "_new",
    "_direct", "_addr", "_copysign", "_F32_REFS", "_F64_REFS", "_DEVICE_ARGS", "math", "__all__",
}) | BUILTINS_USED | DIRECT_ALIASES

PARAM_NAMES: frozenset[str] = frozenset(
    {n[1:] for n in BODY_LOCALS if n[1:].islower()}
    | {n for n in BUILTINS_USED if n.islower()}
    | {"ctypes", "enum", "typing", "self", "cls"}
)

PACKAGE: frozenset[str] = frozenset({
    # generated __init__.py
    "MIOPEN_VERSION", "LibraryNotFoundError", "MissingSymbolError", "load_library", "unload_library",
    "raw", "errors", "api", "_support", "__all__", "RELEASES", "bound_release", "__getattr__", "__dir__", "_releases",
    "_handles",
    # the support modules copied from codegen/support/ and the rendered _target
    "_target", "_search", "_state", "_selection", "_text", "_convert", "_pointers", "_elements", "_handlebase",
    "_inflight", "_status", "_envflags", "_userreleases",
    "MIOpenVersionError", "MIOpenVersionWarning",
    # runtime/__init__.py (the installed `miopen` package root)
    "__version__", "annotations", "importlib", "TYPE_CHECKING", "Any", "_LAZY", "_SUBMODULES", "_FIXED", "_gs",
    "hip", "opencl", "kernelcache", "version", "handles", "state", "workspace", "descriptors", "layout", "algo", "ops",
    "tensor", "envflags", "caffe2", "_bound", "_args", "backend", "quirks", "__main__",
    "check_miopen_versions", "has_feature", "inline_miopen_handle", "with_miopen_state",
    "set_workspace_limit", "workspace_limit", "tensor_descriptor", "k_one", "k_zero", "Tensor", "as_tensor",
    "_hiponly", "_settings", "configure", "settings",
})

ERRORS_MODULE: frozenset[str] = frozenset({
    "annotations", "enum", "warnings", "Mapping", "_s", "STATUS_EXCEPTIONS", "STATUS_WARNINGS", "STATUS_HINTS",
    "raise_status", "__all__",
}) | BUILTINS_USED

ENUM_MEMBER: frozenset[str] = frozenset(
    {n for n in dir(int) + dir(enum.IntEnum) if not n.startswith("_")} | {"mro", "name", "value"}
)

C_PREFIX = "miogen_"

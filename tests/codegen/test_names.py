"""Names: a synthetic header full of names that collide with what the generated code uses is
rendered, imported and called; every collision the renderer cannot resolve by a documented rule is
refused naming the C names; the reserved set covers every name the templates introduce."""

from __future__ import annotations

import ast
import ctypes
import importlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from miogen.semantics import naming
from miogen.spec import reserved
from miogen.semantics.annotations import Annotations, Rules, load_annotations
from miogen.semantics.resolve import resolve
from miogen.base.errors import CodegenError, HeaderError, NamingError
from miogen.parse.headers import ParseOptions
from miogen.parse.parser import parse_header
from miogen.base.files import write_tree as write
from miogen.render.package import render

from ..conftest import fixture_files
from ..helpers import planned, REPO, target

NAMES = REPO / "tests" / "fixtures" / "names"


@pytest.fixture(scope="module")
def names_build(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ModuleType, ctypes.CDLL]]:
    """The names header rendered as two releases (3.1.0 adds miopenNewer) by the multi-release
    renderer, imported, and bound to a gcc-built library reporting 3.0.0 (or 3.1.0 when asked)."""
    root = tmp_path_factory.mktemp("names")
    ann = load_annotations(NAMES / "annotations.yaml")
    old = parse_header(NAMES / "miopen.h", target(), ParseOptions(), "3.0.0")
    new = parse_header(NAMES / "miopen.h", target(), ParseOptions(defines=("MIOGEN_NAMES_NEWER",)), "3.1.0")
    files = render(planned(old, ann, target(), "# names fixture 3.0.0"),
                   planned(new, ann, target(), "# names fixture 3.1.0", {"miopenNewer": "3.1.0"}))
    assert {"v3_0_0/api.py", "v3_1_0/api.py", "_support.py", "api.py"} <= set(files)
    write(files, root / "names_pkg")
    lib_path = root / "libnames.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O0", "-o", str(lib_path), str(NAMES / "names_lib.c")], check=True)
    sys.path.insert(0, str(root))
    try:
        pkg = importlib.import_module("names_pkg")
    finally:
        sys.path.remove(str(root))
    lib = ctypes.CDLL(str(lib_path))
    pkg._support.load_library(lib)
    assert pkg._support.bound_release() == "3.0.0"
    yield pkg, lib
    pkg._support.unload_library()


@pytest.fixture()
def names_pkg(names_build: tuple[ModuleType, ctypes.CDLL]) -> Iterator[ModuleType]:
    pkg, lib = names_build
    yield pkg
    if pkg._support.bound_release() != "3.0.0":
        pkg._support.unload_library()
        lib.names_set_minor(0)
        pkg._support.load_library(lib)


def test_both_releases_bind_with_the_same_names(names_build: tuple[ModuleType, ctypes.CDLL]) -> None:
    pkg, lib = names_build
    with pytest.raises(AttributeError, match=r"newer is not in the bound MIOpen release 3\.0\.0.*releases that have it: 3\.1\.0"):
        pkg.newer  # noqa: B018
    pkg._support.unload_library()
    lib.names_set_minor(1)
    try:
        pkg._support.load_library(lib)
        assert pkg._support.bound_release() == "3.1.0"
        assert pkg.newer(fn_=7) == 21 and pkg.api.newer(7) == 21
        assert pkg.api.shadow(*range(1, 13)) == sum(v * 10**i for i, v in enumerate(range(1, 13)))
        with pkg.create_thing() as thing:
            assert pkg.clash(thing, 2, 3, 4) == 4321
    finally:
        pkg._support.unload_library()
        lib.names_set_minor(0)
        pkg._support.load_library(lib)


def test_parameters_spelt_like_generated_locals(names_pkg: ModuleType) -> None:
    import inspect

    sig = inspect.signature(names_pkg.underscored)
    names = list(sig.parameters)
    assert names == ["fn_", "st_", "ret_", "e_", "s_", "raw_", "new_", "byref_", "keep_alive_", "len_x_"]
    assert names_pkg.underscored(*range(1, 11)) == sum(v * 10**i for i, v in enumerate(range(1, 11)))


def test_parameters_that_snake_to_a_class_name(names_pkg: ModuleType) -> None:
    import inspect

    assert list(inspect.signature(names_pkg.clash).parameters) == ["thing", "thing_1", "any", "any_3"]
    thing = names_pkg.create_thing()
    assert isinstance(thing, names_pkg.Thing)
    assert names_pkg.clash(thing, 2, 3, 4) == 4321 and names_pkg.clash(thing, thing_1=5, any=6, any_3=7) == 7651
    thing.close()
    with pytest.raises(ValueError, match="miopenClash: thing is a closed Thing"):
        names_pkg.clash(thing, 1, 1, 1)


def test_parameters_named_like_generated_locals(names_pkg: ModuleType) -> None:
    api = names_pkg.api
    values = list(range(1, 13))
    got = api.shadow(*values)
    assert got == sum(v * 10**i for i, v in enumerate(values))  # each argument reached its own C parameter
    by_name = dict(s_=1, raw_=2, fn_=3, st_=4, ret_=5, e_=6, self_=7, cls_=8, type_=9, ctypes_=1, len_=2, lambda_=3)
    assert api.shadow(**by_name) == sum(v * 10**i for i, v in enumerate(by_name.values()))


def test_functions_named_like_the_package_root(names_pkg: ModuleType) -> None:
    assert isinstance(names_pkg.raw, ModuleType) and isinstance(names_pkg.errors, ModuleType)
    assert names_pkg.raw_(errors_=41) == 42 and names_pkg.errors_() == 5
    assert names_pkg.version_() == 352 and names_pkg.hip_(version=21) == 42


def test_parameters_that_snake_to_one_name(names_pkg: ModuleType) -> None:
    got = names_pkg.steps(stateStep=1, state_step=2, len_data_=3, data=b"\x04")
    assert got == 1 + 200 + 30000 + 1000000 + 400000000


def test_default_arguments_are_exact(names_pkg: ModuleType) -> None:
    import inspect

    sig = inspect.signature(names_pkg.defaults)
    defaults = {n: p.default for n, p in sig.parameters.items() if p.default is not inspect.Parameter.empty}
    assert defaults["octal"] == 8 and type(defaults["octal"]) is int  # 010 is octal, not 10.0
    assert (defaults["hex"], defaults["bin"], defaults["sep"], defaults["neg"]) == (255, 5, 1000000, -42)
    assert defaults["h"] == 0.25 and defaults["f"] == 0.5 and defaults["d"] == 1e-05
    assert defaults["b"] is True  # bool b = 2 converts to true, as in C++
    assert defaults["big"] == 2**63 - 1 and defaults["nothing"] is None
    mode = names_pkg.api.Mode
    got = names_pkg.defaults(mode.miopenModeLow, other=mode.miopenModeHigh)
    expected = 0 + 8e1 + 255e3 + 5e6 + 1e6 + 0.25 + 0.5 + 1e-5 * 1e5 + 1e8 - 42e9 + 1e12 + 7e13
    assert got == pytest.approx(expected)


def test_struct_fields_named_like_tuple_methods(names_pkg: ModuleType) -> None:
    counts = names_pkg.get_counts()
    assert (counts.count, counts.index, counts.mode) == (3, 4, 5)


# ------------------------------------------------------------------ refused


def _header(body: str) -> str:
    status = (NAMES / "miopen.h").read_text().split("typedef enum\n{\n    miopenModeLow")[0]
    return status.split("#define MIOGEN_NAMES_H\n", 1)[0] + "#define MIOGEN_NAMES_H\n" + \
        status.split("#define MIOGEN_NAMES_H\n", 1)[1] + body + "\n#endif\n"


BAD_HEADERS = [
    ("struct field _reserved", "typedef struct { int _reserved; } miopenR_t;\nmiopenStatus_t miopenF(miopenR_t* r);",
     HeaderError, r"miopen\.h:\d+:\d+: record 'miopenR_t': fields\[0\]\.name: '_reserved': API names must not start"),
    ("struct field _fields_", "typedef struct { int _fields_; } miopenR_t;\nmiopenStatus_t miopenF(miopenR_t* r);",
     HeaderError, r"fields\[0\]\.name: '_fields_'"),
    ("enum constant mro", "typedef enum { mro = 1 } miopenE_t;\nmiopenStatus_t miopenF(miopenE_t e);",
     HeaderError, r"constants\[0\]\.name: 'mro': a name Python's IntEnum or int uses itself"),
    ("enum constant _missing_", "typedef enum { _missing_ = 1 } miopenE_t;\nmiopenStatus_t miopenF(miopenE_t e);",
     HeaderError, r"constants\[0\]\.name: '_missing_'"),
    ("enum constant value", "typedef enum { value = 1 } miopenE_t;\nmiopenStatus_t miopenF(miopenE_t e);",
     HeaderError, r"'value': a name Python's IntEnum"),
    ("non-finite default", "miopenStatus_t miopenF(double x = 1e309);",
     HeaderError, r"miopen\.h:\d+:\d+: default argument of x: '1e309' is not finite"),
    ("unsigned -1", "miopenStatus_t miopenF(unsigned x = -1);", HeaderError, r"-1 is out of range for unsigned int"),
    ("float for int", "miopenStatus_t miopenF(int x = 1.5);", HeaderError, r"a floating default is not an integer"),
    ("char literal", "miopenStatus_t miopenF(int x = 'a');", HeaderError, r"character and string literals"),
    ("negated unsigned literal", "miopenStatus_t miopenF(long x = -1u);", HeaderError, r"negates an unsigned"),
    ("float overflow", "miopenStatus_t miopenF(float x = 1e39);", HeaderError, r"out of range for float"),
    ("a typedef named ctypes", "typedef int ctypes;\nmiopenStatus_t miopenF(ctypes x);",
     HeaderError, r"typedefs\[0\]\.name: ctypes: the generated raw module uses this name itself"),
    ("reserved C prefix", "miopenStatus_t miopenF(int miogen_s);", HeaderError, r"reserved for miogen's generated C\+\+"),
    ("RNN/Rnn", "miopenStatus_t miopenGetRNNDesc(int a);\nmiopenStatus_t miopenGetRnnDesc(int a);",
     NamingError, r"function miopenGetRnnDesc and miopenGetRNNDesc both become .get_rnn_desc."),
    ("digit after the prefix", "miopenStatus_t miopen3dConv(int a);",
     NamingError, r"function miopen3dConv: its Python name '3d_conv' is not a valid identifier"),
    ("class named like a typing helper", "typedef enum { miopenA = 0 } miopenNamedTuple_t;\n"
     "miopenStatus_t miopenF(miopenNamedTuple_t x);", NamingError, r"'NamedTuple' is a name the generated package"),
    ("enum and struct with one class name", "typedef enum { miopenA = 0 } miopenFoo_t;\n"
     "typedef struct { int a; } miopen_Foo;\nmiopenStatus_t miopenF(miopenFoo_t x, miopen_Foo* y);",
     NamingError, r"record miopen_Foo and miopenFoo_t both become 'Foo'"),
    ("enum named None", "typedef enum { miopenB = 0 } miopenNone_t;\nmiopenStatus_t miopenF(miopenNone_t x);",
     NamingError, r"enum miopenNone_t: its Python name 'None' is not a valid identifier"),
]


@pytest.mark.parametrize(("what", "body", "error", "message"), BAD_HEADERS, ids=[b[0] for b in BAD_HEADERS])
def test_refused_names_and_defaults(tmp_path: Path, what: str, body: str, error: type[CodegenError],
                                    message: str) -> None:
    header = tmp_path / "miopen.h"
    header.write_text(_header(body))
    none = Annotations(schema_version=1, rules=Rules((), (), ()), handles={}, functions={})
    with pytest.raises(error, match=message):
        spec = parse_header(header, target(), ParseOptions(), "3.0.0")
        resolve(spec, none, prefix="miopen", target=target())


def test_param_names_rule() -> None:
    names = naming.param_names(["s", "fn", "len", "len_data", "stateStep", "state_step", "_hidden", "lambda", "Type"])
    assert names == {"s": "s_", "fn": "fn_", "len": "len_", "len_data": "len_data_", "stateStep": "stateStep",
                     "state_step": "state_step", "_hidden": "hidden", "lambda": "lambda_", "Type": "type_"}
    # a spelling kept beside its snake_case twin must be usable as it is: no capital (a class), no underscore first
    assert naming.param_names(["handle", "Handle"]) == {"handle": "handle", "Handle": "handle_1"}
    assert naming.param_names(["fn", "_fn"]) == {"fn": "fn__0", "_fn": "fn__1"}  # neither is spelt fn_
    assert naming.param_names(["type", "Type"]) == {"type": "type__0", "Type": "type__1"}
    assert naming.function_name("miopenRaw", "miopen") == "raw_" and naming.function_name("miopenHip", "miopen") == "hip_"


# ------------------------------------------------------------------ the reserved set covers the templates


def _spec_names(pl: object) -> set[str]:
    names: set[str] = set()
    for e in pl.enums:  # type: ignore[attr-defined]
        names |= {e.c_name, e.py_name, "_V_" + e.c_name} | {m for m, _ in e.members}

    def records(r: object) -> Iterator[object]:
        yield r
        for n in r.nested:  # type: ignore[attr-defined]
            yield from records(n)

    for top in pl.records:  # type: ignore[attr-defined]
        for r in records(top):
            names |= {r.c_name, r.py_name} | {f.name for f in r.flat} | {n for n, _ in r.fields}  # type: ignore[attr-defined]
        names |= {top.alias} if top.alias else set()
    for h in pl.handles:  # type: ignore[attr-defined]
        names |= {h.c_name, h.py_name}
    for c in pl.callbacks:  # type: ignore[attr-defined]
        names |= {c.c_name, c.py_name}
    names |= set(pl.opaque_typedefs)  # type: ignore[attr-defined]
    for f in pl.functions:  # type: ignore[attr-defined]
        names |= {f.c_name, f.py_name, "_len_" + f.py_name}
        if f.result_class:
            names |= {f.result_class} | {n for n, _ in f.result_fields}
        for p in f.params:
            for n in (p.py, p.out_name):
                if n:
                    names |= {n, "_" + n, "_len_" + n}
        names |= {"_" + n for n in naming.param_names([p.c_name for p in f.params]).values()}
    t = pl.target  # type: ignore[attr-defined]
    base = t.error_base
    stem = base[:-5]
    names |= {base, stem + "Warning", stem + "VersionError", stem + "VersionWarning"}
    names |= {x.name for x in t.status_exceptions.values()}
    return names


def _bound_and_used(tree: ast.Module) -> tuple[set[str], set[str]]:
    """Module-level names, and the names wrapper bodies read that are not their own arguments."""
    bound, used = set(), set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for tg in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(tg, ast.Name):
                    bound.add(tg.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name not in ("_s_callback", "_keep_alive", "_lazy", "_reset"):
            args = {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
            for inner in ast.walk(node):
                if isinstance(inner, ast.Name) and inner.id not in args:
                    used.add(inner.id)
    return bound, used


@pytest.mark.parametrize(("module", "allowed"), [
    ("release/raw.py", reserved.RAW_MODULE), ("release/api.py", reserved.API_MODULE | reserved.BODY_LOCALS),
    ("raw.py", reserved.FACADE_MODULE), ("api.py", reserved.FACADE_MODULE),
    ("errors.py", reserved.ERRORS_MODULE), ("__init__.py", reserved.PACKAGE),
    ("_handles.py", frozenset({"annotations", "_s", "__all__"})),
])
def test_reserved_sets_cover_every_name_the_templates_use(module: str, allowed: frozenset[str]) -> None:
    """Each module-level name of a rendered module, and each name its wrapper bodies read, is either
    made from the spec or listed in codegen/spec/reserved.py (a template change that adds a helper fails
    here until the name is listed)."""
    pl, files = fixture_files()
    if module.startswith("release/"):  # the release's own sub-package
        module = f"{pl.spec.version.module}/{module.removeprefix('release/')}"
    bound, used = _bound_and_used(ast.parse(files[module]))
    made = _spec_names(pl)
    import builtins

    extra = {n for n in bound if n not in made and n not in allowed and not n.startswith(reserved.API_PREFIXES)}
    assert not extra, f"{module}: names the template binds that codegen/spec/reserved.py does not list: {sorted(extra)}"
    if module.endswith("/api.py"):
        body = {n for n in used if n not in made and n not in bound and n not in allowed and not hasattr(builtins, n)
                and not n.startswith(reserved.BODY_PREFIXES)}
        assert not body, f"api.py wrapper bodies use names not made from the spec nor module-level: {sorted(body)}"
        builtins_used = {n for n in used if hasattr(builtins, n) and n not in made}
        assert builtins_used <= reserved.BUILTINS_USED | {"None", "True", "False"}, sorted(builtins_used)


def test_runtime_package_root_names_are_reserved() -> None:
    tree = ast.parse((REPO / "runtime" / "__init__.py").read_text())
    bound, _ = _bound_and_used(tree)
    lazy = next(n for n in tree.body if isinstance(n, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "_LAZY" for t in n.targets))
    keys = {k.value for k in lazy.value.keys if isinstance(k, ast.Constant)}  # type: ignore[attr-defined]
    modules = {p.stem for p in (REPO / "runtime").glob("*.py")} | {"ops"}
    stem = target().error_base.removesuffix("Error")  # the target's class names: naming.check_names claims them
    missing = (bound | keys | modules) - reserved.PACKAGE - {"_api_all", "_errors_all", "__init__", "__getattr__",
                                                                "__all__", "annotations", stem + "VersionError",
                                                                stem + "VersionWarning"}
    assert not missing, f"runtime/__init__.py names missing from reserved.PACKAGE: {sorted(missing)}"


def test_the_rendered_fixture_compiles_and_stays_inside_reserved_names() -> None:
    _, files = fixture_files()
    for name, text in files.items():
        if name.endswith(".py"):
            compile(text, name, "exec")


def test_reserved_names_list_the_direct_call_aliases() -> None:
    """The api module's ctypes aliases for direct calls (direct.DIRECT_ALIASES) are reserved names."""
    from miogen.render import direct
    from miogen.spec import reserved

    assert {alias for alias, _ in direct.DIRECT_ALIASES} == reserved.DIRECT_ALIASES

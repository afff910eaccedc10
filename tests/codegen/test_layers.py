"""The generator's import graph: no circles, and no module imports one of a higher layer.

The graph is read with `ast` from every module of codegen/ (the package `miogen`; imports inside functions count
too, those under `if TYPE_CHECKING:` do not: they never run),
so a new module must be given a layer here, and a new import must point down or sideways.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CODEGEN = Path(__file__).resolve().parents[2] / "codegen"
#: codegen/support/ is not part of the generator: its modules are copied into the generated package
SUPPORT = CODEGEN / "support"

#: bottom to top; a module may import modules of its own layer or of lower ones
LAYERS: tuple[tuple[str, ...], ...] = (
    ("miogen", "errors", "model", "reserved", "gcpolicy", "digest", "cache"),
    ("escape", "files", "releases", "ctypes_map", "literals", "naming", "validate", "yamlread", "yamlwrite", "transaction", "clang_env",
     "cppsrc", "doc", "stubvalues", "conditionals"),
    # the annotation forms: each form's gate, plan, docstring, stub, driver and audit (annotate classifies with them)
    ("forms",),
    ("spec_io", "target", "records", "roles", "diff", "preamble", "parser"),
    ("annotate",),
    ("direct", "plans", "docstrings", "planner", "jinja_env"),
    ("render", "stublib", "layout", "cxx", "callthrough", "audit"),
    ("abi",),
    ("upgrade", "addrelease", "cli", "__main__"),
)


def _module(path: Path) -> str:
    parts = path.relative_to(CODEGEN).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) or "miogen"


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(path: Path) -> set[str]:
    """The miogen modules `path` imports (by their name inside the package, e.g. `audit.notes`)."""
    me = _module(path)
    package = me.split(".") if path.name == "__init__.py" else me.split(".")[:-1]
    if me == "miogen":
        package = []
    known = {_module(p) for p in _sources()}
    out: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If) and _is_type_checking(block.test)
                   for stmt in block.body for n in ast.walk(stmt)}
    for node in ast.walk(tree):
        if id(node) in typing_only:  # `if TYPE_CHECKING:` imports are for the type checker, never run
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base, module = package[: len(package) - (node.level - 1)], node.module
            elif node.module and node.module.split(".")[0] == "miogen":
                base, module = [], node.module.partition(".")[2] or None
            else:
                continue
            target = ".".join(base + ([module] if module else []))
            out.add(target if target in known else "miogen")
            for a in node.names:  # `from . import x`: x is a module
                sub = ".".join(filter(None, (target, a.name)))
                if sub in known:
                    out.add(sub)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("miogen."):
                    out.add(a.name.removeprefix("miogen."))
    out.discard(me)
    return out


def _sources() -> list[Path]:
    return sorted(p for p in CODEGEN.rglob("*.py") if SUPPORT not in p.parents)


def _graph() -> dict[str, set[str]]:
    return {_module(p): _imports(p) for p in _sources()}


def test_support_modules_never_import_the_generator() -> None:
    """The support modules ship in generated code, where `miogen` (the generator) is not installed."""
    bad = []
    for path in sorted(SUPPORT.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            bad += [f"{path.name}: {n}" for n in names if n.split(".")[0] in ("miogen", "codegen")]
            if isinstance(node, ast.ImportFrom) and node.level > 1:
                bad.append(f"{path.name}: a relative import out of support/")
    assert not bad, bad


def _layer(module: str) -> int:
    top = module.split(".")[0]
    for i, names in enumerate(LAYERS):
        if module in names or top in names:
            return i
    raise KeyError(module)


def test_every_module_has_a_layer() -> None:
    missing = []
    for m in _graph():
        try:
            _layer(m)
        except KeyError:
            missing.append(m)
    assert not missing, f"miogen modules with no layer in tests/test_layers.py LAYERS: {missing}"


def test_no_module_imports_a_higher_layer() -> None:
    bad = [f"{m} (layer {_layer(m)}) imports {d} (layer {_layer(d)})"
           for m, deps in _graph().items() for d in sorted(deps) if _layer(d) > _layer(m)]
    assert not bad, "\n".join(bad)


def test_the_import_graph_has_no_circle() -> None:
    graph = _graph()
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                pytest.fail("import circle: " + " -> ".join(path[path.index(d):] + [m, d]) if d in path
                            else f"import circle through {m} -> {d}")
            if d not in state:
                visit(d, path + [m])
        state[m] = 2

    for m in graph:
        if m not in state:
            visit(m, [])


def test_the_graph_reader_sees_imports() -> None:
    """The reader finds the edges the tests above rely on (relative, package-relative, absolute)."""
    graph = _graph()
    assert {"planner", "render", "stublib"} <= graph["abi"]
    assert "audit.vocabulary" in graph["audit.compare"] and "annotate" in graph["audit.compare"]
    assert "audit.run" in graph["audit"]
    assert "miogen" in graph["render"]  # from . import GENERATOR_VERSION


def test_one_definition_per_shared_type_name() -> None:
    """The shared vocabulary types have one home each: a parameter's shape, an audit check, a release."""
    defined: dict[str, list[str]] = {}
    for path in _sources():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            names = ([node.name] if isinstance(node, ast.ClassDef)
                     else [t.id for t in node.targets if isinstance(t, ast.Name)] if isinstance(node, ast.Assign)
                     else [node.target.id] if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                     else [])
            for name in names:
                defined.setdefault(name, []).append(_module(path))
    homes = {"Shape": ["model"], "Check": ["audit.compare"], "Version": ["releases"], "Releases": ["releases"]}
    assert {n: defined.get(n) for n in homes} == homes


def test_the_architecture_page_lists_these_layers() -> None:
    """docs/architecture.md's numbered list of layers is LAYERS (the package itself aside)."""
    import re

    page = (CODEGEN.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = page.split("## Layers of the generator", 1)[1].split("\n## ", 1)[0]
    listed = [tuple(re.findall(r"`(\w+)`", item)) for item in re.split(r"\n\d+\. ", "\n" + section.split("\n1. ", 1)[1])
              if item.strip()]
    listed = [names for names in listed if names]
    wanted = [tuple(n for n in names if n != "miogen") for names in LAYERS]
    assert listed[: len(wanted)] == wanted


# --------------------------------------------------------------------------- the runtime's import graph

RUNTIME = CODEGEN.parent / "runtime"


def _runtime_modules() -> dict[str, Path]:
    """Every module of the installed `miopen` package that is handwritten: runtime/ as `miopen.*`, and
    codegen/support/ under the name it is copied to, `miopen._generated.*` (the rendered modules are leaves here)."""
    out: dict[str, Path] = {}
    for path in sorted(RUNTIME.rglob("*.py")):
        parts = path.relative_to(RUNTIME).with_suffix("").parts
        out[".".join(("miopen",) + (parts[:-1] if parts[-1] == "__init__" else parts))] = path
    for path in sorted(SUPPORT.glob("*.py")):
        out[f"miopen._generated.{path.stem}"] = path
    return out


def _runtime_imports(source: str, me: str, is_package: bool, modules: set[str]) -> set[str]:
    """The modules of `modules` that the module `me` imports: at module level, inside functions and under
    `if TYPE_CHECKING:` alike (a type-only tie is still a tie). `from pkg import name` is an edge to the
    submodule `pkg.name` where there is one, else to `pkg`."""
    package = me.split(".") if is_package else me.split(".")[:-1]
    deps: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - (node.level - 1)] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            for a in node.names:
                sub = f"{target}.{a.name}"
                deps.add(sub if sub in modules else target)
        elif isinstance(node, ast.Import):
            deps.update(a.name for a in node.names)
    return {d for d in deps if d in modules and d != me}


def _runtime_graph() -> dict[str, set[str]]:
    modules = _runtime_modules()
    return {me: _runtime_imports(path.read_text(encoding="utf-8"), me, path.name == "__init__.py", set(modules))
            for me, path in modules.items()}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_runtime_import_graph_has_no_circle() -> None:
    """runtime/ and codegen/support/ import one way: no two modules reach each other, lazily or for types."""
    graph = _runtime_graph()
    report = [" <-> ".join(c) + ": " + "; ".join(f"{m} -> {sorted(graph[m] & set(c))}" for m in c)
              for c in _circles(graph)]
    assert not report, "import circles:\n" + "\n".join(report)


def test_the_runtime_graph_reader_sees_every_kind_of_import() -> None:
    """Module-level, function-level and TYPE_CHECKING imports are edges, and a circle among them is found."""
    graph = _runtime_graph()
    assert "miopen._generated._inflight" in graph["miopen._generated._handlebase"]  # from . import _inflight
    assert "miopen.hip._checks" in graph["miopen.hip.library"]
    assert "miopen.backend" in graph["miopen._hiponly"]  # inside a function
    assert "miopen.ops._common" in graph["miopen.ops.conv"]
    known = {"p", "p.a", "p.b", "p.c", "p.d"}
    source = ("TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from .b import B\n"
              "def f() -> None:\n    from . import c\n"
              "from p import d\nimport p.a\nimport os\n")
    assert _runtime_imports(source, "p.a", False, known) == {"p.b", "p.c", "p.d"}
    assert _runtime_imports("from .x import y\nfrom . import a\n", "p", True, known | {"p.x"}) == {"p.x", "p.a"}
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_op_imports_a_private_name_of_another_op() -> None:
    """What the ops share lives in ops/_common.py: an op module imports only public names of its sibling ops."""
    bad = []
    for path in sorted((RUNTIME / "ops").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module not in (None, "_common"):
                bad += [f"{path.name}: {node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
    assert not bad, bad


def test_one_definition_per_runtime_concept_name() -> None:
    """The run time's shared vocabulary has one home each (runtime/ and codegen/support/ together): the version
    type, the policy list and type, and the backend's error (`X = module.X`, a re-export, defines nothing)."""
    defined: dict[str, list[str]] = {}
    for module, path in _runtime_modules().items():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            alias = isinstance(node, ast.Assign) and isinstance(node.value, (ast.Name, ast.Attribute))
            names = ([node.name] if isinstance(node, ast.ClassDef) else [] if alias
                     else [t.id for t in node.targets if isinstance(t, ast.Name)] if isinstance(node, ast.Assign)
                     else [node.target.id] if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                     else [])
            for name in names:
                defined.setdefault(name, []).append(module)
    homes = {"Version": ["miopen._generated._selection"], "POLICIES": ["miopen._generated._selection"],
             "Policy": ["miopen.version"], "BackendError": ["miopen.errors"],
             "OpenCLBackend": ["miopen.opencl.backend"], "HipBackend": ["miopen.backend"]}
    assert {n: defined.get(n) for n in homes} == homes

"""The generator's import graph: folders by stage, each importing only the stages below it, and no circle.

The graph is read with `ast` from every module of codegen/ (the package `miogen`): module-level imports,
imports inside functions, and those under `if TYPE_CHECKING:` too (a circle the type checker needs is still a
circle), so a new module must sit in a stage folder and a new import must point down or inside its folder.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

CODEGEN = Path(__file__).resolve().parents[2] / "codegen"
#: codegen/support/ is not part of the generator: its modules are copied into the generated package
SUPPORT = CODEGEN / "support"

#: each stage (a folder of codegen/, or a module at its top) and the stages it may import, bottom to top;
#: a module may import its own folder too
STAGES: dict[str, tuple[str, ...]] = {
    "miogen": (),  # the package itself: GENERATOR_VERSION
    "base": ("miogen",),
    "spec": ("miogen", "base"),
    "parse": ("miogen", "base", "spec"),
    "semantics": ("miogen", "base", "spec"),
    "render": ("miogen", "base", "spec", "semantics"),
    "prove": ("miogen", "base", "spec", "semantics", "render"),
    "audit": ("miogen", "base", "spec", "semantics"),
    "workflow": ("miogen", "base", "spec", "parse", "semantics", "render", "prove"),
    "cli": ("miogen", "base", "spec", "parse", "semantics", "render", "prove", "audit", "workflow"),
    "__main__": ("miogen", "base", "cli"),
}


def _module(path: Path) -> str:
    parts = path.relative_to(CODEGEN).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) or "miogen"


def _sources() -> list[Path]:
    return sorted(p for p in CODEGEN.rglob("*.py") if SUPPORT not in p.parents)


def _imports(path: Path, known: set[str]) -> set[str]:
    return _imports_of(path.read_text(encoding="utf-8"), _module(path), path.name == "__init__.py", known)


def _imports_of(source: str, me: str, is_package: bool, known: set[str]) -> set[str]:
    """The miogen modules module `me` imports (by their name inside the package, e.g. `spec.model`), wherever
    the import statement sits."""
    package = me.split(".") if is_package else me.split(".")[:-1]
    if me == "miogen":
        package = []
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
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


def _graph() -> dict[str, set[str]]:
    known = {_module(p) for p in _sources()}
    return {_module(p): _imports(p, known) for p in _sources()}


def _stage(module: str) -> str:
    return module.split(".")[0]


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


def test_every_module_sits_in_a_stage() -> None:
    """Only the package, the command line and `python -m miogen` sit at the top; everything else in a folder."""
    missing = sorted(m for m in _graph() if _stage(m) not in STAGES)
    assert not missing, f"miogen modules outside the stage folders of tests/codegen/test_layers.py STAGES: {missing}"
    folders = {p.name for p in CODEGEN.iterdir() if p.is_dir() and (p / "__init__.py").is_file()} - {"support"}
    assert folders == {s for s in STAGES if (CODEGEN / s).is_dir()}


def test_stages_import_only_the_stages_below() -> None:
    bad = [f"{m} ({_stage(m)}/) imports {d} ({_stage(d)}/)" for m, deps in _graph().items() for d in sorted(deps)
           if _stage(d) != _stage(m) and _stage(d) not in STAGES[_stage(m)]]
    assert not bad, "\n".join(bad)


def test_the_stage_rules_have_no_circle() -> None:
    """STAGES is itself a ladder: a stage never (even indirectly) may import one that may import it."""
    order = list(STAGES)
    assert all(order.index(d) < order.index(s) for s, below in STAGES.items() for d in below)


def _circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of `graph` (a path that comes back to its start), or None."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                return path[path.index(d):] + [d]
            if d not in state and (found := visit(d)) is not None:
                return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m)) is not None:
            return found
    return None


def test_the_import_graph_has_no_circle() -> None:
    """No circle among the modules, counting imports in functions and under TYPE_CHECKING."""
    found = _circle(_graph())
    assert found is None, "import circle: " + " -> ".join(found or [])


def test_the_circle_finder_finds_circles() -> None:
    assert _circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _circle({"a": {"b"}, "b": set(), "c": {"c"}}) == ["c", "c"]
    assert _circle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_the_graph_reader_sees_imports() -> None:
    """The reader finds the edges the tests above rely on: relative, package-relative, absolute, in a function,
    under TYPE_CHECKING."""
    graph = _graph()
    assert {"render.planner", "render.package", "prove.stublib"} <= graph["prove.abi"]
    assert "audit.vocabulary" in graph["audit.compare"]
    assert "audit.run" in graph["audit"]
    assert "miogen" in graph["render.package"]  # from .. import GENERATOR_VERSION
    assert "workflow.upgrade" in graph["workflow.commands"]  # imported in a function
    known = {"spec.x", "spec.y", "base.z", "base", "miogen"}
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .x import X\n"
              "def f() -> None:\n    from ..base import z\n    import miogen.spec.y\n")
    assert _imports_of(source, "spec.m", False, known) == {"spec.x", "spec.y", "base", "base.z"}


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
    homes = {"Shape": ["spec.model"], "Check": ["audit.compare"], "Version": ["spec.releases"],
             "Releases": ["spec.releases"]}
    assert {n: defined.get(n) for n in homes} == homes


def test_the_architecture_page_lists_these_stages() -> None:
    """docs/architecture.md's numbered list of stages is STAGES (the package itself aside), each with the
    folder (or module) it is."""
    page = (CODEGEN.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = page.split("## Stages of the generator", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\d+\. `codegen/([\w.]+?)(?:/|\.py)`", section, re.M)
    assert listed == [s for s in STAGES if s != "miogen"]
    for stage, below in STAGES.items():
        if stage == "miogen":
            continue
        line = re.search(rf"^\d+\. `codegen/{re.escape(stage)}(?:/|\.py)`.*$", section, re.M)
        assert line is not None
        said = re.search(r"imports: ([^.]*)", line.group(0))
        named = set(re.findall(r"`(\w+)`", said.group(1))) if said else set()
        assert named == set(below) - {"miogen"}, f"{stage}: the page says it imports {sorted(named)}"


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

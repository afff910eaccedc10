"""The generator's import graph: no circles, and no module imports one of a higher layer.

The graph is read with `ast` from every module of codegen/ (imports inside functions count too; those under
`if TYPE_CHECKING:` do not run and do not count),
so a new module must be given a layer here, and a new import must point down or sideways.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CODEGEN = Path(__file__).resolve().parent.parent / "codegen"

#: bottom to top; a module may import modules of its own layer or of lower ones
LAYERS: tuple[tuple[str, ...], ...] = (
    # support/: the run-time modules render copies verbatim into generated/ (they import no generator module)
    ("support",),
    ("codegen", "errors", "model", "reserved", "gcpolicy"),
    ("escape", "files", "ctypes_map", "literals", "naming", "validate", "yamlread", "transaction", "clang_env", "forms",
     "cppsrc", "doc"),
    ("spec_io", "target", "roles", "diff", "parser"),
    ("annotate",),
    ("direct", "plans", "docstrings", "planner", "stubvalues", "jinja_env"),
    ("render", "stublib", "layout", "cxx", "callthrough", "audit"),
    ("abi",),
    ("cli", "__main__"),
)


def _module(path: Path) -> str:
    parts = path.relative_to(CODEGEN).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) or "codegen"


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(path: Path) -> set[str]:
    """The codegen modules `path` imports (by their name inside codegen, e.g. `audit.notes`)."""
    me = _module(path)
    package = me.split(".") if path.name == "__init__.py" else me.split(".")[:-1]
    if me == "codegen":
        package = []
    known = {_module(p) for p in CODEGEN.rglob("*.py")}
    out: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If) and _is_type_checking(block.test)
                   for stmt in block.body for n in ast.walk(stmt)}
    for node in ast.walk(tree):
        if id(node) in typing_only:  # `if TYPE_CHECKING:` imports are for the type checker, not run
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base, module = package[: len(package) - (node.level - 1)], node.module
            elif node.module and node.module.split(".")[0] == "codegen":
                base, module = [], node.module.partition(".")[2] or None
            else:
                continue
            target = ".".join(base + ([module] if module else []))
            if target in known:
                out.add(target)
            elif target.split(".")[0] != "support":  # support/: a rendered module (`_target`, `_releases`)
                out.add("codegen")                       # beside the copied ones in generated/

            for a in node.names:  # `from . import x`: x is a module
                sub = ".".join(filter(None, (target, a.name)))
                if sub in known:
                    out.add(sub)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("codegen."):
                    out.add(a.name.removeprefix("codegen."))
    out.discard(me)
    return out


def _graph() -> dict[str, set[str]]:
    return {_module(p): _imports(p) for p in sorted(CODEGEN.rglob("*.py"))}


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
    assert not missing, f"codegen modules with no layer in tests/test_layers.py LAYERS: {missing}"


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
    assert "codegen" in graph["render"]  # from . import GENERATOR_VERSION

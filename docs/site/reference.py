"""The API reference pages: the typed API one page per op family (MIOpen's Doxygen group), each function with the
releases it exists in, and one page per public module of the runtime. Everything is derived from the committed
specs and the installed package; nothing lists releases, groups or modules by hand."""

from __future__ import annotations

import importlib
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from miogen.semantics import naming
from miogen.spec import spec_io
from miogen.spec.releases import Releases, Version
from miogen.spec.target import target_for

REPO = Path(__file__).resolve().parents[2]
SPECS = REPO / "specs" / "miopen"
#: how a group's page is titled where the group name alone says too little (any other group: its own name)
TITLES = {"convolutions": "Convolutions", "rnn": "RNNs", "fusion": "Fusion plans", "find2": "Find 2.0: problems and "
          "solutions", "tensor": "Tensors", "handle": "Handles", "tensorreduce": "Tensor reduction",
          "lossfunction": "Loss functions", "lrn": "LRN", "batchnorm": "Batch normalization", "graphapi": "Graph API",
          "sgd": "SGD", "mha": "Multi-head attention", "other": "Other functions"}


@dataclass
class Entry:
    """One typed-API function: its Python and C names, its family and the releases that declare it."""

    py: str
    c: str
    group: str
    releases: list[Version]
    beta: list[Version]


def ranges(have: list[Version], every: list[Version]) -> str:
    """The releases `have` as runs of consecutive committed releases: '2.15.0 – 3.3.0, 3.5.1'."""
    runs: list[list[Version]] = []
    for i, v in enumerate(every):
        if v not in have:
            continue
        if runs and every.index(runs[-1][-1]) == i - 1:
            runs[-1].append(v)
        else:
            runs.append([v])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]} – {r[-1]}" for r in runs)


def releases_line(entry: Entry, every: list[Version]) -> str:
    text = f"**Releases:** {ranges(entry.releases, every)}"
    if entry.releases == every:
        text += " (every committed release)"
    if entry.beta:
        text += f"; beta API (the header's beta macro) in {ranges(entry.beta, every)}"
    return text + "."


def entries(specs: Path = SPECS) -> tuple[list[Entry], list[Version]]:
    """Every function of the committed specs that the typed API has, newest release's order first."""
    releases = Releases.of(specs)
    prefix = target_for(specs.name).function_prefix
    found: dict[str, Entry] = {}
    for version in reversed(releases.versions):
        module = importlib.import_module(f"miopen._generated.{version.module}.api")
        for f in spec_io.load(releases.paths[version]).functions:
            py = naming.function_name(f.name, prefix)
            if not hasattr(module, py):
                continue
            entry = found.setdefault(f.name, Entry(py, f.name, (f.group or "other").lower(), [], []))
            entry.releases.insert(0, version)
            if f.beta:
                entry.beta.insert(0, version)
    return list(found.values()), releases.versions


def _title(text: str, mark: str = "=") -> str:
    return f"{text}\n{mark * len(text)}\n"


def _public_modules() -> list[str]:
    """The runtime's public modules (`miopen.x`, `miopen.ops.y`, ...: no part starting with `_`), sorted."""
    root = REPO / "runtime"
    out = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts and not any(p.startswith("_") for p in parts):
            out.append(".".join(("miopen", *parts)))
    return out


def stage(src: Path, specs: Path = SPECS) -> list[str]:
    """Write the reference pages under `src/reference/`; returns their names (relative to `src`)."""
    ref = src / "reference"
    ref.mkdir(parents=True, exist_ok=True)
    found, every = entries(specs)
    families: dict[str, list[Entry]] = defaultdict(list)
    for e in found:
        families[e.group].append(e)
    written = []
    typed = []
    for group in sorted(families, key=lambda g: (g == "other", TITLES.get(g, g).lower())):
        name = f"typed-{group}"
        body = [_title(TITLES.get(group, group)),
                f"The typed API's functions of MIOpen's ``{group}`` group, as ``miopen.<name>``. Each docstring gives "
                "MIOpen's own description of the function and of each parameter (where the release's header has "
                "one), then what the wrapper takes and returns.\n"]
        for e in families[group]:
            body.append(f".. autofunction:: miopen.{e.py}\n\n   ``{e.c}``. {releases_line(e, every)}\n")
        (ref / f"{name}.rst").write_text("\n".join(body), encoding="utf-8")
        typed.append(name)
    runtime_pages, ops_pages = [], []
    for module in _public_modules():
        name = module.replace(".", "-")
        body = [_title(f"``{module}``"), f".. automodule:: {module}\n   :members:\n"]
        (ref / f"{name}.rst").write_text("\n".join(body), encoding="utf-8")
        (ops_pages if module.startswith("miopen.ops.") else runtime_pages).append(name)
    index = [_title("API reference"),
             "The typed API (``miopen.<name>``: one function per C function of ``miopen.h``, one page per op family) "
             "and the handwritten runtime (``miopen.ops`` and the modules it builds on). The releases listed "
             f"are the committed ones: {ranges(every, every)}.\n",
             _toctree("The typed API, by op family", typed), _toctree("The runtime's ops", ops_pages),
             _toctree("The runtime", runtime_pages)]
    (ref / "index.rst").write_text("\n".join(index), encoding="utf-8")
    written = [f"reference/{n}" for n in ("index", *typed, *ops_pages, *runtime_pages)]
    return written


def _toctree(caption: str, names: list[str]) -> str:
    return "\n".join([".. toctree::", f"   :caption: {caption}", "   :maxdepth: 1", "", *(f"   {n}" for n in names), ""])

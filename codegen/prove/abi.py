"""ABI proof (`miogen abi-check`): a gcc-compiled layout probe (codegen/prove/layout.py) and a stub library
(codegen/prove/stublib.py) built from a spec against a real header, and the call-through driver
(codegen/prove/callthrough.py) pushing every typed wrapper through the stub."""

from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path


from ..base.record import record
from .callthrough import CallResult, run_call_through
from .cxx import compile_cpp
from .layout import check_layout, probe_source
from ..spec.model import Spec
from .stublib import stub_source
from ..spec.releases import Version
from ..spec.target import Target


@record(frozen=False)
class Report:
    library: str
    version: Version
    layout_checked: int
    layout_problems: list[str]
    calls: list[CallResult]

    @property
    def ok(self) -> bool:
        return not self.layout_problems and all(not c.problems for c in self.calls)

    def record(self) -> str:
        """The one-line result a release's record keeps (specs/<target>/releases.yaml `abi`)."""
        bad = sum(1 for c in self.calls if c.problems)
        return (f"{self.layout_checked} layout facts, {len(self.layout_problems)} mismatches; "
                f"{len(self.calls)} functions called through, {bad} failing")

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

    from ..semantics.annotations import load_annotations
    from ..semantics.resolve import resolve
    from ..base.files import write_tree
    from ..render.planner import plan
    from ..render.package import render

    ann = load_annotations(ann_path)
    sem = resolve(spec, ann, prefix=target.function_prefix)
    pl = plan(spec, sem, target, "# abi-check build")
    pkg_name = f"miogen_abi_{spec.version.module}_{id(workdir) & 0xffff:x}"
    write_tree(render(pl), workdir / pkg_name)
    banner = f"miogen abi-check of {target.display_name} {spec.version}"
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
    return Report(target.display_name, spec.version, len(layout_out.splitlines()), layout, calls)

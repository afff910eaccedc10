"""g++ a generated C++ source (a layout probe or a stub library) against a header and the target's shims."""

from __future__ import annotations

import subprocess
from pathlib import Path


from ..base.errors import CodegenError
from ..spec.target import Target


def compile_cpp(source: str, out: Path, target: Target, shared: bool, includes: tuple[Path, ...] = (),
                beta: bool = True) -> Path:
    """g++ the source (against the header and the target's shims); raises with the compiler's output."""
    src = out.with_suffix(".cpp")
    src.write_text(source, encoding="utf-8")
    cmd = ["g++", "-std=c++17", "-O0", "-w", "-o", str(out), str(src)]
    cmd += ["-shared", "-fPIC"] if shared else []
    for inc in includes:
        cmd += ["-I", str(inc)]
    cmd += ["-idirafter", str(target.shim_dir)]
    cmd += [f"-D{d}" for d in target.default_defines]
    if beta:
        cmd += [f"-D{target.beta_macro}"]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise CodegenError(f"g++ failed for {src}:\n{res.stderr[-4000:]}")
    return out

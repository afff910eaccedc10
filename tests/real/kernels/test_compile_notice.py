"""The compile notice (runtime/kernelcache.py) on a real MIOpen: a program's first op on MIOpen 2.17.0's OpenCL build
(../shared/real-miopen-ocl) on PoCL, with MIOpen's kernel cache and user database in folders of the test's own.
With the cache cold the program prints the notice once, naming that folder, and MIOpen then compiles into it; a
later program on the same cache, and one with MIOGEN_COMPILE_NOTICE=0 on a cold cache, print nothing of it. Each
program is a process of its own (the notice is once per process). Skips without the library, pyopencl or a device
(fails under MIOGEN_REQUIRE_REAL_MIOPEN_OCL=1)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ...helpers import REPO
from .test_real_miopen_ocl import LIB, kernel_cache

#: a user's first op: relu through the runtime on pyopencl arrays of the OpenCL backend's default queue
_PROGRAM = """
import numpy as np
import pyopencl.array as cla

import miopen
from miopen.ops import activation

q = miopen.backend.opencl().default_queue()
x = np.arange(-8, 8, dtype=np.float32).reshape(1, 1, 4, 4)
xa, ya = cla.to_device(q, x), cla.zeros(q, x.shape, np.float32)
activation.activation_forward(xa, ya, "relu")
q.finish()
print("relu right" if (ya.get(q) == np.maximum(x, 0)).all() else "relu WRONG")
"""


def _first_op(tmp_path: Path, cache: Path, **env: str) -> list[str]:
    """Run the program with MIOpen's kernel cache in `cache` (PoCL's own cache is the machine's, so that a cold
    MIOpen cache does not mean a slow PoCL build); the lines of the notice it printed."""
    path = LIB.library_path()  # skips (or fails when required) without a usable library
    base = {k: v for k, v in os.environ.items() if not k.startswith("MIOPEN_") and k != "MIOGEN_COMPILE_NOTICE"}
    r = subprocess.run([sys.executable, "-c", _PROGRAM], cwd=REPO, capture_output=True, text=True, timeout=600,
                       env={**base, "MIOPEN_LIBRARY": str(path), "MIOPEN_CUSTOM_CACHE_DIR": str(cache),
                            "MIOPEN_USER_DB_PATH": str(tmp_path / "db"),
                            "POCL_CACHE_DIR": str(kernel_cache() / "pocl"), "TMPDIR": str(tmp_path), **env})
    assert r.returncode == 0 and r.stdout.strip() == "relu right", r.stdout + r.stderr[-3000:]
    return [line for line in r.stderr.splitlines() if "MIOGEN_COMPILE_NOTICE" in line]


def test_a_cold_cache_is_noticed_once_and_a_filled_one_is_not(tmp_path: Path) -> None:
    from miopen.kernelcache import is_empty

    cache = tmp_path / "cache"
    notice = _first_op(tmp_path, cache)
    assert len(notice) == 1, notice
    assert f"MIOpen's kernel cache ({cache}) is empty" in notice[0] and "PoCL" in notice[0], notice
    assert "MIOGEN_COMPILE_NOTICE=0 silences this" in notice[0], notice
    assert not is_empty(cache), f"no kernel database in {cache}: {sorted(p.name for p in cache.glob('*'))}"
    assert _first_op(tmp_path, cache) == []  # the kernel is cached: nothing to say


def test_the_switch_silences_it_on_a_cold_cache(tmp_path: Path) -> None:
    from miopen.kernelcache import is_empty

    cache = tmp_path / "cache"
    assert _first_op(tmp_path, cache, MIOGEN_COMPILE_NOTICE="0") == []
    assert not is_empty(cache)  # it was cold: MIOpen compiled into it

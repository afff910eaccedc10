"""The strided-view table (issue 29 item 2): each op of the runtime on each layout of x and y, on MIOpen's OpenCL
build on PoCL against numpy (tests/real/ocl/strided_views.py, one forked process per cell), recorded in
docs/strided-views.md (byte for byte; MIOGEN_UPDATE_GOLDEN=1 rewrites it). No cell may be wrong without an error.
Skips without the library, pyopencl or a device (fails under MIOGEN_REQUIRE_REAL_MIOPEN_OCL=1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ...helpers import REPO
from ...real.ocl import strided_views
from ...real.ocl.plan import FIND_ENV
from .test_real_miopen_ocl import LIB, kernel_cache

DOC = REPO / "docs" / "strided-views.md"
HEAD = """# Strided views on MIOpen's OpenCL backend

What each op of the runtime (`miopen.ops`) does with each layout of its tensors, on MIOpen 2.17.0's OpenCL build
computing on PoCL, against numpy: **right**, **refused** (the runtime raises a `ShapeError` naming the tensor and
its strides: MIOpen's kernels gave wrong results for that layout, see `runtime/quirks.py`), **error** (MIOpen
returned an error status) or **wrong** (a wrong result, or a write outside y's view, without an error: never
allowed). Dims (2, 3, 4, 6); pooling 2x2 with stride 2. Layouts: packed; channels-last; stepped (every other
element of rows of a wider buffer, with padded rows and planes); broadcast x (a stride of 0 for N); x packed
and y channels-last. Each cell runs in a process of its own (MIOpen's kernel cache is keyed without strides).
Written by `tests/real/kernels/test_strided_views.py` (`MIOGEN_UPDATE_GOLDEN=1` rewrites it).

"""


def test_no_op_is_wrong_for_any_view_and_the_table_is_current(tmp_path: Path) -> None:
    path = LIB.library_path()  # skips (or fails when required) without a usable library
    cache = kernel_cache()
    env = {**os.environ, **FIND_ENV, "MIOPEN_LIBRARY": str(path), "MIOPEN_USER_DB_PATH": str(cache / "db"),
           "MIOPEN_CUSTOM_CACHE_DIR": str(cache / "cache"), "POCL_CACHE_DIR": str(cache / "pocl"),
           "TMPDIR": str(tmp_path)}
    r = subprocess.run([sys.executable, "-m", "tests.real.ocl.strided_views", "--all"], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    results = {(op, lay): outcome for op, lay, outcome in json.loads(r.stdout)}
    assert set(results) == {(op, lay) for op in strided_views.OPS for lay in strided_views.LAYOUTS}
    bad = {case: outcome for case, outcome in results.items() if outcome not in ("right", "refused", "error")}
    assert not bad, f"wrong without an error (or the case died): {bad}"
    assert all(results[(op, "packed")] == "right" for op in strided_views.OPS)
    text = HEAD + strided_views.markdown(results)
    if os.environ.get("MIOGEN_UPDATE_GOLDEN") == "1":
        DOC.write_text(text)
    assert DOC.read_text() == text, "docs/strided-views.md is stale: run with MIOGEN_UPDATE_GOLDEN=1"

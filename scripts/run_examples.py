"""`make examples`: every OpenCL example (examples/ocl_*.py) run with this interpreter (the venv's) on the OpenCL
build of ../shared/real-miopen-ocl, which is unpacked (checked by its sha256) into ~/.cache/miogen on first use.
Prints the MIOPEN_LIBRARY it uses, then one line per example; exits non-zero when one fails."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.real_miopen import OPENCL  # noqa: E402  (the one place that knows the shared builds and their sha256)

#: what PoCL and the OpenCL build need from Debian: the one list, which .ci/run installs and the README names
PACKAGES = " ".join((REPO / "scripts" / "opencl-packages.txt").read_text(encoding="utf-8").split())


def main() -> int:
    path, why = OPENCL.find()
    if path is None:
        print(f"make examples: {why}", file=sys.stderr)
        return 1
    env = {**os.environ, "MIOPEN_LIBRARY": str(path), "MIOPEN_FIND_MODE": "NORMAL"}
    print(f"make examples: MIOPEN_LIBRARY={path} MIOPEN_FIND_MODE=NORMAL {sys.executable} examples/<name>.py")
    failed = 0
    for example in sorted((REPO / "examples").glob("ocl_*.py")):
        start = time.monotonic()
        r = subprocess.run([sys.executable, str(example)], env=env, check=False)
        took = f"{time.monotonic() - start:.0f} s"
        if r.returncode == 0:
            print(f"make examples: {example.name} ok ({took})")
        else:
            failed += 1
            print(f"make examples: {example.name} FAILED (exit status {r.returncode}, {took}); without an OpenCL "
                  f"device: apt-get install {PACKAGES}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

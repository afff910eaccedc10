"""Parse a real miopen.h to a spec in a fresh process, as a user would; print wall times.

Target: the 3.3.0 header (with the beta API) in <= 0.5 s wall on a 2-core machine.
Usage: python benchmarks/parse_speed.py [HEADER] [--version X.Y.Z] [--runs N]
Without HEADER it parses the fixture header (the real ones are not committed).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("header", nargs="?", type=Path, default=REPO / "tests/fixtures/include/miopen/miopen.h")
    ap.add_argument("--version", default=None, help="MIOpen version of HEADER (needed without a version.h)")
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "codegen", "parse", str(args.header), "--beta", "-o", f"{tmp}/spec.yaml"]
        if args.version:
            cmd += ["--miopen-version", args.version]
        subprocess.run(cmd, cwd=REPO, check=True, capture_output=True)  # warm the page cache once
        for _ in range(args.runs):
            t0 = time.perf_counter()
            subprocess.run(cmd, cwd=REPO, check=True, capture_output=True)
            times.append(time.perf_counter() - t0)
        lines = Path(f"{tmp}/spec.yaml").read_text().count("\n")
    print(f"header: {args.header}")
    print(f"spec lines: {lines}")
    print(f"parse -> spec, fresh process, {args.runs} runs: median {statistics.median(times):.3f} s, "
          f"min {min(times):.3f} s, max {max(times):.3f} s (target <= 0.5 s for the 3.3.0 header)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

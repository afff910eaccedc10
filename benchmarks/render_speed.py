"""Rendering speed: generated/ for one release (fresh process), and parse + render of all seven releases.

Targets: one release <= 1 s; parse + render of all seven <= 5 s.
Usage: python benchmarks/render_speed.py [--headers DIR]
DIR holds the real headers as <tag>/miopen.h (rocm-5.0.0 ... develop, mono); they are not committed.
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
sys.path.insert(0, str(REPO))

RELEASES = {"rocm-5.0.0": "2.15.0", "rocm-5.7.0": "2.20.0", "rocm-6.0.0": "3.0.0", "rocm-6.1.0": "3.1.0",
            "rocm-6.2.0": "3.2.0", "develop": "3.3.0", "mono": "3.5.2"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--headers", type=Path, default=Path("/tmp/miopen-headers"))
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    specs = REPO / "specs" / "miopen"
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "codegen", "render", str(specs / "3.5.2.yaml"), "--history", str(specs),
               "-o", f"{tmp}/out"]
        for _ in range(args.runs):
            t0 = time.perf_counter()
            subprocess.run(cmd, cwd=REPO, check=True, capture_output=True)
            times.append(time.perf_counter() - t0)
    print(f"render generated/ for MIOpen 3.5.2, fresh process, {args.runs} runs: median "
          f"{statistics.median(times):.3f} s (target <= 1 s)")

    from codegen.annotate import load_annotations
    from codegen.parser import ParseOptions, parse_header
    from codegen.render import plan, render
    from codegen.target import load_target

    target = load_target()
    ann = load_annotations(specs / "annotations.yaml")
    missing = [t for t in RELEASES if not (args.headers / t / "miopen.h").exists()]
    if missing:
        print(f"parse + render of all seven: skipped, headers missing under {args.headers}: {', '.join(missing)}")
        return 0
    t0 = time.perf_counter()
    for tag, version in RELEASES.items():
        spec = parse_header(args.headers / tag / "miopen.h", target, ParseOptions(beta=True), version)
        render(plan(spec, ann, target, "# bench"))
    total = time.perf_counter() - t0
    print(f"parse + render of all seven releases, one process: {total:.3f} s (target <= 5 s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""`import miopen` cost over a bare interpreter (median of fresh processes). Target <= 50 ms."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

# as installed: bytecode cached (an install compiles it; PYTHONDONTWRITEBYTECODE would hide that)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _median(code: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, env=ENV)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    runs = 21
    _median("import miopen", 2)  # warm the page cache and the bytecode cache
    bare = _median("pass", runs)
    full = _median("import miopen", runs)
    print(f"bare interpreter {bare * 1000:.1f} ms; with `import miopen` {full * 1000:.1f} ms; "
          f"import miopen costs {(full - bare) * 1000:.1f} ms (target <= 50 ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

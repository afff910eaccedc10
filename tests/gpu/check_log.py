"""Run one check of the numeric suite in a worker with MIOpen's log on, and print the log lines that say what
failed (`MIOPEN_LOG_LEVEL=5`: errors, warnings and each kernel launch's sizes): a probe for a row that fails.

  device tool: run(command="bash tests/gpu/ocl_nvidia.sh --module tests.gpu.check_log v330 ocl.checks_conv:convolution
               [CACHE]", carry=["device_carry/ocl"])   (CACHE: MIOpen's kernel caches and databases to use, e.g. a
               suite run's /tmp/miogen-ocl/cache330; default: the worker's own, empty)
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from tests.real.client import Worker, WorkerError
from tests.real.ocl.plan import FIND_ENV

#: build -> (the variable naming its library, the environment it needs beyond FIND_ENV)
BUILDS = {"217": ("MIOGEN_REAL_MIOPEN_OCL", {}),
          "v330": ("MIOGEN_REAL_MIOPEN_OCL_330", {"MIOPEN_DEBUG_ENABLE_DEPRECATED_SOLVERS": "1"})}
SAYS = re.compile(r"error|fail|warning|refused|exception|local_work_dim", re.I)


def main() -> int:
    build, check = sys.argv[1], sys.argv[2]
    cache = Path(sys.argv[3]) if len(sys.argv) > 3 else None
    var, env = BUILDS[build]
    w = Worker(Path(os.environ[var]), None, cache=cache, extra_env={**FIND_ENV, **env, "MIOPEN_LOG_LEVEL": "5",
                                                          "MIOPEN_ENABLE_LOGGING": "1"})
    try:
        try:
            result = w.call(check, timeout=240.0)
            print(f"{check}: {type(result).__name__}")
        except WorkerError as exc:
            print(f"{check}: {exc.type_name}: {exc.message[:400]}")
        lines = w.stderr_path.read_text(errors="replace").splitlines()
    finally:
        w.close()
        w.cleanup()
    said = [line for line in lines if SAYS.search(line)]
    print(f"{len(lines)} log lines, {len(said)} of them saying:")
    for line in said[:60]:
        print(line[:300])
    return 0


if __name__ == "__main__":
    sys.exit(main())

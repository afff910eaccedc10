"""How the numeric checks are run (one home for the local suite and tests/gpu/ocl_suite.py): the environment Find
needs on this backend and the checks that need a worker of their own."""

from __future__ import annotations

#: what Find needs on this backend (docs/real-miopen.md): NORMAL mode (the default skips every OpenCL solver), no
#: FFT solver (wrong results here), no 11×11 direct solver in compile threads (it aborts the process); 3.x's legacy
#: fusion plans search likewise only in NORMAL mode (its default FAST finds no fusion solver: status 8)
FIND_ENV = {"MIOPEN_FIND_MODE": "NORMAL", "MIOPEN_DEBUG_CONV_FFT": "0", "MIOPEN_DEBUG_CONV_DIRECT_OCL_FWD11X11": "0",
            "MIOPEN_COMPILE_PARALLEL_LEVEL": "1", "MIOPEN_FIND_MODE_FUSION": "NORMAL"}
#: checks that need a worker of their own: (fresh caches, environment)
SPECIAL = {"ocl.checks_misc:solution_count_before_find": (True, FIND_ENV),
           "ocl.checks_misc:find_default_mode": (True, {k: v for k, v in FIND_ENV.items() if k != "MIOPEN_FIND_MODE"})}
#: checks that run a Find in NORMAL mode (on NVIDIA's OpenCL it did not answer): a worker of their own, a timeout
FINDS = ("ocl.checks_conv:convolution", "ocl.checks_runtime:conv_ops")
#: checks run last, each in a worker of its own (a failed kernel may break the device's queue)
LAST = ("ocl.checks_conv:conv_11x11",)

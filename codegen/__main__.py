"""The `miogen` command: `python -m miogen`, and the installed `miogen` script (`script`)."""

import atexit
import os
import sys
from typing import NoReturn

from .base import gcpolicy

#: the generator's third-party imports -> the distribution that provides each (pyproject.toml's dependencies)
NEEDED = {"jinja2": "jinja2", "markupsafe": "jinja2 (its markupsafe)", "yaml": "pyyaml", "clang": "libclang"}


def command() -> int:
    """The command line in a process of its own: the collector's batch thresholds from the start (importing the
    generator makes tens of thousands of objects that live to the end), then `cli.run`. A missing dependency is
    one line naming the package to install (exit status 2), not a traceback."""
    gcpolicy.for_command()
    try:
        from .cli import run

        return run()
    except ImportError as exc:
        top = (exc.name or "").partition(".")[0]
        if top not in NEEDED:
            raise
        print(f"miogen: the Python package {NEEDED[top]!r} is missing (import {top} failed: {exc}); install it "
              f"with `pip install {NEEDED[top].split()[0]}`, or reinstall miogen with its dependencies", file=sys.stderr)
        return 2


def end(status: int) -> NoReturn:
    """End the process with `status` once its output is flushed and its exit handlers have run, without the
    interpreter's teardown, which frees every module and object one by one (about 1% of a parse: mypy's
    `hard_exit` does the same). Where the interpreter has no way to run the exit handlers first, an ordinary exit."""
    run_handlers = getattr(atexit, "_run_exitfuncs", None)
    if run_handlers is None:  # pragma: no cover - CPython has it
        raise SystemExit(status)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can reach it
            pass
    run_handlers()
    os._exit(status)


def script() -> NoReturn:
    """The installed `miogen` script: `command`, then `end`."""
    end(command())


if __name__ == "__main__":
    end(command())

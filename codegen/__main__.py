"""The `miogen` command: `python -m miogen`, and the installed `miogen` script (`command`)."""

import sys

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


if __name__ == "__main__":
    raise SystemExit(command())

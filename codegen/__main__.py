"""The `miogen` command: `python -m miogen`, and the installed `miogen` script (`command`)."""

from . import gcpolicy


def command() -> int:
    """The command line in a process of its own: the collector's batch thresholds from the start (importing the
    generator makes tens of thousands of objects that live to the end), then `cli.run`."""
    gcpolicy.for_command()
    from .cli import run

    return run()


if __name__ == "__main__":
    raise SystemExit(command())

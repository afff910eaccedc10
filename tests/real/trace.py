"""The worker's record of C calls, in a module of its own so that the worker (run as __main__) and the checks
share one list: (C function, module that called it) for every call through the tracing library."""

from __future__ import annotations

CALLS: list[tuple[str, str]] = []
#: C function -> the status codes it returned since the last request (the coverage page's per-function outcome)
STATUSES: dict[str, set[int]] = {}


def count(fn: str, since: int = 0) -> int:
    """How often `fn` was called since position `since` of CALLS."""
    return sum(1 for name, _ in CALLS[since:] if name == fn)


def mark() -> int:
    return len(CALLS)


#: the trace file the parent reads after a death (set by the worker)
FD = -1


def enter(fn: str) -> None:
    if FD >= 0:
        import os

        os.write(FD, f"> {fn}\n".encode())


def leave(fn: str, result: object) -> None:
    if FD >= 0:
        import os

        os.write(FD, f"< {fn} {result if isinstance(result, int) else ''}\n".encode())


def note(text: str) -> None:
    """A progress line ('# text'): after a death the parent reads the last one to know which case was running."""
    if FD >= 0:
        import os

        os.write(FD, f"# {text}\n".encode())

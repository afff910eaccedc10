"""The worker's record of C calls, in a module of its own so that the worker (run as __main__) and the checks
share one list: (C function, module that called it) for every call through the tracing library."""

from __future__ import annotations

CALLS: list[tuple[str, str]] = []


def count(fn: str, since: int = 0) -> int:
    """How often `fn` was called since position `since` of CALLS."""
    return sum(1 for name, _ in CALLS[since:] if name == fn)


def mark() -> int:
    return len(CALLS)

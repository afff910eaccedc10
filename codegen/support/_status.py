"""Status codes: a failing status becomes the matching exception (the errors module sets the hook)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

# --------------------------------------------------------------------------- status codes

StatusHook = Callable[[int, str, Mapping[str, object]], None]
_raise_hook: list[StatusHook] = []


def raise_status(status: int, fn: str, args: Mapping[str, object]) -> None:
    """Turn a failing status into the matching exception (set by the errors module)."""
    _raise_hook[0](status, fn, args)


def summarize(args: Mapping[str, object]) -> str:
    parts = []
    for name, value in args.items():
        text = repr(value)
        parts.append(f"{name}={text if len(text) <= 60 else text[:57] + '...'}")
    return ", ".join(parts)

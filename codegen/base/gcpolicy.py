"""The garbage collector's thresholds while miogen parses, loads or renders, and in the `miogen` command's process.

A spec load or a render makes hundreds of thousands of small objects that live until the command
ends; with the default thresholds the collector rescans them every few hundred allocations, a third
of a render's time. Cycles are still collected, in larger steps, and the caller's thresholds are put
back afterwards.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: thresholds (generation 0, 1, 2) while in `batch()`
BATCH_THRESHOLDS = (100_000, 50, 50)


@contextmanager
def batch() -> Iterator[None]:
    """Run a block with BATCH_THRESHOLDS; the thresholds before it are restored after it."""
    before = gc.get_threshold()
    gc.set_threshold(*BATCH_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)


def for_command() -> None:
    """BATCH_THRESHOLDS for the rest of this process: the `miogen` command's, which ends with its command (its
    imports and what it makes live to the end; `cli.run` freezes them before the shutdown)."""
    gc.set_threshold(*BATCH_THRESHOLDS)

"""Handles under threads: no handle is destroyed while a typed call through it is in flight, close()
is idempotent under races (one destroy, no "already closed" from close()), a close from a callback of
a call in flight through the same handle is refused, not deadlocked. Driven through the stub
libMIOpen, whose log (one line per finished call, in order) is the witness: no call may carry a
handle after that handle's destroy line.

MIOGEN_RACE_CALLS scales the calls per thread (default 10,000)."""

from __future__ import annotations

import itertools
import os
import random
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ..conftest import Libs

THREADS = 8
CALLS = int(os.environ.get("MIOGEN_RACE_CALLS", "10000"))
FIRST = 0x100000  # descriptor addresses: from here, 16 apart (no other logged value reaches them)


def _tokens(value: str) -> Iterator[int]:
    for part in value.strip("[]()").replace(";", ",").split(","):
        if part.isdigit():
            yield int(part)


def _witness(libs: Libs, created: set[int]) -> dict[str, int]:
    """Replay the stub's log: every destroy of a created address exactly once, and no call after it."""
    destroyed: set[int] = set()
    counts: Counter[str] = Counter()
    late = twice = 0
    for entry in libs.log():
        name = entry[""]
        counts["calls"] += 1
        if name == "miopenDestroyTensorDescriptor":
            addr = int(entry["tensorDesc"])
            twice += addr in destroyed
            destroyed.add(addr)
            counts["destroys"] += 1
            continue
        used = {t for k, v in entry.items() if k for t in _tokens(v) if t in created}
        late += bool(used & destroyed)
    counts["calls after destroy"] = late
    counts["destroyed twice"] = twice
    counts["never destroyed"] = len(created - destroyed)
    return dict(counts)


def _stress(libs: Libs, threads: int, calls: int, seed: int) -> tuple[dict[str, int], list[BaseException]]:
    import miopen

    next_addr = itertools.count(FIRST, 16).__next__  # atomic under the GIL
    created: set[int] = set()

    def new_desc() -> Any:
        addr = next_addr()
        created.add(addr)
        return miopen.TensorDescriptor.from_address(addr, owned=True)

    pool = [new_desc() for _ in range(24)]
    handle = miopen.Handle.from_address(0x5000)  # borrowed: never destroyed
    rnn = miopen.RNNDescriptor.from_address(0x6000)
    conv = miopen.ConvolutionDescriptor.from_address(0x6100)
    f32 = miopen.DataType.miopenFloat
    errors: list[BaseException] = []
    closed_seen = Counter[int]()
    done = Counter[int]()  # calls that returned (a close of a closed object included)
    through = Counter[int]()  # of those, calls that reached the library through a descriptor (not closes)
    barrier = threading.Barrier(threads)

    def worker(k: int) -> None:
        rng = random.Random(seed * 100 + k)
        barrier.wait()
        for _ in range(calls):
            i = rng.randrange(len(pool))
            d = pool[i]
            r = rng.random()
            try:
                through[k] += r >= 0.02
                if r < 0.015:
                    d.close()  # others may be calling through it, or closing it too
                    pool[i] = new_desc()
                elif r < 0.02:
                    miopen.destroy_tensor_descriptor(d)  # the generated destroy wrapper
                    pool[i] = new_desc()
                elif r < 0.35:
                    miopen.set_4d_tensor_descriptor(d, f32, 1, 2, 3, 4)
                elif r < 0.6:
                    miopen.get_tensor_descriptor_size(d)
                elif r < 0.8:  # three descriptors in one call
                    miopen.convolution_forward(handle, 1.0, d, 0x1000, pool[rng.randrange(len(pool))], 0x2000, conv, 0,
                                               0.0, d, 0x3000, None, 0)
                else:  # an array of descriptors
                    miopen.get_rnn_workspace_size(handle, rnn, [d, pool[rng.randrange(len(pool))]])
                done[k] += 1
            except ValueError as exc:
                if "closed" not in str(exc):
                    errors.append(exc)
                closed_seen[k] += 1
                through[k] -= r >= 0.02
            except BaseException as exc:  # noqa: BLE001 - every other exception is a failure
                errors.append(exc)

    workers = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    for d in pool:
        d.close()
    report = _witness(libs, created)
    report["closed errors"] = sum(closed_seen.values())
    report["returned"] = sum(done.values())
    report["reached the library"] = sum(through.values())
    report["descriptors"] = len(created)
    return report, errors


def test_no_call_reaches_a_destroyed_handle(libs: Libs, capsys: pytest.CaptureFixture[str]) -> None:
    report, errors = _stress(libs, THREADS, CALLS, seed=1)
    with capsys.disabled():
        print(f"\n{THREADS} threads x {CALLS} calls with random closes: {report}")
    assert not errors, errors[:5]
    assert report["calls after destroy"] == 0
    assert report["destroyed twice"] == 0 and report["never destroyed"] == 0
    assert report["returned"] + report["closed errors"] == THREADS * CALLS  # each call returned or said "closed"
    assert report["calls"] - report["destroys"] == report["reached the library"]  # ... and each one is in the log
    assert report["destroys"] == report["descriptors"]


def test_the_witness_sees_calls_after_destroy_without_the_guard(libs: Libs, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same stress with the in-flight wait switched off: calls after destroy appear (so the test
    above would notice a broken guard)."""
    from miopen._generated import _inflight

    monkeypatch.setattr(_inflight, "wait_idle", lambda objects, skip=None: None)
    for seed in range(2, 7):
        libs.reset()
        report, _ = _stress(libs, THREADS, 3000, seed=seed)
        print(f"without the guard (seed {seed}): {report}")
        if report["calls after destroy"]:
            return
    pytest.fail("no call after destroy without the guard: the witness cannot see the race")


def test_concurrent_closes_destroy_once_and_never_raise(libs: Libs) -> None:
    import miopen

    errors: list[BaseException] = []
    for round_ in range(200):
        d = miopen.TensorDescriptor.from_address(FIRST + 16 * round_, owned=True)
        barrier = threading.Barrier(THREADS)

        def closer() -> None:
            barrier.wait()
            try:
                d.close()
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        workers = [threading.Thread(target=closer) for _ in range(THREADS)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    assert not errors, errors[:3]
    destroys = Counter(e["tensorDesc"] for e in libs.log("miopenDestroyTensorDescriptor"))
    assert len(destroys) == 200 and set(destroys.values()) == {1}


def _blocking_allocator(entered: threading.Event, release: threading.Event) -> Callable[[int | None, int], int]:
    def alloc(context: int | None, size: int) -> int:
        entered.set()
        release.wait(10)
        return 0xA110C

    return alloc


def test_close_waits_for_the_call_in_flight(libs: Libs) -> None:
    """Thread A is inside miopenSetAllocator (its allocator callback blocks); thread B's close() of
    the same handle returns only after A's call has returned, and destroys it after that call."""
    import miopen

    h = miopen.Handle.from_address(0x7000, owned=True)
    entered, release, closed = threading.Event(), threading.Event(), threading.Event()
    a = threading.Thread(target=miopen.set_allocator, args=(h, _blocking_allocator(entered, release), None))
    a.start()
    assert entered.wait(10)
    b = threading.Thread(target=lambda: (h.close(), closed.set()))
    b.start()
    assert not closed.wait(0.3)  # B waits: A's call is in flight
    assert h.closed  # ... but the handle is already marked closed: no new call can start
    with pytest.raises(ValueError, match="closed"):
        miopen.get_stream(h)
    release.set()
    a.join(10)
    b.join(10)
    assert closed.is_set()
    assert [e[""] for e in libs.log() if e.get("handle") == str(0x7000)] == ["miopenSetAllocator", "miopenDestroy"]


def test_close_from_a_callback_of_a_call_through_it_is_refused(libs: Libs) -> None:
    import miopen

    h = miopen.Handle.from_address(0x7100, owned=True)
    seen: list[BaseException] = []

    def alloc(context: int | None, size: int) -> int:
        try:
            h.close()  # this thread is inside miopenSetAllocator(h, ...): waiting would deadlock
        except RuntimeError as exc:
            seen.append(exc)
        return 0

    miopen.set_allocator(h, alloc, None)
    assert len(seen) == 1 and "in progress on this thread" in str(seen[0])
    assert h.closed and not libs.log("miopenDestroy")  # marked closed, never destroyed under the call


def test_children_are_closed_and_waited_for_with_their_owner(libs: Libs) -> None:
    """An object owned by another (a fusion op by its plan) is marked closed with its owner; one
    made while the owner is being closed is born closed."""
    import miopen

    plan = miopen.FusionPlanDescriptor.from_address(0x8000, owned=True)
    op = miopen.FusionOpDescriptor._from_c(0x8100, False, plan)
    assert op is not None and plan._children == [op]
    plan.close()
    assert op.closed and plan.closed
    late = miopen.FusionOpDescriptor._from_c(0x8200, False, plan)
    assert late is not None and late.closed  # its owner is gone: it is born closed


def test_handles_cannot_be_copied_or_pickled(libs: Libs) -> None:
    import copy
    import pickle

    import miopen

    d = miopen.TensorDescriptor.from_address(0x9000)
    for how in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(TypeError, match="cannot be"):
            how(d)


def test_closing_keeps_no_frame_alive(libs: Libs) -> None:
    """The in-flight scan looks at every thread's frames; it must leave no reference cycle through
    them (the caller's locals, descriptors included, would then live until the next gc run)."""
    import weakref

    import miopen

    def scope() -> weakref.ref[Any]:
        keep = miopen.TensorDescriptor.from_address(0xA000, owned=True)
        miopen.TensorDescriptor.from_address(0xA010, owned=True).close()
        miopen.destroy_tensor_descriptor(miopen.TensorDescriptor.from_address(0xA020, owned=True))
        return weakref.ref(keep)

    ref = scope()  # the libs fixture has the cyclic gc off: only reference counts free it
    assert ref() is None
    destroyed = [e["tensorDesc"] for e in libs.log("miopenDestroyTensorDescriptor")]
    assert destroyed == [str(0xA010), str(0xA020), str(0xA000)]

"""The OpenCL backend's per-queue memo (runtime/opencl/backend.py `_queue_info`): a queue's pyopencl object and context
are asked of OpenCL once, held (so the address cannot become another queue's), bounded, and forgotten when the
library changes. Real pyopencl queues on the first OpenCL device (PoCL here); no MIOpen needed. Without pyopencl
or a device the tests skip, or fail under MIOGEN_REQUIRE_REAL_MIOPEN_OCL=1."""

from __future__ import annotations

from typing import Any

import pytest

from .. import real_miopen


@pytest.fixture(scope="module")
def cl() -> Any:
    try:
        import pyopencl

        devices = [d for p in pyopencl.get_platforms() for d in p.get_devices()]
    except Exception as exc:  # noqa: BLE001 - no pyopencl, ICD loader or platform
        devices, why = [], str(exc)
    else:
        why = "no OpenCL device"
    if not devices:
        if real_miopen.OPENCL.required:
            pytest.fail(f"MIOGEN_REQUIRE_REAL_MIOPEN_OCL=1 but {why}")
        pytest.skip(why)
    return pyopencl


def test_queue_contexts_are_remembered_per_queue_and_keyed_by_context(cl: Any) -> None:
    from miopen.backend import OpenCLBackend

    b = OpenCLBackend()
    dev = b.devices()[0]
    ctx1, ctx2 = cl.Context([dev]), cl.Context([dev])
    q1, q1b, q2 = cl.CommandQueue(ctx1, dev), cl.CommandQueue(ctx1, dev), cl.CommandQueue(ctx2, dev)
    keys = [b.handle_key(0, q.int_ptr) for q in (q1, q1b, q2)]
    assert keys[0] == keys[1] == (0, ctx1.int_ptr) and keys[2] == (0, ctx2.int_ptr)
    for q in (q1, q1b, q2):  # the memo gives the same answers as asking OpenCL
        got = b.queue(q)
        assert got.int_ptr == q.int_ptr and got.context.int_ptr == q.context.int_ptr
        assert b.queue(q) is got  # asked once
    default = b.default_queue(0)
    assert b.queue(None) is default and b.queue(default.int_ptr) is default
    assert b.handle_key(0, None) == (0, default.context.int_ptr)
    # every argument check stays
    with pytest.raises(TypeError, match="stream"):
        b.queue(True)
    with pytest.raises(ValueError, match="stream"):
        b.queue(-1)


def test_queue_memo_holds_its_queues_is_bounded_and_forgotten_on_library_change(cl: Any) -> None:
    from miopen import backend

    b = backend.OpenCLBackend()
    dev = b.devices()[0]
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx, dev)
    handle = q.int_ptr
    b.handle_key(0, handle)
    held = b._known[handle][0]
    assert held.int_ptr == handle and held is not q  # its own reference: the cl_command_queue stays alive
    live = []  # a queue handle passed to the runtime belongs to a live queue
    for _ in range(b.KNOWN_MAX + 3):
        live.append(cl.CommandQueue(ctx, dev))
        b.handle_key(0, live[-1].int_ptr)
        assert len(b._known) <= b.KNOWN_MAX
    b.handle_key(0, handle)
    assert handle in b._known
    backend._opencl[0], saved = b, backend._opencl[0]
    try:
        backend._library_changed()  # what a library load or unload runs
        assert not b._known
    finally:
        backend._opencl[0] = saved


def test_queue_objects_and_the_current_device_read_on_every_call(cl: Any) -> None:
    """The per-call shortcuts (a CommandQueue's int_ptr once its class is known, the per-thread current device)
    answer what the full path answers, on every call."""
    import threading

    from miopen.backend import OpenCLBackend

    b = OpenCLBackend()
    dev = b.devices()[0]
    ctx = cl.Context([dev])
    queues = [cl.CommandQueue(ctx, dev) for _ in range(2)]
    for q in queues * 2:
        assert b.as_stream_handle(q) == b.bound_stream(q, 0) == q.int_ptr
        assert b.handle_key(0, b.bound_stream(q, 0)) == (0, ctx.int_ptr)
    assert b.queue_type is cl.CommandQueue
    with pytest.raises(TypeError, match="stream"):
        b.as_stream_handle(object())
    b.set_device(0)
    seen: list[int] = []
    t = threading.Thread(target=lambda: seen.append(b.current_device()))
    t.start()
    t.join()
    assert seen == [0] and b.current_device() == 0
    with pytest.raises(ValueError, match="device must be an int"):
        b.set_device(len(b.devices()))


def test_dead_keys_are_the_contexts_only_the_runtime_holds(cl: Any) -> None:
    """Issue 29: a pool key (device, context) is dead once nobody but the runtime holds a queue of it: its
    remembered wrapper and the MIOpen handles bound to it (`handle_holds` each) are discounted, anyone else's
    reference keeps it. While remembered, a queue's address stays its own (no new queue gets it); a queue the
    backend no longer remembers, and the default queue's context, are never judged."""
    import gc

    from miopen.backend import OpenCLBackend

    b = OpenCLBackend()
    dev = b.devices()[0]
    q = cl.CommandQueue(cl.Context([dev]), dev)
    addr = q.int_ptr
    key = b.handle_key(0, addr)
    b.handle_holds = 1
    handle_ref = cl.CommandQueue.from_int_ptr(addr, retain=True)  # what a MIOpen handle bound to it holds
    assert b.dead_keys({key: [addr]}) == set()  # the user's queue
    del q
    gc.collect()
    assert b.dead_keys({key: []}) == set()  # a reference nobody accounts for: kept
    assert b.dead_keys({key: [addr]}) == {key}  # only the runtime's: the wrapper and one bound handle
    others = [cl.CommandQueue(cl.Context([dev]), dev) for _ in range(8)]
    assert addr not in {o.int_ptr for o in others}  # remembered: the address cannot be another queue's
    default = b.handle_key(0, None)
    assert b.dead_keys({default: [b.default_queue(0).int_ptr]}) == set()
    assert b.forget_keys({key}) == {addr} and addr not in b._known
    assert b.dead_keys({key: [addr]}) == set()  # no longer remembered: nothing safe to ask
    del handle_ref
    assert b.dead_keys({}) == set()

"""Set/Scale/Transform/OpTensor against numpy, and the host-scalar encodings proven by numbers.

MIOpen 2.17.0 reads Set/Scale/Transform's alpha (and beta) in the tensor's element type (annotations:
`element_of`), OpTensor's alpha1/alpha2/beta as float whatever the type (`scalar: float`: a Python float, a
c_float, or a c_double whose value the typed API sends as a float).
"""

from __future__ import annotations

import ctypes

import numpy as np

import miopen

from .common import (CHECKED, NOT_BUILDABLE, close, desc, dev, handle, note, numeric, packed, rng, space, status,
                     strided_view, verdict)

F32 = "float32"
NO_INT32 = "MIOpen's int32 kernel fails to compile under PoCL (status 7)"
NO_FP64 = "MIOpen's double kernel fails to compile under PoCL (status 7)"


def _strided_cases(seed: int, n: int) -> list[tuple[list[int], list[int]]]:
    """Random small shapes (1-5 dims) with packed, padded or permuted strides."""
    r = rng(seed)
    out = []
    for i in range(n):
        dims = [int(d) for d in r.integers(1, 6, size=int(r.integers(1, 6)))]
        strides = packed(dims)
        if i % 3 == 1:  # padded: every stride doubled plus one
            strides = [s * 2 + 1 for s in strides]
        elif i % 3 == 2:  # permuted: a reversed order of the packed strides of the reversed dims
            strides = packed(dims[::-1])[::-1]
        out.append((dims, strides))
    return out


@numeric(("SetTensor", F32, "packed and strided; alpha float"), ("ScaleTensor", F32, "packed and strided; alpha float"),
         ("SetTensor", "int32", "-", NOT_BUILDABLE, NO_INT32), ("ScaleTensor", "int32", "-", NOT_BUILDABLE, NO_INT32),
         ("SetTensor", "float64", "-", NOT_BUILDABLE, NO_FP64), ("ScaleTensor", "float64", "-", NOT_BUILDABLE, NO_FP64))
def set_scale() -> dict[tuple[str, str, str], str]:
    h = handle()
    out = {}
    for dims, strides in _strided_cases(1, 6):
        n = space(dims, strides)
        base = rng(2).standard_normal(n).astype(np.float32)
        d, b = desc(dims, strides), dev(base)
        miopen.set_tensor(h, d, b.ptr, -1.75)
        got = b.read()
        want = base.astype(np.float64).copy()
        np.lib.stride_tricks.as_strided(want, shape=dims, strides=[s * 8 for s in strides])[...] = -1.75
        close(got, want, f"SetTensor {dims} {strides}", 0)  # elements outside the tensor untouched
        b2 = dev(base)
        miopen.scale_tensor(h, d, b2.ptr, 2.5)
        want = base.astype(np.float64).copy()
        view = np.lib.stride_tricks.as_strided(want, shape=dims, strides=[s * 8 for s in strides])
        view[...] = np.lib.stride_tricks.as_strided(base.astype(np.float64), shape=dims,
                                                    strides=[s * 8 for s in strides]) * 2.5
        close(b2.read(), want, f"ScaleTensor {dims} {strides}", 1e-6)
    out[("SetTensor", F32, "packed and strided; alpha float")] = CHECKED
    out[("ScaleTensor", F32, "packed and strided; alpha float")] = CHECKED
    # int32 and double tensors: MIOpen's kernels for them do not compile under PoCL (status 7, UnknownError);
    # where they do build (a GPU's driver), the results against numpy
    for dt, mdt, npdt in (("int32", "miopenInt32", np.int32), ("float64", "miopenDouble", np.float64)):
        base = np.arange(-5, 7).astype(npdt)
        d = desc([3, 4], dtype=mdt)
        for op, call, want in (("SetTensor", miopen.set_tensor, np.full(12, 7.0)),
                               ("ScaleTensor", miopen.scale_tensor, base.astype(np.float64) * 3)):
            row, b = (op, dt, "-"), dev(base, npdt)
            st = status(lambda: call(h, d, b.ptr, 7 if op == "SetTensor" else 3))
            if st == 7:
                out[row] = note(row, NOT_BUILDABLE, f"MIOpen's {dt} kernel fails to compile on this device (status 7)")
            elif st:
                out[row] = note(row, f"status {st}", f"MIOpen returned status {st}")
            else:
                out[row] = verdict(row, b.read(), want, 0)
    return out


def _op_ref(op: str, a: np.ndarray, b: np.ndarray, c: np.ndarray, a1: float, a2: float, beta: float) -> np.ndarray:
    fa, fb = a1 * a, a2 * b
    r = {"add": fa + fb, "mul": fa * fb, "min": np.minimum(fa, fb), "max": np.maximum(fa, fb)}[op]
    return r + beta * c


OP_2D = ("OpTensor add, mul, min, max", F32, "1-D and 2-D tensors; broadcast B")
#: why 3.x cannot run OpTensor on 1-D and 2-D tensors on an OpenCL build (docs/real-miopen.md)
OP_2D_HIP = ("3.x runs 1-D and 2-D tensors through MIOpenTensorKernelsHip.cpp on any backend (tensorocl.cpp: "
             "use_hip = case_1d || case_2d): a HIP build for the OpenCL device, status 7")


@numeric(*[("OpTensor " + op, F32, "alpha1, alpha2, beta; broadcast B") for op in ("add", "mul", "min", "max")],
         ("host scalar `scalar: float`", F32, "float, c_float, c_double (sent as float)"), OP_2D)
def op_tensor() -> dict[tuple[str, str, str], object]:
    h = handle()
    r = rng(3)
    ops = {"add": miopen.TensorOp.miopenTensorOpAdd, "mul": miopen.TensorOp.miopenTensorOpMul,
           "min": miopen.TensorOp.miopenTensorOpMin, "max": miopen.TensorOp.miopenTensorOpMax}
    encodings = [float, ctypes.c_float, ctypes.c_double]
    cases = []
    for _ in range(3):
        rank = int(r.integers(3, 6))
        dims = [int(d) for d in r.integers(1, 5, size=rank)]
        cases.append((dims, [d if r.random() < 0.5 else 1 for d in dims]))
    cases += [([2, 3], [1, 3]), ([4, 5], [4, 5]), ([7], [7])]  # 1-D and 2-D: their own row (3.x: HIP kernels)
    out: dict[tuple[str, str, str], object] = {OP_2D: CHECKED}
    for i, (dims, bdims) in enumerate(cases):
        a, b, c = (r.standard_normal(int(np.prod(x))).astype(np.float32) for x in (dims, bdims, dims))
        a1, a2, beta = (float(v) for v in r.choice([-2.0, -0.5, 0.0, 1.0, 1.5, 3.0], 3))
        enc = encodings[i % 3]
        small = len(bdims) <= 2
        for name, op in ops.items():
            cd = dev(c)
            if small and out[OP_2D] != CHECKED:
                continue
            st = status(lambda: miopen.op_tensor(h, op, enc(a1), desc(dims), dev(a).ptr, enc(a2), desc(bdims),
                                                 dev(b).ptr, enc(beta), desc(dims), cd.ptr))
            if st and small:
                out[OP_2D] = note(OP_2D, NOT_BUILDABLE if st == 7 else f"status {st}",
                                  OP_2D_HIP if st == 7 else f"{dims}: status {st}")
                continue
            assert not st, f"OpTensor {name} {dims} B {bdims}: status {st}"
            want = _op_ref(name, a.reshape(dims).astype(np.float64), b.reshape(bdims).astype(np.float64),
                           c.reshape(dims).astype(np.float64), a1, a2, beta)
            what = f"OpTensor {name} {dims} B {bdims} ({a1}, {a2}, {beta}) {enc}"
            if small:
                out[OP_2D] = verdict(OP_2D, cd.read().reshape(dims), want, 2e-5)
            else:
                close(cd.read().reshape(dims), want, what)
    out.update({("OpTensor " + op, F32, "alpha1, alpha2, beta; broadcast B"): CHECKED for op in ops})
    out[("host scalar `scalar: float`", F32, "float, c_float, c_double (sent as float)")] = CHECKED
    return out


WRONG = "wrong result"


@numeric(("TransformTensor", F32, "packed to padded strides; alpha, beta"),
         ("host scalar `element_of` (element-typed)", F32, "Set/Scale/Transform alpha, beta as float32"),
         ("TransformTensor", F32, "y n-stride not a multiple of its c-stride", WRONG,
          "upstream bug: GetConsistentFlattenedTensorDescriptors merges n and c with an integer division, so y "
          "is written at the wrong offsets (no error)"),
         ("TransformTensor", F32, "y channels-last (NHWC strides)", WRONG,
          "found here: y's elements land at the wrong offsets (no error); the same flattening is the suspect"))
def transform() -> dict[tuple[str, str, str], str]:
    h = handle()
    r = rng(4)

    def run(dims: list[int], ystrides: list[int], alpha: float, beta: float) -> float:
        x = r.standard_normal(int(np.prod(dims))).astype(np.float32)
        y0 = r.standard_normal(space(dims, ystrides)).astype(np.float32)
        yd = dev(y0)
        miopen.transform_tensor(h, alpha, desc(dims), dev(x).ptr, beta, desc(dims, ystrides), yd.ptr)
        got = strided_view(yd.read(), dims, ystrides)
        want = alpha * x.reshape(dims).astype(np.float64) + beta * strided_view(y0, dims, ystrides)
        return float(np.max(np.abs(got - want)))

    for dims, ystrides, alpha, beta in (([2, 3, 4, 5], [60, 20, 5, 1], 2.0, 0.5), ([2, 3, 4, 5], [90, 30, 6, 1], 1.0, 0.0),
                                        ([2, 3, 4, 5], [90, 30, 6, 1], -1.5, 1.0), ([2, 3, 5, 6], [120, 30, 6, 1], 0.5, 0.0)):
        assert run(dims, ystrides, alpha, beta) <= 1e-6, (dims, ystrides, alpha, beta)
    # 2.17.0's upstream bug: n-stride 100 (or 12) is not a multiple of the c-stride 30 (or 5); channels-last y
    out = {("TransformTensor", F32, "packed to padded strides; alpha, beta"): CHECKED,
           ("host scalar `element_of` (element-typed)", F32, "Set/Scale/Transform alpha, beta as float32"): CHECKED}
    for row, err in ((("TransformTensor", F32, "y n-stride not a multiple of its c-stride"),
                      max(run([2, 3, 5, 6], [100, 30, 6, 1], 1.0, 0.0), run([3, 2, 5], [12, 5, 1], 1.0, 0.0))),
                     (("TransformTensor", F32, "y channels-last (NHWC strides)"),
                      run([2, 3, 4, 5], [60, 1, 15, 3], 1.0, 0.0))):
        out[row] = note(row, CHECKED, f"max abs error {err:.2g}") if err <= 1e-6 else WRONG
    return out

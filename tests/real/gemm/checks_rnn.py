"""RNN on real kernels (MIOpen 2.17.0 OpenCL + MIOpenGEMM, PoCL) against a float64 numpy reference written here.

The reference is MIOpen's documented cell (miopen.h, `miopenRNNMode_t`): vanilla h = act(W x + R h + bW + bR);
LSTM gates i, f, o, c~ (param ids 0-3 act on the input, 4-7 on h); GRU z, r, h~ (ids 0-2 / 3-5) with
h~ = tanh(W x + bW + r * (R h + bR)), h = (1 - z) h~ + z h_prev. Bidirectional layers are physical layers 2l (forward)
and 2l+1 (backward) whose outputs are concatenated; skip input mode adds the input itself where the first layer's
input matrices would act (those matrices have size 0). The weights are random matrices put in place through
miopenSetRNNLayerParam/Bias and read back through miopenGetRNNLayerParam/Bias and their offsets, so the layout API
is proven by the numbers. Reference gradients (dx, dhx, dcx, every weight and bias) are central finite differences
of the float64 reference, all perturbations evaluated at once along a leading batch axis.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

import miopen

from ..ocl.common import Dev, desc, handle, queue, rng, zeros

MODES = ("miopenRNNRELU", "miopenRNNTANH", "miopenLSTM", "miopenGRU")
GATES = {"miopenRNNRELU": 1, "miopenRNNTANH": 1, "miopenLSTM": 4, "miopenGRU": 3}
T, B, H = 3, 2, 3  # sequence length, batch, hidden size (skip mode: input = H)
IN_LINEAR = 4


@dataclass(frozen=True)
class Case:
    mode: str
    bidirectional: bool
    layers: int
    skip: bool
    bias: bool

    @property
    def dirs(self) -> int:
        return 2 if self.bidirectional else 1

    @property
    def gates(self) -> int:
        return GATES[self.mode]

    @property
    def input(self) -> int:
        return H if self.skip else IN_LINEAR

    @property
    def lstm(self) -> bool:
        return self.mode == "miopenLSTM"

    def label(self) -> str:
        return (f"{self.mode[-4:].lstrip('n')} {'bi' if self.bidirectional else 'uni'} L{self.layers} "
                f"{'skip' if self.skip else 'linear'} {'bias' if self.bias else 'nobias'}")

    def in_dim(self, phys: int) -> int:
        """Columns of physical layer `phys`'s input matrices (0: skip mode's first layer has none)."""
        if phys < self.dirs:
            return 0 if self.skip else self.input
        return self.dirs * H

    def parts(self) -> list[tuple[Any, tuple[int, ...]]]:
        """The reference's parameter vector, in order: inputs, states, matrices, biases."""
        out: list[tuple[Any, tuple[int, ...]]] = [("x", (T, B, self.input)), ("hx", (self.layers * self.dirs, B, H))]
        if self.lstm:
            out.append(("cx", (self.layers * self.dirs, B, H)))
        for phys in range(self.layers * self.dirs):
            for pid in range(2 * self.gates):
                cols = self.in_dim(phys) if pid < self.gates else H
                if cols:
                    out.append((("w", phys, pid), (H, cols)))
        if self.bias:
            for phys, bid in itertools.product(range(self.layers * self.dirs), range(2 * self.gates)):
                out.append((("b", phys, bid), (H,)))
        return out


def cases() -> list[Case]:
    """A deterministic covering subset of modes x directions x layers x input mode x bias (96 combinations): per
    mode two cases with opposite direction, input mode and bias, layer counts cycling 1, 2, 3 over the eight, so
    every value of every axis occurs and each mode meets both values of each two-valued axis."""
    out = []
    for i, mode in enumerate(MODES):
        for j in range(2):
            k = 2 * i + j
            out.append(Case(mode, bidirectional=bool(j), layers=1 + k % 3, skip=bool((i + j) % 2), bias=not j))
    return out


def _sig(a: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-a))


def _cell(case: Case, xin: np.ndarray, h: np.ndarray, c: np.ndarray | None, p: dict[Any, np.ndarray], phys: int
          ) -> tuple[np.ndarray, np.ndarray | None]:
    """One step of physical layer `phys` for every perturbation (leading axis P)."""
    g = case.gates
    P = xin.shape[0]

    def pre_x(k: int) -> np.ndarray:
        w = p.get(("w", phys, k))
        v = xin if w is None else np.einsum("pbi,phi->pbh", xin, w)
        return v + p[("b", phys, k)][:, None, :] if case.bias else v

    def pre_h(k: int) -> np.ndarray:
        v = np.einsum("pbi,phi->pbh", h, p[("w", phys, g + k)])
        return v + p[("b", phys, g + k)][:, None, :] if case.bias else v

    if case.mode == "miopenRNNRELU":
        return np.maximum(pre_x(0) + pre_h(0), 0.0), None
    if case.mode == "miopenRNNTANH":
        return np.tanh(pre_x(0) + pre_h(0)), None
    if case.lstm:
        assert c is not None
        i, f, o = (_sig(pre_x(k) + pre_h(k)) for k in range(3))
        cn = f * c + i * np.tanh(pre_x(3) + pre_h(3))
        return o * np.tanh(cn), cn
    z, r = _sig(pre_x(0) + pre_h(0)), _sig(pre_x(1) + pre_h(1))
    hn = np.tanh(pre_x(2) + r * pre_h(2))
    del P
    return (1.0 - z) * hn + z * h, None


def forward(case: Case, p: dict[Any, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(y, hy, cy) of the reference, each with the leading perturbation axis."""
    seq = [p["x"][:, t] for t in range(T)]
    P = p["x"].shape[0]
    hy = np.zeros((P, case.layers * case.dirs, B, H))
    cy = np.zeros_like(hy) if case.lstm else None
    for layer in range(case.layers):
        outs = []
        for d in range(case.dirs):
            phys = layer * case.dirs + d
            h = p["hx"][:, phys]
            c = p["cx"][:, phys] if case.lstm else None
            ys: list[np.ndarray] = [np.empty(0)] * T
            for t in (range(T) if d == 0 else reversed(range(T))):
                h, c = _cell(case, seq[t], h, c, p, phys)
                ys[t] = h
            hy[:, phys] = h
            if cy is not None and c is not None:
                cy[:, phys] = c
            outs.append(ys)
        seq = [np.concatenate([outs[d][t] for d in range(case.dirs)], axis=-1) for t in range(T)]
    return np.stack(seq, axis=1), hy, cy


def unpack(case: Case, theta: np.ndarray) -> dict[Any, np.ndarray]:
    out, at = {}, 0
    for name, shape in case.parts():
        n = int(np.prod(shape))
        out[name] = theta[:, at:at + n].reshape((theta.shape[0], *shape))
        at += n
    return out


def reference_grads(case: Case, theta: np.ndarray, dy: np.ndarray, dhy: np.ndarray, dcy: np.ndarray | None,
                    eps: float = 1e-5) -> dict[Any, np.ndarray]:
    """d(sum(y dy) + sum(hy dhy) + sum(cy dcy)) / d(each part), by central differences of the reference."""
    n = theta.size
    batch = np.concatenate([theta[None] + eps * np.eye(n), theta[None] - eps * np.eye(n)])
    y, hy, cy = forward(case, unpack(case, batch))
    loss = (y * dy).sum(axis=(1, 2, 3)) + (hy * dhy).sum(axis=(1, 2, 3))
    if cy is not None and dcy is not None:
        loss += (cy * dcy).sum(axis=(1, 2, 3))
    g = (loss[:n] - loss[n:]) / (2 * eps)
    return {k: v[0] for k, v in unpack(case, g[None]).items()}


# ------------------------------------------------------------------------------------------------ MIOpen side


def _enum(name: str, value: str) -> Any:
    return getattr(getattr(miopen, name), value)


def rnn_descriptor(case: Case) -> miopen.RNNDescriptor:
    rd = miopen.create_rnn_descriptor()
    miopen.set_rnn_descriptor(rd, H, case.layers,
                              _enum("RNNInputMode", "miopenRNNskip" if case.skip else "miopenRNNlinear"),
                              _enum("RNNDirectionMode",
                                    "miopenRNNbidirection" if case.bidirectional else "miopenRNNunidirection"),
                              _enum("RNNMode", case.mode),
                              _enum("RNNBiasMode", "miopenRNNwithBias" if case.bias else "miopenRNNNoBias"),
                              _enum("RNNAlgo", "miopenRNNdefault"), miopen.DataType.miopenFloat)
    return rd


class Setup:
    """One case's descriptors, device buffers and random values; the weights placed through SetRNNLayerParam/Bias
    and the layout verified through the getters."""

    def __init__(self, case: Case, seed: int) -> None:
        self.case = case
        self.h = handle()
        self.rd = rnn_descriptor(case)
        self.xd = [desc([B, case.input]) for _ in range(T)]
        self.yd = [desc([B, case.dirs * H]) for _ in range(T)]
        self.hd = desc([case.layers * case.dirs, B, H])
        r = rng(seed)
        self.values = {name: r.uniform(-0.6, 0.6, shape) for name, shape in case.parts()}
        self.theta = np.concatenate([self.values[name].ravel() for name, _ in case.parts()])
        nbytes = miopen.get_rnn_params_size(self.h, self.rd, self.xd[0], miopen.DataType.miopenFloat)
        self.wd = miopen.create_tensor_descriptor()
        miopen.get_rnn_params_descriptor(self.h, self.rd, self.xd[0], self.wd, miopen.DataType.miopenFloat)
        self.nw = nbytes // 4
        self.w = zeros(self.nw)
        self.offsets: dict[Any, int] = {}
        for name, shape in case.parts():
            if not isinstance(name, tuple):
                continue
            kind, phys, pid = name
            data = Dev(self.values[name].astype(np.float32))
            pd = desc(list(shape))
            od = miopen.create_tensor_descriptor()
            if kind == "w":
                assert miopen.get_rnn_layer_param_size(self.h, self.rd, phys, self.xd[0], pid) == 4 * data.host.size
                miopen.set_rnn_layer_param(self.h, self.rd, phys, self.xd[0], self.wd, self.w.ptr, pid, pd, data.ptr)
                self.offsets[name] = miopen.get_rnn_layer_param_offset(self.rd, phys, self.xd[0], pid, od)
            else:
                assert miopen.get_rnn_layer_bias_size(self.h, self.rd, phys, pid) == 4 * H
                miopen.set_rnn_layer_bias(self.h, self.rd, phys, self.xd[0], self.wd, self.w.ptr, pid, pd, data.ptr)
                self.offsets[name] = miopen.get_rnn_layer_bias_offset(self.rd, phys, self.xd[0], pid, od)
            assert miopen.get_tensor_descriptor(od).dims_a == list(shape), (name, shape)
        # the layout read back: each part row-major at its offset, and through the getters
        packed = self.w.read()
        for name, off in self.offsets.items():
            want = self.values[name].astype(np.float32)
            assert np.array_equal(packed[off:off + want.size].reshape(want.shape), want), name
            out, od = zeros(want.size), miopen.create_tensor_descriptor()
            if name[0] == "w":
                miopen.get_rnn_layer_param(self.h, self.rd, name[1], self.xd[0], self.wd, self.w.ptr, name[2], od,
                                           out.ptr)
            else:
                miopen.get_rnn_layer_bias(self.h, self.rd, name[1], self.xd[0], self.wd, self.w.ptr, name[2], od,
                                          out.ptr)
            assert np.array_equal(out.read()[:want.size].reshape(want.shape), want), name
        spans = sorted((off, off + self.values[n].size) for n, off in self.offsets.items())
        assert spans[0][0] == 0 and spans[-1][1] == self.nw and all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
        self.x = Dev(self.values["x"].astype(np.float32))
        self.hx = Dev(self.values["hx"].astype(np.float32))
        self.cx = Dev(self.values["cx"].astype(np.float32)) if case.lstm else None
        self.ws_bytes = miopen.get_rnn_workspace_size(self.h, self.rd, self.xd)
        self.rs_bytes = miopen.get_rnn_training_reserve_size(self.h, self.rd, self.xd)

    def ref(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        y, hy, cy = forward(self.case, unpack(self.case, self.theta[None]))
        return y[0], hy[0], None if cy is None else cy[0]

    def packed_grad(self, grads: dict[Any, np.ndarray]) -> np.ndarray:
        out = np.zeros(self.nw)
        for name, off in self.offsets.items():
            out[off:off + grads[name].size] = grads[name].ravel()
        return out


def _err(got: np.ndarray, want: np.ndarray, what: str, tol: float) -> float:
    got, want = np.asarray(got, np.float64).reshape(want.shape), np.asarray(want, np.float64)
    err = float(np.max(np.abs(got - want))) if want.size else 0.0
    scale = max(1.0, float(np.max(np.abs(want))) if want.size else 1.0)
    assert err <= tol * scale, f"{what}: max abs error {err:.3g} (scale {scale:.3g})"
    return err


def _adds_or_overwrites(got: np.ndarray, before: np.ndarray, grad: np.ndarray) -> str:
    tol = 1e-4 * max(1.0, float(np.abs(grad).max()), float(np.abs(before).max()))
    if np.abs(got - grad).max() <= tol:
        return "overwrites"
    return "adds" if np.abs(got - before - grad).max() <= tol else "neither"


def _cases_run(seed0: int) -> Iterator[tuple[Case, Setup]]:
    for i, case in enumerate(cases()):
        yield case, Setup(case, seed0 + i)


def typed_api() -> dict[str, Any]:
    """Every sampled case through the typed API: inference, training forward, backward data, backward weights
    (twice without zeroing dw: does it add or overwrite?). Returns {case label: {quantity: max abs error}} and
    "dw second call" -> "adds" | "overwrites" per case."""
    results: dict[str, Any] = {}
    for case, s in _cases_run(310):
        h, rd = s.h, s.rd
        y_want, hy_want, cy_want = s.ref()
        errs: dict[str, float] = {}
        lab = case.label()
        cxp = None if s.cx is None else s.cx.ptr
        # inference
        y, hy = zeros(y_want.size), zeros(hy_want.size)
        cy = zeros(hy_want.size) if case.lstm else None
        ws = zeros(max(s.ws_bytes // 4, 1))
        miopen.rnn_forward_inference(h, rd, s.xd, s.x.ptr, s.hd, s.hx.ptr, s.hd, cxp, s.wd, s.w.ptr, s.yd, y.ptr,
                                     s.hd, hy.ptr, s.hd, None if cy is None else cy.ptr, ws.ptr, s.ws_bytes)
        errs["inference y"] = _err(y.read(), y_want, f"{lab} inference y", 2e-5)
        errs["inference hy"] = _err(hy.read(), hy_want, f"{lab} inference hy", 2e-5)
        if cy is not None and cy_want is not None:
            errs["inference cy"] = _err(cy.read(), cy_want, f"{lab} inference cy", 2e-5)
        # training forward
        y, hy = zeros(y_want.size), zeros(hy_want.size)
        cy = zeros(hy_want.size) if case.lstm else None
        rs = zeros(max(s.rs_bytes // 4, 1))
        miopen.rnn_forward_training(h, rd, s.xd, s.x.ptr, s.hd, s.hx.ptr, s.hd, cxp, s.wd, s.w.ptr, s.yd, y.ptr,
                                    s.hd, hy.ptr, s.hd, None if cy is None else cy.ptr, ws.ptr, s.ws_bytes, rs.ptr,
                                    s.rs_bytes)
        errs["training y"] = _err(y.read(), y_want, f"{lab} training y", 2e-5)
        errs["training hy"] = _err(hy.read(), hy_want, f"{lab} training hy", 2e-5)
        if cy is not None and cy_want is not None:
            errs["training cy"] = _err(cy.read(), cy_want, f"{lab} training cy", 2e-5)
        # backward data against the finite-difference gradients of the reference
        r = rng(900 + len(results))
        dy_h, dhy_h = r.uniform(-1, 1, y_want.shape), r.uniform(-1, 1, hy_want.shape)
        dcy_h = r.uniform(-1, 1, hy_want.shape) if case.lstm else None
        grads = reference_grads(case, s.theta, dy_h, dhy_h, dcy_h)
        dy, dhy = Dev(dy_h.astype(np.float32)), Dev(dhy_h.astype(np.float32))
        dcy = None if dcy_h is None else Dev(dcy_h.astype(np.float32))
        dx, dhx = zeros(s.values["x"].size), zeros(hy_want.size)
        dcx = zeros(hy_want.size) if case.lstm else None
        miopen.rnn_backward_data(h, rd, s.yd, y.ptr, s.yd, dy.ptr, s.hd, dhy.ptr, s.hd,
                                 None if dcy is None else dcy.ptr, s.wd, s.w.ptr, s.hd, s.hx.ptr, s.hd, cxp, s.xd,
                                 dx.ptr, s.hd, dhx.ptr, s.hd, None if dcx is None else dcx.ptr, ws.ptr, s.ws_bytes,
                                 rs.ptr, s.rs_bytes)
        errs["dx"] = _err(dx.read(), grads["x"], f"{lab} dx", 5e-5)
        errs["dhx"] = _err(dhx.read(), grads["hx"], f"{lab} dhx", 5e-5)
        if dcx is not None:
            errs["dcx"] = _err(dcx.read(), grads["cx"], f"{lab} dcx", 5e-5)
        # backward weights into a dw holding other values: MIOpen overwrites dw (it does not add), part by part
        want_dw = s.packed_grad(grads)
        before = r.uniform(-1, 1, s.nw)
        dw = Dev(before.astype(np.float32))
        miopen.rnn_backward_weights(h, rd, s.xd, s.x.ptr, s.hd, s.hx.ptr, s.yd, y.ptr, s.wd, dw.ptr, ws.ptr,
                                    s.ws_bytes, rs.ptr, s.rs_bytes)
        first = dw.read()
        errs["dw"] = _err(first, want_dw, f"{lab} dw (over a dw holding other values)", 5e-5)
        behaviour = {n: _adds_or_overwrites(first[o:o + s.values[n].size], before[o:o + s.values[n].size],
                                            want_dw[o:o + s.values[n].size]) for n, o in s.offsets.items()}
        # the same call again (same workspace and reserve) into a zeroed dw: is it repeatable?
        dw = zeros(s.nw)
        miopen.rnn_backward_weights(h, rd, s.xd, s.x.ptr, s.hd, s.hx.ptr, s.yd, y.ptr, s.wd, dw.ptr, ws.ptr,
                                    s.ws_bytes, rs.ptr, s.rs_bytes)
        again = dw.read().astype(np.float64)
        tol = 1e-4 * max(1.0, float(np.abs(want_dw).max()))
        differ = sorted(str(n) for n, o in s.offsets.items()
                        if np.abs(again[o:o + s.values[n].size] - want_dw[o:o + s.values[n].size]).max() > tol)
        results[lab] = {"errors": errs, "dw": sorted(set(behaviour.values())), "second call wrong": differ}
    queue().finish()
    return results


RUNTIME_CASES = (Case("miopenLSTM", True, 2, False, True), Case("miopenGRU", False, 1, True, False),
                 Case("miopenRNNTANH", True, 1, False, True))


def runtime_op() -> dict[str, dict[str, float]]:
    """miopen.ops.rnn.RNN on pyopencl arrays: weights placed with set_layer_param/set_layer_bias, then
    forward_inference, forward_training, backward_data, backward_weights against the reference."""
    import pyopencl.array as cla

    from miopen.ops.rnn import RNN

    q = queue()
    out: dict[str, dict[str, float]] = {}
    for i, case in enumerate(RUNTIME_CASES):
        lab = case.label()
        r = rng(700 + i)
        values = {name: r.uniform(-0.6, 0.6, shape) for name, shape in case.parts()}
        theta = np.concatenate([values[name].ravel() for name, _ in case.parts()])

        def arr(a: np.ndarray) -> Any:
            return cla.to_device(q, np.ascontiguousarray(a, np.float32))

        with RNN(case.input, H, case.layers, mode=case.mode[-4:].lstrip("n").lower(),
                 bidirectional=case.bidirectional, input_mode="skip" if case.skip else "linear", bias=case.bias,
                 stream=q) as rnn:
            nw = rnn.params_size(stream=q) // 4
            w = cla.zeros(q, (nw,), np.float32)
            for name, _ in case.parts():
                if isinstance(name, tuple):
                    setter = rnn.set_layer_param if name[0] == "w" else rnn.set_layer_bias
                    setter(name[1], name[2], w, arr(values[name]), stream=q)
            x, hx = arr(values["x"]), arr(values["hx"])
            cx = arr(values["cx"]) if case.lstm else None
            y_want, hy_want, cy_want = (None if a is None else a[0]
                                        for a in forward(case, unpack(case, theta[None])))
            assert y_want is not None and hy_want is not None
            y, hy = cla.zeros(q, y_want.shape, np.float32), cla.zeros(q, hy_want.shape, np.float32)
            cy = cla.zeros(q, hy_want.shape, np.float32) if case.lstm else None
            rnn.forward_inference(x, hx, cx, w, y, hy, cy, stream=q)
            errs = {"inference y": _err(y.get(), y_want, f"{lab} runtime inference y", 2e-5),
                    "inference hy": _err(hy.get(), hy_want, f"{lab} runtime inference hy", 2e-5)}
            if cy is not None and cy_want is not None:
                errs["inference cy"] = _err(cy.get(), cy_want, f"{lab} runtime inference cy", 2e-5)
            y = cla.zeros(q, y_want.shape, np.float32)
            with rnn.forward_training(x, hx, cx, w, y, stream=q) as reserve:
                errs["training y"] = _err(y.get(), y_want, f"{lab} runtime training y", 2e-5)
                dy_h, dhy_h = r.uniform(-1, 1, y_want.shape), r.uniform(-1, 1, hy_want.shape)
                dcy_h = r.uniform(-1, 1, hy_want.shape) if case.lstm else None
                grads = reference_grads(case, theta, dy_h, dhy_h, dcy_h)
                dx, dhx = cla.zeros(q, values["x"].shape, np.float32), cla.zeros(q, hy_want.shape, np.float32)
                dcx = cla.zeros(q, hy_want.shape, np.float32) if case.lstm else None
                rnn.backward_data(y, arr(dy_h), w, dx, reserve=reserve, dhy=arr(dhy_h),
                                  dcy=None if dcy_h is None else arr(dcy_h), hx=hx, cx=cx, dhx=dhx, dcx=dcx,
                                  stream=q)
                errs["dx"] = _err(dx.get(), grads["x"], f"{lab} runtime dx", 5e-5)
                errs["dhx"] = _err(dhx.get(), grads["hx"], f"{lab} runtime dhx", 5e-5)
                if dcx is not None:
                    errs["dcx"] = _err(dcx.get(), grads["cx"], f"{lab} runtime dcx", 5e-5)
                dw = arr(r.uniform(-1, 1, nw))  # overwritten, not added to
                rnn.backward_weights(x, hx, y, dw, reserve=reserve, stream=q)
                got = dw.get()
                worst = 0.0
                for name, _ in case.parts():
                    if isinstance(name, tuple):
                        part = arr(np.zeros(values[name].shape))
                        (rnn.get_layer_param if name[0] == "w" else rnn.get_layer_bias)(
                            name[1], name[2], dw, part, stream=q).close()
                        worst = max(worst, _err(part.get(), grads[name], f"{lab} runtime dw {name}", 5e-5))
                errs["dw"] = worst
                assert got.shape == (nw,)
            out[lab] = errs
    return out

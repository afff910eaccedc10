"""RNN descriptors: round trips, the packed weight layout, workspace/reserve/tensor sizes.

The layout is checked structurally, computed here: a vanilla (ReLU/tanh) cell has 1 gate, GRU 3, LSTM 4; each
physical layer (a direction of a layer; bidirectional RNNs have two per layer, numbered 2l and 2l+1) has one
input matrix [hidden, input] and one hidden matrix [hidden, hidden] per gate, where the input is the data's
vector length for the first layer (0 in skip mode) and directions * hidden for the others; with bias, 2 vectors
[hidden] per gate. Every matrix's offset and size from MIOpen must tile the weights exactly (no gap, no overlap)
and the biases must tile the rest; the total must be GetRNNParamsSize and the element count of
GetRNNParamsDescriptor. Workspace and reserve sizes follow src/rnn.cpp (workspaceScale 1/6/4 for
vanilla/LSTM/GRU; the reserve halves plus one hidden state for LSTM with the default algorithm).
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

from typing import Any

import miopen
from miopen._generated.errors import miopenStatus_t

from .common import Bound, DT, addr, check, failing, handle, prod, raw_fn, status_name, tensor

R: Any = Bound("RNNMode")
GATES = {"miopenRNNRELU": 1, "miopenRNNTANH": 1, "miopenLSTM": 4, "miopenGRU": 3}
SCALE = {"miopenRNNRELU": 1, "miopenRNNTANH": 1, "miopenLSTM": 6, "miopenGRU": 4}
BADPARM = int(miopenStatus_t.miopenStatusBadParm)


@dataclass(frozen=True)
class Cfg:
    mode: R
    hidden: int
    layers: int
    bidirectional: bool
    bias: bool
    skip: bool
    input: int
    dtype: Any = None  # miopenFloat of the bound release

    def __post_init__(self) -> None:
        if self.dtype is None:
            object.__setattr__(self, "dtype", DT.miopenFloat)

    @property
    def bi(self) -> int:
        return 2 if self.bidirectional else 1

    @property
    def gates(self) -> int:
        return GATES[self.mode.name]

    @property
    def ts(self) -> int:
        return 2 if self.dtype == DT.miopenHalf else 4

    def input_dim(self, physical_layer: int) -> int:
        if physical_layer < self.bi:
            return 0 if self.skip else self.input
        return self.bi * self.hidden

    def matrices(self) -> dict[tuple[int, int], list[int]]:
        """(physical layer, param id) -> dims of the matrix."""
        out = {}
        for layer in range(self.layers * self.bi):
            for pid in range(2 * self.gates):
                out[(layer, pid)] = [self.hidden, self.input_dim(layer) if pid < self.gates else self.hidden]
        return out

    def weight_elems(self) -> int:
        return sum(prod(d) for d in self.matrices().values())

    def bias_elems(self) -> int:
        return self.layers * self.bi * 2 * self.gates * self.hidden if self.bias else 0


def rnn_desc(cfg: Cfg, dropout: miopen.DropoutDescriptor | None = None) -> miopen.RNNDescriptor:
    d = miopen.create_rnn_descriptor()
    args = (cfg.hidden, cfg.layers)
    rest = (miopen.RNNInputMode.miopenRNNskip if cfg.skip else miopen.RNNInputMode.miopenRNNlinear,
            miopen.RNNDirectionMode.miopenRNNbidirection if cfg.bidirectional
            else miopen.RNNDirectionMode.miopenRNNunidirection,
            cfg.mode, miopen.RNNBiasMode.miopenRNNwithBias if cfg.bias else miopen.RNNBiasMode.miopenRNNNoBias,
            miopen.RNNAlgo.miopenRNNdefault, cfg.dtype)
    if dropout is None:
        miopen.set_rnn_descriptor(d, *args, *rest)
    else:
        miopen.set_rnn_descriptor_v2(d, *args, dropout, *rest)
    return d


@functools.cache
def configs() -> list[Cfg]:
    """Every RNN mode x sizes x directions x bias x input mode (made when a check runs: it needs the release)."""
    return [Cfg(m, h, L, bi, b, skip, inp)
            for m, (h, L), bi, b, (skip, inp) in itertools.product(
                miopen.RNNMode, [(8, 1), (16, 3)], [False, True], [True, False], [(False, 5), (True, 8)])]


@check("miopenCreateRNNDescriptor", "miopenSetRNNDescriptor", "miopenGetRNNDescriptor", "miopenGetRNNDescriptor_V2",
       "miopenSetRNNDescriptor_V2", "miopenDestroyRNNDescriptor", "miopenCreateDropoutDescriptor")
def descriptor_round_trip() -> int:
    drop = miopen.create_dropout_descriptor()
    for cfg in configs()[::3] + [Cfg(R.miopenGRU, 4, 2, True, True, False, 3, DT.miopenHalf)]:
        for v2 in (False, True):
            d = rnn_desc(cfg, drop if v2 else None)
            got = miopen.get_rnn_descriptor(d)
            assert (got.rnn_mode, got.hidden_size, got.layer, got.bias_mode.name, got.dir_mode.name,
                    got.input_mode.name, got.algo_mode) == (
                cfg.mode, cfg.hidden, cfg.layers, "miopenRNNwithBias" if cfg.bias else "miopenRNNNoBias",
                "miopenRNNbidirection" if cfg.bidirectional else "miopenRNNunidirection",
                "miopenRNNskip" if cfg.skip else "miopenRNNlinear", miopen.RNNAlgo.miopenRNNdefault)
            g2 = miopen.get_rnn_descriptor_v2(d)
            assert (g2.hidden_size, g2.layer, g2.rnn_mode, g2.data_type) == (cfg.hidden, cfg.layers, cfg.mode,
                                                                            cfg.dtype)
            assert g2.dropout_desc is not None
            if v2:  # the descriptor we gave, borrowed (not owned by the result)
                assert g2.dropout_desc.address == drop.address and g2.dropout_desc._owned is False
            miopen.destroy_rnn_descriptor(d)
    return len(configs())


@check("miopenGetRNNParamsSize", "miopenGetRNNParamsDescriptor", "miopenGetRNNLayerParamSize",
       "miopenGetRNNLayerBiasSize", "miopenGetRNNLayerParam", "miopenGetRNNLayerBias", "miopenGetRNNLayerParamOffset",
       "miopenGetRNNLayerBiasOffset")
def weight_layout() -> int:
    h = handle()
    checked = 0
    for cfg in configs() + [Cfg(R.miopenLSTM, 32, 2, False, True, False, 16, DT.miopenHalf)]:
        d = rnn_desc(cfg)
        x = tensor([4, cfg.input], None, cfg.dtype)
        total = miopen.get_rnn_params_size(h, d, x, cfg.dtype)
        assert total == cfg.ts * (cfg.weight_elems() + cfg.bias_elems()), cfg
        wd = miopen.create_tensor_descriptor()
        miopen.get_rnn_params_descriptor(h, d, x, wd, cfg.dtype)
        w = miopen.get_tensor_descriptor(wd)
        assert w.data_type == cfg.dtype and len(w.dims_a) == 2 and w.dims_a[1] == cfg.bi * cfg.hidden * cfg.gates
        assert prod(w.dims_a) * cfg.ts == total, (cfg, w.dims_a)
        # weights: sizes, dims and offsets tile [0, weight_elems)
        spans = []
        for (layer, pid), dims in cfg.matrices().items():
            size = miopen.get_rnn_layer_param_size(h, d, layer, x, pid)
            assert size == cfg.ts * prod(dims), (cfg, layer, pid, size, dims)
            if size == 0:  # the input matrices of the first layer in skip mode do not exist
                assert cfg.skip and layer < cfg.bi and pid < cfg.gates
                status, text = failing(lambda: miopen.get_rnn_layer_param_offset(d, layer, x, pid,
                                                                                  miopen.create_tensor_descriptor()))
                assert status == BADPARM and "skip mode" in text
                continue
            pd = miopen.create_tensor_descriptor()
            miopen.get_rnn_layer_param(h, d, layer, x, wd, 0, pid, pd, None)
            assert miopen.get_tensor_descriptor(pd).dims_a == dims
            od = miopen.create_tensor_descriptor()
            off = miopen.get_rnn_layer_param_offset(d, layer, x, pid, od)
            assert miopen.get_tensor_descriptor(od).dims_a == dims
            spans.append((off, off + prod(dims)))
        assert _tiles(spans, 0, cfg.weight_elems()), (cfg, sorted(spans))
        # biases: one [hidden] vector per (physical layer, bias id), tiling the rest
        bspans = []
        for layer, bid in itertools.product(range(cfg.layers * cfg.bi), range(2 * cfg.gates)):
            assert miopen.get_rnn_layer_bias_size(h, d, layer, bid) == cfg.ts * cfg.hidden
            bd = miopen.create_tensor_descriptor()
            miopen.get_rnn_layer_bias(h, d, layer, x, wd, 0, bid, bd, None)
            od = miopen.create_tensor_descriptor()
            off = miopen.get_rnn_layer_bias_offset(d, layer, x, bid, od)
            if not cfg.bias:  # MIOpen returns early: descriptor untouched, offset not written (our 0)
                assert miopen.get_tensor_descriptor_size(bd) == 0 and off == 0
                continue
            assert miopen.get_tensor_descriptor(bd).dims_a == [cfg.hidden] == miopen.get_tensor_descriptor(od).dims_a
            bspans.append((off, off + cfg.hidden))
        if cfg.bias:
            assert _tiles(bspans, cfg.weight_elems(), cfg.weight_elems() + cfg.bias_elems()), cfg
        checked += 1
    return checked


def _tiles(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    pos = start
    for a, b in sorted(spans):
        if a != pos:
            return False
        pos = b
    return pos == end


@check("miopenGetRNNWorkspaceSize", "miopenGetRNNTrainingReserveSize", "miopenGetRNNInputTensorSize",
       "miopenGetRNNHiddenTensorSize", "miopenRestoreDropoutDescriptor")
def sizes() -> int:
    h = handle()
    n = 0
    for cfg in configs()[::2] + [Cfg(R.miopenLSTM, 16, 2, True, True, False, 8, DT.miopenHalf)]:
        batches = [6, 6, 4, 3, 1]  # sequences sorted by length: the batch shrinks over time
        xs = [tensor([b, cfg.input], None, cfg.dtype) for b in batches]
        d = rnn_desc(cfg)
        s = sum(batches)
        ws = SCALE[cfg.mode.name] * cfg.layers * s * cfg.hidden * cfg.ts * cfg.bi
        assert miopen.get_rnn_workspace_size(h, d, xs) == ws, cfg
        reserve = 2 * SCALE[cfg.mode.name] * cfg.layers * s * cfg.hidden * cfg.ts
        if cfg.mode == R.miopenLSTM:  # default algorithm
            reserve = reserve // 2 + cfg.layers * s * cfg.hidden * cfg.ts
        assert miopen.get_rnn_training_reserve_size(h, d, xs) == reserve * cfg.bi, cfg
        assert miopen.get_rnn_input_tensor_size(h, d, xs) == s * cfg.input * cfg.ts
        assert miopen.get_rnn_hidden_tensor_size(h, d, xs) == batches[0] * cfg.hidden * cfg.layers * cfg.ts * cfg.bi
        n += 1
    # a dropout rate makes the reserve hold the masks and outputs of the inner layers
    cfg = Cfg(R.miopenGRU, 8, 3, False, True, False, 4)
    drop = miopen.create_dropout_descriptor()
    miopen.restore_dropout_descriptor(drop, h, 0.25, 0, 0, 7, False, False, miopen.RNGType.MIOPEN_RNG_PSEUDO_XORWOW)
    d = rnn_desc(cfg, drop)
    xs = [tensor([3, 4])] * 2
    base = 2 * 4 * 3 * 6 * 8 * 4
    assert miopen.get_rnn_training_reserve_size(h, d, xs) == base + (3 - 1) * 6 * 8 * 4 + (3 - 1) * 6 * 8 * 1
    return n


@check("miopenSetRNNDescriptor", "miopenGetRNNParamsSize", "miopenGetRNNWorkspaceSize")
def errors() -> dict[str, str]:
    """MIOpen's checks: hidden size/layers >= 0, float or half, the data's type equal to the RNN's."""
    out = {}
    d = miopen.create_rnn_descriptor()
    lin, uni, bias, algo = (miopen.RNNInputMode.miopenRNNlinear, miopen.RNNDirectionMode.miopenRNNunidirection,
                            miopen.RNNBiasMode.miopenRNNwithBias, miopen.RNNAlgo.miopenRNNdefault)
    for what, args in {"hidden -1": (-1, 1, DT.miopenFloat), "layers -2": (8, -2, DT.miopenFloat),
                       "double": (8, 1, DT.miopenDouble), "int8": (8, 1, DT.miopenInt8)}.items():
        hs, layers, dt = args
        status, text = failing(lambda: miopen.set_rnn_descriptor(d, hs, layers, lin, uni, R.miopenLSTM, bias, algo, dt))
        assert status == BADPARM and "RNNDescriptor: Bad parameter" in text, what
        out[what] = status_name(status)
    cfg = Cfg(R.miopenLSTM, 8, 1, False, True, False, 4)
    d = rnn_desc(cfg)
    h = handle()
    status, text = failing(lambda: miopen.get_rnn_params_size(h, d, tensor([2, 4], None, DT.miopenHalf), DT.miopenFloat))
    assert status == BADPARM and "Data type mismatch" in text
    out["params size, half data"] = status_name(status)
    status, text = failing(lambda: miopen.get_rnn_workspace_size(h, d, [tensor([2, 4], None, DT.miopenHalf)]))
    assert status == BADPARM and "Data type mismatch" in text
    out["workspace, half data"] = status_name(status)
    return out


@check()
def bad_enums_raw() -> dict[str, int]:
    """RNN mode, direction and bias mode values the header does not declare: our API refuses them first
    (ValueError); MIOpen refuses them too (BadParm), shown by calling it raw."""
    d = miopen.create_rnn_descriptor()
    good = dict(hsize=8, nlayers=1, in_mode=0, direction=0, rnn_mode=2, bias_mode=1, algo=0, data_type=1)
    out = {}
    for field, bad in (("rnn_mode", 7), ("direction", 2), ("bias_mode", 5)):
        args = dict(good, **{field: bad})
        try:
            miopen.set_rnn_descriptor(d, *args.values())  # type: ignore[arg-type]
        except ValueError as exc:
            assert field in str(exc)
        else:
            raise AssertionError(f"{field}={bad} accepted")
        out[field] = raw_fn("miopenSetRNNDescriptor")(addr(d), *args.values())
    assert all(v == BADPARM for v in out.values()), out
    # our check refuses what MIOpen refuses; the one stored unchecked is the input mode (and the algorithm)
    args = dict(good, in_mode=9)
    out["in_mode (raw, unchecked by MIOpen)"] = raw_fn("miopenSetRNNDescriptor")(addr(d), *args.values())
    return out



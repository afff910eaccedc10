"""Connectionist temporal classification loss (`miopenCTCLoss`).

`probs` (and `gradients`, same dims) are ``(T, N, C)``: time steps, batch, classes (the blank
included). `labels` is the host list of every batch entry's labels, concatenated;
`label_lengths` and `input_lengths` give one length per batch entry; `losses` receives N
values. Everything MIOpen would reject is checked in Python first: one length per batch
entry, ``sum(label_lengths) == len(labels)``, labels in ``[0, C)``, input lengths at most T,
and each label sequence short enough for its input (its length plus its repeated neighbours,
which need a blank between them, at most the input length: MIOpen's own rule).
The workspace size is queried first (`miopenGetCTCLossWorkspaceSize`) and taken from scratch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from math import prod

from .. import backend as _backend
from .._args import enum_arg, int_seq
from .._bound import member
from .._generated import api
from ..errors import ShapeError
from ..layout import is_packed
from ..tensor import Tensor, as_tensor
from ..workspace import MIOpenWorkspace
from ._common import resolve_handle, resolve_workspace
from .rnn import TensorLike

__all__ = ["ctc_loss", "ctc_loss_workspace_size", "CTCProblem"]

_DEFAULT_ALGO = "MIOPEN_CTC_LOSS_ALGO_DETERMINISTIC"  # the member of the bound release, by name


def _ints(op: str, name: str, values: Sequence[int]) -> list[int]:
    return list(int_seq(values, name, op))


@dataclass(frozen=True)
class CTCProblem:
    """A checked CTC loss problem: (T, N, C) and the host arrays MIOpen reads."""

    probs: Tensor
    gradients: Tensor
    labels: list[int]
    label_lengths: list[int]
    input_lengths: list[int]
    blank_label_id: int
    apply_softmax: bool
    algo: api.CTCLossAlgo

    @property
    def dims(self) -> tuple[int, int, int]:
        t, n, c = self.probs.dims
        return t, n, c

    @classmethod
    def check(cls, op: str, probs: TensorLike, gradients: TensorLike, labels: Sequence[int],
              label_lengths: Sequence[int], input_lengths: Sequence[int], blank_label_id: int, apply_softmax: bool,
              algo: api.CTCLossAlgo | int | None) -> CTCProblem:
        pt = as_tensor(probs, "probs")
        gt = as_tensor(gradients, "gradients")
        if pt.ndim != 3:
            raise ShapeError(f"{op}: probs must be 3-D (T, N, C) = (time steps, batch, classes); got dims {pt.dims}")
        if gt.dims != pt.dims:
            raise ShapeError(f"{op}: gradients must have the dims of probs {pt.dims}; got {gt.dims}")
        if gt.dtype != pt.dtype:
            raise ShapeError(f"{op}: gradients is {gt.dtype.name} but probs is {pt.dtype.name}")
        for name, t in (("probs", pt), ("gradients", gt)):
            if not is_packed(t.dims, t.strides):
                raise ShapeError(f"{op}: {name} must be packed (contiguous); got dims {t.dims} strides {t.strides}")
        steps, batch, classes = pt.dims
        if steps < 1 or batch < 1 or classes < 1:
            raise ShapeError(f"{op}: probs needs T, N and C >= 1; got dims {pt.dims}")
        lab = _ints(op, "labels", labels)
        lab_len = _ints(op, "label_lengths", label_lengths)
        in_len = _ints(op, "input_lengths", input_lengths)
        if len(lab_len) != batch:
            raise ShapeError(f"{op}: label_lengths needs one length per batch entry ({batch}, from probs dims "
                             f"{pt.dims}); got {len(lab_len)}")
        if len(in_len) != batch:
            raise ShapeError(f"{op}: input_lengths needs one length per batch entry ({batch}, from probs dims "
                             f"{pt.dims}); got {len(in_len)}")
        if any(n < 0 for n in lab_len) or any(n < 0 for n in in_len):
            raise ShapeError(f"{op}: lengths must not be negative; got label_lengths={lab_len}, "
                             f"input_lengths={in_len}")
        if sum(lab_len) != len(lab):
            raise ShapeError(f"{op}: labels holds every batch entry's labels back to back, so len(labels) must be "
                             f"sum(label_lengths) = {sum(lab_len)}; got {len(lab)}")
        if isinstance(blank_label_id, bool) or not isinstance(blank_label_id, int) or \
                not 0 <= blank_label_id < classes:
            raise ShapeError(f"{op}: blank_label_id must be a class in [0, {classes}); got {blank_label_id!r}")
        bad = [(i, v) for i, v in enumerate(lab) if not 0 <= v < classes]
        if bad:
            i, v = bad[0]
            raise ShapeError(f"{op}: labels must be classes in [0, {classes}); labels[{i}] = {v}")
        offset = 0
        for b in range(batch):
            if in_len[b] > steps:
                raise ShapeError(f"{op}: input_lengths[{b}] = {in_len[b]} exceeds the {steps} time steps of probs")
            seq = lab[offset:offset + lab_len[b]]
            offset += lab_len[b]
            repeats = sum(1 for j in range(1, len(seq)) if seq[j] == seq[j - 1])
            if lab_len[b] + repeats > in_len[b]:
                extra = f" plus {repeats} repeated label(s) that need a blank between them" if repeats else ""
                raise ShapeError(f"{op}: batch entry {b}: label length {lab_len[b]}{extra} exceeds its input length "
                                 f"{in_len[b]}")
        if not isinstance(apply_softmax, bool):
            raise TypeError(f"{op}: apply_softmax must be a bool; got {apply_softmax!r}")
        if algo is None:
            alg = member("CTCLossAlgo", _DEFAULT_ALGO)
        else:
            alg = enum_arg(algo, api.CTCLossAlgo, "algo", op)
        return cls(pt, gt, lab, lab_len, in_len, blank_label_id, apply_softmax, alg)


@contextlib.contextmanager
def _ctc_descriptor(problem: CTCProblem) -> Iterator[api.CTCLossDescriptor]:
    desc = api.create_ctc_loss_descriptor()
    try:
        api.set_ctc_loss_descriptor(desc, problem.probs.dtype, problem.blank_label_id, problem.apply_softmax)
        yield desc
    finally:
        desc.close()


def _device_scope(device: int | None) -> contextlib.AbstractContextManager[object]:
    return _backend.current().device_guard(device) if device is not None else contextlib.nullcontext()


def _workspace_size(h: api.Handle, p: CTCProblem, desc: api.CTCLossDescriptor) -> int:
    return api.get_ctc_loss_workspace_size(h, p.probs.desc, p.gradients.desc, p.labels, p.label_lengths,
                                           p.input_lengths, p.algo, desc)


def ctc_loss_workspace_size(probs: TensorLike, gradients: TensorLike, labels: Sequence[int],
                            label_lengths: Sequence[int], input_lengths: Sequence[int], *, blank_label_id: int = 0,
                            apply_softmax: bool = True, algo: api.CTCLossAlgo | int | None = None,
                            handle: api.Handle | None = None, stream: object = None,
                            device: int | None = None) -> int:
    """Scratch bytes `ctc_loss` needs for this problem (`miopenGetCTCLossWorkspaceSize`)."""
    p = CTCProblem.check("ctc_loss_workspace_size", probs, gradients, labels, label_lengths, input_lengths,
                         blank_label_id, apply_softmax, algo)
    with _device_scope(device):
        h = resolve_handle(handle, stream, device)
        with _ctc_descriptor(p) as desc:
            return _workspace_size(h, p, desc)


def ctc_loss(probs: TensorLike, gradients: TensorLike, labels: Sequence[int], label_lengths: Sequence[int],
             input_lengths: Sequence[int], losses: TensorLike, *, blank_label_id: int = 0, apply_softmax: bool = True,
             algo: api.CTCLossAlgo | int | None = None, handle: api.Handle | None = None, stream: object = None,
             workspace: MIOpenWorkspace | None = None, device: int | None = None) -> None:
    """CTC loss per batch entry into `losses` (N values) and its gradient into `gradients`.

    With `apply_softmax` MIOpen applies a softmax over C to `probs` first (pass logits); without
    it `probs` must already be probabilities.
    """
    op = "ctc_loss"
    p = CTCProblem.check(op, probs, gradients, labels, label_lengths, input_lengths, blank_label_id, apply_softmax,
                         algo)
    lt = as_tensor(losses, "losses")
    batch = p.dims[1]
    if prod(lt.dims) != batch:
        raise ShapeError(f"{op}: losses needs one value per batch entry ({batch}); got dims {lt.dims}")
    if lt.dtype != p.probs.dtype:
        raise ShapeError(f"{op}: losses is {lt.dtype.name} but probs is {p.probs.dtype.name}")
    if not is_packed(lt.dims, lt.strides):
        raise ShapeError(f"{op}: losses must be packed (contiguous); got dims {lt.dims} strides {lt.strides}")
    dev = _backend.current().current_device() if device is None else device
    with _device_scope(device):
        h = resolve_handle(handle, stream, dev)
        with _ctc_descriptor(p) as desc:
            ws_bytes = _workspace_size(h, p, desc)
            ws_ptr = resolve_workspace(workspace, dev, stream).get(ws_bytes, _backend.current().as_stream_handle(stream))
            api.ctc_loss(h, p.probs.desc, p.probs.ptr, p.labels, p.label_lengths, p.input_lengths, lt.ptr,
                         p.gradients.desc, p.gradients.ptr, p.algo, desc, ws_ptr, ws_bytes)

"""Dropout: a `Dropout` object owns MIOpen's dropout descriptor and its PRNG states buffer.

    drop = Dropout(0.1, seed=42)
    reserve = drop.forward(x, y)         # y = x * mask / (1 - rate); the mask goes to `reserve`
    drop.backward(dy, dx, reserve)       # dx = dy * mask / (1 - rate)
    drop.close()

The states buffer (`miopenDropoutGetStatesSize`) and each reserve (`miopenDropoutGetReserveSpaceSize`)
are persistent buffers, never shared scratch. Pass ``reserve=`` to the next forward of the same
shape to reuse its buffer. With ``use_mask=True`` MIOpen reads the mask from the reserve passed
to `forward` instead of drawing a new one.
"""

from __future__ import annotations

from .._args import enum_arg
from .._bound import EnumMap
from .._generated import api
from ..descriptors import tensor_descriptor
from ..errors import ShapeError
from ..tensor import Tensor, same_dims, same_dtype
from ..workspace import PersistentBuffer
from ._common import _bool_arg, _check_rank, _desc, _device, _float_arg, _persistent, _tensors, resolve_handle

__all__ = ["Dropout", "DropoutReserve"]

_RNG: EnumMap[api.RNGType] = EnumMap("RNGType", {"xorwow": "MIOPEN_RNG_PSEUDO_XORWOW",
                                                 "pseudo_xorwow": "MIOPEN_RNG_PSEUDO_XORWOW"})


class DropoutReserve:
    """The mask of one `Dropout.forward` (a persistent buffer), which `Dropout.backward` needs."""

    def __init__(self, owner: Dropout, buffer: PersistentBuffer, nbytes: int, dims: tuple[int, ...],
                 dtype: api.DataType) -> None:
        self.owner = owner
        self.buffer = buffer
        self.nbytes = nbytes
        self.dims = dims
        self.dtype = dtype

    @property
    def closed(self) -> bool:
        try:
            self.buffer.ptr
        except ValueError:  # a closed PersistentBuffer refuses its pointer
            return True
        return False

    def data_ptr(self) -> int:
        return self.buffer.data_ptr()

    def close(self) -> None:
        self.buffer.close()

    def __enter__(self) -> DropoutReserve:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"<DropoutReserve {self.nbytes} bytes dims={self.dims} {self.dtype.name}"
                f"{' closed' if self.closed else ''}>")


class Dropout:
    """A dropout layer: descriptor (rate, seed, use_mask, state_evo, rng_mode) plus PRNG states."""

    def __init__(self, rate: float = 0.5, seed: int = 0, *, use_mask: bool = False, state_evo: bool = False,
                 rng_mode: api.RNGType | int | str = "xorwow",
                 handle: api.Handle | None = None, stream: object = None, device: int | None = None) -> None:
        fn = "Dropout"
        self.rate = _float_arg(rate, "rate", fn, 0.0, 1.0, hi_open=True)
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
            raise ValueError(f"{fn}: seed must be an int in [0, 2**64); got {seed!r}")
        self.seed = seed
        self.use_mask = _bool_arg(use_mask, "use_mask", fn)
        self.state_evo = _bool_arg(state_evo, "state_evo", fn)
        self.rng_mode = enum_arg(rng_mode, api.RNGType, "rng_mode", fn, _RNG)
        self.device = _device(device)
        self._closed = True  # until fully built
        h = resolve_handle(handle, stream, device)
        self.desc = api.create_dropout_descriptor()
        self.states: PersistentBuffer | None = None
        try:
            self.states_nbytes = api.dropout_get_states_size(h)
            self.states = _persistent(self.states_nbytes, self.device, "dropout states", stream)
            api.set_dropout_descriptor(self.desc, h, self.rate, self.states.data_ptr(), self.states_nbytes, self.seed,
                                       self.use_mask, self.state_evo, self.rng_mode)
        except BaseException:
            if self.states is not None:
                self.states.close()
            self.desc.close()
            raise
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self, fn: str) -> None:
        if self._closed:
            raise ValueError(f"{fn}: this Dropout is closed")

    def _tensors(self, fn: str, **objs: object) -> tuple[dict[str, Tensor], tuple[int, ...], api.DataType]:
        t = _tensors(fn, **objs)
        for name, tensor in t.items():
            _check_rank(fn, name, tensor, (1, 2, 3, 4, 5), "1-D to 5-D")
        return t, same_dims(fn, **t), same_dtype(fn, **t)

    def _check_device(self, fn: str, device: int | None) -> None:
        dev = _device(device)
        if dev != self.device:
            raise ValueError(f"{fn}: this Dropout lives on device {self.device}; this call runs on device {dev}")

    def _check_reserve(self, fn: str, reserve: object, dims: tuple[int, ...], dtype: api.DataType
                       ) -> DropoutReserve:
        if not isinstance(reserve, DropoutReserve):
            raise TypeError(f"{fn}: reserve must be the DropoutReserve a forward of this Dropout returned; got "
                            f"{type(reserve).__name__}")
        if reserve.owner is not self:
            raise ValueError(f"{fn}: reserve comes from another Dropout")
        if reserve.closed:
            raise ValueError(f"{fn}: reserve is closed")
        if reserve.dims != dims or reserve.dtype != dtype:
            raise ShapeError(f"{fn}: reserve was made for {reserve.dtype.name} dims {reserve.dims}; the tensors are "
                             f"{dtype.name} dims {dims}")
        return reserve

    def forward(self, x: object, y: object, *, reserve: DropoutReserve | None = None,
                handle: api.Handle | None = None, stream: object = None, device: int | None = None
                ) -> DropoutReserve:
        """y = dropout(x) (`miopenDropoutForward`); returns the reserve (mask) `backward` needs."""
        fn = "Dropout.forward"
        self._check_open(fn)
        t, dims, dtype = self._tensors(fn, x=x, y=y)
        if reserve is not None:
            self._check_reserve(fn, reserve, dims, dtype)
        elif self.use_mask:
            raise ValueError(f"{fn}: this Dropout has use_mask=True: pass the reserve that holds the mask")
        self._check_device(fn, device)
        h = resolve_handle(handle, stream, device)
        xt, yt = t["x"], t["y"]
        x_desc, y_desc = _desc(xt), _desc(yt)
        noise = tensor_descriptor(dtype, dims)  # MIOpen supports a noise shape equal to x's only
        nbytes = api.dropout_get_reserve_space_size(x_desc)
        out = reserve
        new: PersistentBuffer | None = None
        if out is None or out.buffer.nbytes < nbytes:
            new = _persistent(nbytes, self.device, "dropout reserve", stream)
        buf = new if new is not None else out.buffer if out is not None else None
        assert buf is not None
        try:
            api.dropout_forward(h, self.desc, noise, x_desc, xt.ptr, y_desc, yt.ptr, buf.ptr, nbytes)
        except BaseException:
            if new is not None:
                new.close()
            raise
        if out is None:
            assert new is not None
            return DropoutReserve(self, new, nbytes, dims, dtype)
        if new is not None:
            out.buffer.close()
            out.buffer = new
        out.nbytes = nbytes
        return out

    def backward(self, dy: object, dx: object, reserve: DropoutReserve | None, *, handle: api.Handle | None = None,
                 stream: object = None, device: int | None = None) -> None:
        """dx = dropout'(dy) with the mask of the forward that returned `reserve` (`miopenDropoutBackward`)."""
        fn = "Dropout.backward"
        self._check_open(fn)
        if reserve is None:
            raise ValueError(f"{fn}: reserve is required: pass the DropoutReserve that forward returned")
        t, dims, dtype = self._tensors(fn, dy=dy, dx=dx)
        res = self._check_reserve(fn, reserve, dims, dtype)
        self._check_device(fn, device)
        h = resolve_handle(handle, stream, device)
        dyt, dxt = t["dy"], t["dx"]
        dy_desc, dx_desc = _desc(dyt), _desc(dxt)
        noise = tensor_descriptor(dtype, dims)
        api.dropout_backward(h, self.desc, noise, dy_desc, dyt.ptr, dx_desc, dxt.ptr, res.buffer.ptr, res.nbytes)

    def close(self) -> None:
        """Destroy the descriptor and free the states buffer (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if self.states is not None:
            self.states.close()
        self.desc.close()

    def __enter__(self) -> Dropout:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"<Dropout rate={self.rate} seed={self.seed} use_mask={self.use_mask} device={self.device}"
                f"{' closed' if self._closed else ''}>")


"""Descriptors from shapes: cached immutable tensor descriptors, the RNN descriptor arrays,
convolution/pooling/activation/LRN descriptors, and typed scaling constants.

Tensor descriptors are keyed by (dtype, dims, canonical strides): equal layouts share one
descriptor. Cached descriptors (tensor, convolution, activation, pooling: `FROZEN_KINDS`) are frozen: the typed
API's setters refuse them (`_convert.handle_arg`).
"""

from __future__ import annotations

import ctypes
import enum
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeAlias, TypeVar

from . import layout
from ._args import enum_arg, int_seq
from ._generated import _support as _gs
from ._generated import api
from ._generated import _handles
from ._generated._handles import TensorDescriptor
from .errors import ScalingRuleError, ShapeError

DataTypeLike: TypeAlias = "api.DataType | int | str"


_BY_NAME: dict[str, api.DataType] = {}  # dtype names seen (torch's 'torch.float32', 'float16', ...) -> member


def data_type(dtype: DataTypeLike, name: str = "dtype", fn: str = "data_type") -> api.DataType:
    """A MIOpen data type from a member, its value, or a numpy/torch dtype or its name (errors name `fn` and
    the parameter `name`)."""
    if isinstance(dtype, api.DataType):
        return dtype
    if isinstance(dtype, (int, enum.Enum)):  # its value; never a bool or a member of another enum
        return enum_arg(dtype, api.DataType, name, fn)
    if type(dtype) is str:
        known = _BY_NAME.get(dtype)
        if known is not None:
            return known
    members = api.DataType.__members__
    if isinstance(dtype, str) and dtype in members:
        return members[dtype]
    member = members[layout.dtype_name_for(dtype, available=set(members))]
    if type(dtype) is str and len(_BY_NAME) < 256:
        _BY_NAME[dtype] = member
    return member


def itemsize(dtype: DataTypeLike) -> int:
    return layout.itemsize(data_type(dtype).name)


@_gs.fast_subclass
class FrozenTensorDescriptor(TensorDescriptor):
    """A cached tensor descriptor that remembers its dtype, dims and strides."""

    __slots__ = ("dtype", "dims", "strides")
    _frozen = True
    dtype: api.DataType
    dims: tuple[int, ...]
    strides: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        return layout.num_bytes(self.dims, self.strides, itemsize(self.dtype))

    def __repr__(self) -> str:
        return f"<FrozenTensorDescriptor {self.dtype.name} dims={self.dims} strides={self.strides}>"


_DESCRIPTOR_CACHES: weakref.WeakSet[DescriptorCache] = weakref.WeakSet()


_Key = tuple[int, tuple[int, ...], tuple[int, ...]]
_K = TypeVar("_K", bound=tuple[object, ...])
_generation = [0]
_on_clear: list[Callable[[], None]] = []


def on_clear(forget: Callable[[], None]) -> None:
    """Call `forget` whenever cached descriptors are forgotten: a memo holding descriptors (the ops keep
    some per shape) drops them then, so that they are destroyed as soon as nobody else holds them."""
    _on_clear.append(forget)


def _int_tuple(v: object) -> bool:
    return type(v) is tuple and all(type(e) is int for e in v)


class DescriptorCache:
    """An LRU cache of frozen tensor descriptors (thread-safe).

    Descriptors are keyed by canonical strides; the (member, dims, strides) a caller passed are
    remembered too, so a layout seen before skips the validation and the stride canonicalisation."""

    def __init__(self, maxsize: int = 512) -> None:
        self.maxsize = maxsize
        self._lock = threading.Lock()
        self._items: OrderedDict[_Key, FrozenTensorDescriptor] = OrderedDict()
        # (DataType member, dims, strides or None) exactly as given -> the canonical key and its descriptor
        self._seen: dict[tuple[api.DataType, tuple[int, ...], tuple[int, ...] | None],
                         tuple[_Key, FrozenTensorDescriptor]] = {}
        self.hits = 0
        self.misses = 0
        _DESCRIPTOR_CACHES.add(self)

    def get(self, dtype: DataTypeLike, dims: Sequence[int], strides: Sequence[int] | None = None
            ) -> FrozenTensorDescriptor:
        exact = (type(dtype) is api.DataType and _int_tuple(dims) and (strides is None or _int_tuple(strides)))
        return self.get_exact(dtype, dims, strides) if exact else self._get(dtype, dims, strides)  # type: ignore[arg-type]

    def get_exact(self, dtype: api.DataType, dims: tuple[int, ...], strides: tuple[int, ...] | None
                  ) -> FrozenTensorDescriptor:
        """`get` for values known to be a DataType member and tuples of ints (a `Tensor`'s)."""
        seen = self._seen.get((dtype, dims, strides))
        if seen is not None:  # this exact (member, dims, strides) was checked before
            key, desc = seen
            if not desc.closed and _touch(self._items, key, desc):
                self.hits += 1
                return desc
        return self._get(dtype, dims, strides, exact=True)

    def _get(self, dtype: DataTypeLike, dims: Sequence[int], strides: Sequence[int] | None, exact: bool = False
             ) -> FrozenTensorDescriptor:
        dt = data_type(dtype)
        d = tuple(dims)
        if not d:
            raise ShapeError("tensor_descriptor: dims must not be empty")
        s = layout.packed_strides(d) if strides is None else tuple(strides)
        if len(s) != len(d):
            raise ShapeError(f"tensor_descriptor: {len(d)} dims but {len(s)} strides")
        s = layout.canonical_strides(d, s)
        key = (int(dt), d, s)
        with self._lock:
            desc = self._items.get(key)
            if desc is not None and not desc.closed:
                self._items.move_to_end(key)
                self.hits += 1
                if exact:
                    self._remember(dtype, dims, strides, key, desc)
                return desc
            self.misses += 1
        desc = _make(dt, d, s)
        with self._lock:
            self._items[key] = desc
            while len(self._items) > self.maxsize:
                # only forget it: a caller may still use it; its finalizer destroys it when the last user is gone
                self._items.popitem(last=False)
            if exact:
                self._remember(dtype, dims, strides, key, desc)
        return desc

    def _remember(self, dtype: object, dims: object, strides: object, key: _Key, desc: FrozenTensorDescriptor
                  ) -> None:
        """Note the caller's exact spelling (a DataType member and tuples of ints: hashable, and no bool or
        list can equal a spelling that was checked). Called under the lock."""
        if len(self._seen) >= 4 * self.maxsize:
            self._seen = {}
        self._seen[(dtype, dims, strides)] = (key, desc)  # type: ignore[index]

    def clear(self) -> None:
        """Forget every cached descriptor (each is destroyed once nobody holds it any more)."""
        _generation[0] += 1
        with self._lock:
            self._items = OrderedDict()
            self._seen = {}
        for forget in _on_clear:
            forget()

    def __len__(self) -> int:
        return len(self._items)


def _touch(items: OrderedDict[Any, Any], key: object, value: object) -> bool:
    """Whether `items` holds `value` at `key`, marking it most recently used; without a lock (each dict call is
    atomic under the GIL; a key another thread evicts meanwhile only answers False)."""
    if items.get(key) is not value:
        return False
    try:
        items.move_to_end(key)
    except KeyError:
        return False
    return True


def _make(dt: api.DataType, dims: tuple[int, ...], strides: tuple[int, ...]) -> FrozenTensorDescriptor:
    with api.create_tensor_descriptor() as plain:
        api.set_tensor_descriptor(plain, dt, list(dims), list(strides))
        desc = FrozenTensorDescriptor.from_address(plain._detach(), owned=True)
    desc.dtype, desc.dims, desc.strides = dt, dims, strides
    return desc


@_gs.fast_subclass
class FrozenConvolutionDescriptor(_handles.ConvolutionDescriptor):
    """A cached, shared convolution descriptor: the typed API's setters refuse it."""

    __slots__ = ()
    _frozen = True


@_gs.fast_subclass
class FrozenActivationDescriptor(_handles.ActivationDescriptor):
    """A cached, shared activation descriptor: the typed API's setters refuse it."""

    __slots__ = ()
    _frozen = True


@_gs.fast_subclass
class FrozenPoolingDescriptor(_handles.PoolingDescriptor):
    """A cached, shared pooling descriptor: the typed API's setters refuse it."""

    __slots__ = ()
    _frozen = True


#: every descriptor class the runtime shares between callers (frozen: no setter of the typed API takes one)
FROZEN_KINDS: tuple[type[_gs.HandleBase], ...] = (FrozenTensorDescriptor, FrozenConvolutionDescriptor,
                                                  FrozenActivationDescriptor, FrozenPoolingDescriptor)
_F = TypeVar("_F", bound=_gs.HandleBase)


def _freeze(desc: _gs.HandleBase, kind: type[_F]) -> _F:
    """The frozen object of a descriptor just made and set (the plain object is left closed, owning nothing)."""
    return kind.from_address(desc._detach(), owned=True)


_cache = DescriptorCache()


def _after_fork_in_child() -> None:
    """A forked child starts with an empty cache and a fresh lock (another thread may have held it)."""
    for cache in list(_DESCRIPTOR_CACHES):
        cache._lock = threading.Lock()
        cache._items = OrderedDict()


os.register_at_fork(after_in_child=_after_fork_in_child)


def descriptor_cache() -> DescriptorCache:
    return _cache


def tensor_descriptor(dtype: DataTypeLike, dims: Sequence[int], strides: Sequence[int] | None = None
                      ) -> FrozenTensorDescriptor:
    """The cached descriptor of a tensor (packed strides by default)."""
    return _cache.get(dtype, dims, strides)


def tensor_descriptor_of(dtype: api.DataType, dims: tuple[int, ...], strides: tuple[int, ...] | None
                         ) -> FrozenTensorDescriptor:
    """`tensor_descriptor` for a `Tensor`'s own fields (a DataType member, tuples of ints): the ops' path."""
    return _cache.get_exact(dtype, dims, strides)


def descriptor_from_order_and_dims(order: layout.StorageOrder | str, dims: Sequence[int], dtype: DataTypeLike
                                   ) -> FrozenTensorDescriptor:
    """Caffe2's helper, with NHWC/NDHWC honoured through explicit strides."""
    logical, strides = layout.descriptor_from_order_and_dims(order, dims)
    return tensor_descriptor(dtype, logical, strides)


class TensorDescriptors:
    """`n` descriptors of one shape, as the RNN calls take them (`.descs`).

    Shared (the default): the n entries are one cached, frozen descriptor. ``owned=True``: n descriptors
    of their own, each created and set (Caffe2's `TensorDescriptors<T>`) and destroyed once each by
    `close()` (or `with`); a shared one's `close()` only lets go of the cached descriptor."""

    def __init__(self, n: int, dims: Sequence[int], strides: Sequence[int] | None, dtype: DataTypeLike, *,
                 owned: bool = False, fn: str = "TensorDescriptors") -> None:
        if isinstance(n, bool) or not isinstance(n, int) or isinstance(n, enum.Enum) or n < 1:
            raise ValueError(f"{fn}: n must be a positive int; got {n!r}")
        self.owned = owned
        self._closed = False
        if not owned:
            one = tensor_descriptor(dtype, dims, strides)
            self.dtype, self.dims, self.strides = one.dtype, one.dims, one.strides
            self.descs: list[api.TensorDescriptor] = [one] * n
            return
        dt = data_type(dtype)
        d = int_seq(dims, "dims", fn, lo=1)
        if not d:
            raise ShapeError(f"{fn}: dims must not be empty")
        s = layout.packed_strides(d) if strides is None else int_seq(strides, "strides", fn, lo=1)
        if len(s) != len(d):
            raise ShapeError(f"{fn}: dims and strides must have the same length; got {len(d)} dims {d} and "
                             f"{len(s)} strides {s}")
        self.dtype, self.dims, self.strides = dt, d, s
        self.descs = []
        try:
            for _ in range(n):
                desc = api.create_tensor_descriptor()
                self.descs.append(desc)
                api.set_tensor_descriptor(desc, dt, list(d), list(s))
        except BaseException:
            self.close()
            raise

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Destroy the owned descriptors, each once (idempotent); a shared set only drops its reference."""
        if self._closed:
            return
        self._closed = True
        descs, self.descs = self.descs, []
        if self.owned:
            for desc in descs:
                desc.close()

    def __enter__(self) -> TensorDescriptors:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        return len(self.descs)


# --------------------------------------------------------------------------- other descriptors

ConvMode = Literal["conv", "transpose"]
_conv_lock = threading.Lock()
_conv_cache: dict[tuple[object, ...], api.ConvolutionDescriptor] = {}


def convolution_descriptor(pads: Sequence[int], strides: Sequence[int], dilations: Sequence[int], groups: int = 1,
                           mode: ConvMode = "conv", deterministic: bool = False,
                           find_mode: api.ConvolutionFindMode | int | None = None,
                           output_pads: Sequence[int] = ()) -> api.ConvolutionDescriptor:
    """A cached N-d convolution descriptor (groups, transpose, deterministic, find mode)."""
    nd = len(pads)
    if not (len(strides) == len(dilations) == nd) or nd not in (1, 2, 3):
        raise ShapeError(f"convolution_descriptor: pads, strides and dilations need 1-3 equal lengths; got "
                         f"{len(pads)}, {len(strides)}, {len(dilations)}")
    if any(s < 1 for s in strides) or any(d < 1 for d in dilations) or any(p < 0 for p in pads):
        raise ShapeError(f"convolution_descriptor: strides and dilations must be >= 1, pads >= 0; got "
                         f"pads={tuple(pads)}, strides={tuple(strides)}, dilations={tuple(dilations)}")
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise ShapeError(f"convolution_descriptor: groups must be a positive int; got {groups!r}")
    if mode not in ("conv", "transpose"):
        raise ValueError(f"convolution_descriptor: mode must be 'conv' or 'transpose'; got {mode!r}")
    if output_pads and (mode != "transpose" or len(output_pads) != nd):
        raise ShapeError(f"convolution_descriptor: output_pads needs mode='transpose' and {nd} values; got "
                         f"{tuple(output_pads)}")
    if deterministic:
        _check_deterministic()
    key = (tuple(pads), tuple(strides), tuple(dilations), groups, mode, deterministic, find_mode, tuple(output_pads))
    with _conv_lock:
        desc = _conv_cache.get(key)
        if desc is not None and not desc.closed:
            return desc
    desc = api.create_convolution_descriptor()
    c_mode = api.ConvolutionMode.miopenTranspose if mode == "transpose" else api.ConvolutionMode.miopenConvolution
    api.init_convolution_nd_descriptor(desc, list(pads), list(strides), list(dilations), c_mode)
    if groups != 1:
        api.set_convolution_group_count(desc, groups)
    if deterministic:
        api.set_convolution_attribute(desc, api.ConvolutionAttrib.MIOPEN_CONVOLUTION_ATTRIB_DETERMINISTIC, 1)
    if find_mode is not None:
        api.set_convolution_find_mode(desc, find_mode)
    if any(output_pads):
        api.set_transpose_conv_nd_output_padding(desc, list(output_pads))
    desc = _freeze(desc, FrozenConvolutionDescriptor)
    with _conv_lock:
        _conv_cache[key] = desc
    return desc


def _check_deterministic() -> None:
    """Deterministic convolutions need MIOPEN_CONVOLUTION_ATTRIB_DETERMINISTIC (MIOpen 2.18): before that the
    bindings may lack the attribute and MIOpen answers "Attribute does not exist" (seen on the real 2.17.0)."""
    from .version import has_feature, runtime_version

    if getattr(api.ConvolutionAttrib, "MIOPEN_CONVOLUTION_ATTRIB_DETERMINISTIC", None) is None or \
            not has_feature("deterministic_attr"):
        raise NotImplementedError(f"convolution_descriptor: deterministic=True needs MIOpen 2.18 or newer "
                                  f"(MIOPEN_CONVOLUTION_ATTRIB_DETERMINISTIC); the loaded library is "
                                  f"{runtime_version() or 'older than 2.3'}")


def cache_generation() -> int:
    """Bumped whenever descriptors are forgotten (`clear_descriptor_caches`, `DescriptorCache.clear`): what
    remembers a cached descriptor (the ops' per-shape memos) checks it is still current."""
    return _generation[0]


def clear_descriptor_caches() -> None:
    """Forget every cached tensor, convolution, activation and pooling descriptor (destroyed when no longer
    held)."""
    _cache.clear()
    with _conv_lock:
        _conv_cache.clear()
    with _act_lock:
        _act_cache.clear()
        _pool_cache.clear()


def _library_changed() -> None:
    """Another library (or none) is bound: members and descriptors of the previous one are forgotten, by every
    descriptor cache."""
    _BY_NAME.clear()
    for cache in list(_DESCRIPTOR_CACHES):
        if cache is not _cache:
            cache.clear()
    clear_descriptor_caches()


_gs._on_reset.append(_library_changed)


def pooling_descriptor(mode: api.PoolingMode | int, window: Sequence[int], pads: Sequence[int],
                       strides: Sequence[int]) -> api.PoolingDescriptor:
    """An N-d pooling descriptor (index workspace mode left at MIOpen's default)."""
    if not len(window) == len(pads) == len(strides):
        raise ShapeError(f"pooling_descriptor: window, pads and strides need equal lengths; got "
                         f"{len(window)}, {len(pads)}, {len(strides)}")
    desc = api.create_pooling_descriptor()
    api.set_nd_pooling_descriptor(desc, mode, list(window), list(pads), list(strides))
    return desc


def activation_descriptor(mode: api.ActivationMode | int, alpha: float = 0.0, beta: float = 0.0,
                          gamma: float = 0.0) -> api.ActivationDescriptor:
    """A new activation descriptor (the caller owns it)."""
    desc = api.create_activation_descriptor()
    api.set_activation_descriptor(desc, mode, alpha, beta, gamma)
    return desc


_act_lock = threading.Lock()
_act_cache: OrderedDict[tuple[int, float, float, float], api.ActivationDescriptor] = OrderedDict()
_pool_cache: OrderedDict[tuple[object, ...], api.PoolingDescriptor] = OrderedDict()
ACTIVATION_CACHE_SIZE = 64
_HD = TypeVar("_HD", bound=_gs.HandleBase)


def _shared(cache: OrderedDict[_K, _HD], key: _K, make: Callable[[], _HD]) -> _HD:
    """The descriptor `cache` keeps for `key` (an LRU of ACTIVATION_CACHE_SIZE, filled under `_act_lock`), made once.

    Like the cached tensor descriptors a shared descriptor must not be modified; one the cache forgets is
    destroyed once nobody holds it any more."""
    desc = cache.get(key)
    if desc is not None and not desc.closed and _touch(cache, key, desc):
        return desc
    desc = make()
    with _act_lock:
        cache[key] = desc
        while len(cache) > ACTIVATION_CACHE_SIZE:
            cache.popitem(last=False)
    return desc


def cached_activation_descriptor(mode: api.ActivationMode, alpha: float, beta: float, gamma: float
                                 ) -> api.ActivationDescriptor:
    """The shared activation descriptor of (mode, alpha, beta, gamma), made once (`_shared`)."""
    key = (int(mode), float(alpha), float(beta), float(gamma))
    return _shared(_act_cache, key, lambda: _freeze(activation_descriptor(mode, *key[1:]), FrozenActivationDescriptor))


def cached_pooling_descriptor(mode: api.PoolingMode, window: tuple[int, ...], pads: tuple[int, ...],
                              strides: tuple[int, ...]) -> api.PoolingDescriptor:
    """The shared pooling descriptor of checked (mode, window, pads, strides), made once (`_shared`)."""
    return _shared(_pool_cache, (int(mode), window, pads, strides),
                   lambda: _freeze(pooling_descriptor(mode, list(window), list(pads), list(strides)),
                                   FrozenPoolingDescriptor))


def lrn_descriptor(mode: api.LRNMode | int, n: int, alpha: float, beta: float, k: float) -> api.LRNDescriptor:
    desc = api.create_lrn_descriptor()
    api.set_lrn_descriptor(desc, mode, n, alpha, beta, k)
    return desc


# --------------------------------------------------------------------------- scaling constants

_ONE_F, _ZERO_F = ctypes.c_float(1.0), ctypes.c_float(0.0)
_ONE_D, _ZERO_D = ctypes.c_double(1.0), ctypes.c_double(0.0)


def _is_double(dtype: DataTypeLike) -> bool:
    return data_type(dtype) == api.DataType.miopenDouble


def k_one(dtype: DataTypeLike) -> ctypes.c_float | ctypes.c_double:
    """The scaling factor 1 typed for `dtype` (float for every type but double); process-lifetime."""
    return _ONE_D if _is_double(dtype) else _ONE_F


def k_zero(dtype: DataTypeLike) -> ctypes.c_float | ctypes.c_double:
    return _ZERO_D if _is_double(dtype) else _ZERO_F


def scaling_params(dtype: DataTypeLike, alpha: float = 1.0, beta: float = 0.0
                   ) -> tuple[ctypes.c_float | ctypes.c_double, ctypes.c_float | ctypes.c_double]:
    """alpha and beta as the host scalars MIOpen reads for `dtype`."""
    if _is_double(dtype):
        return ctypes.c_double(alpha), ctypes.c_double(beta)
    return ctypes.c_float(alpha), ctypes.c_float(beta)


def check_conv_scaling(spatial_dims: int, alpha: float, beta: float) -> None:
    """MIOpen's 2-D convolutions implement only y = conv(x, w): alpha must be 1 and beta 0."""
    if spatial_dims == 2 and (alpha != 1.0 or beta != 0.0):
        raise ScalingRuleError(f"2-D convolutions in MIOpen support only alpha=1 and beta=0; got alpha={alpha}, "
                               f"beta={beta} (scale the output with op_tensor/scale_tensor instead)")

"""Convolution algorithm search: immediate mode, legacy Find, Find 2.0, and "auto" (Find 2.0 where the bound release
has it, else legacy Find), with a thread-safe cache
keyed by the whole problem, a workspace cap, out-of-memory fallbacks, and Find 2.0 solutions
persisted in a directory keyed by MIOpen version and device architecture.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import re
import stat
import threading
import warnings
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Literal, TypeVar

from . import backend as _backend
from ._generated import _support as _s
from ._generated import api
from .descriptors import FrozenTensorDescriptor
from .errors import STATUS_EXCEPTIONS, HipOutOfMemoryError, MIOpenError, WorkspaceLimitError, WorkspaceOOM
from .handles import disown
from .version import compiled_version, has_feature, require_feature, runtime_version
from .workspace import MAX_WORKSPACE_BYTES, MIOpenWorkspace, workspace_limit

Direction = Literal["forward", "backward_data", "backward_weights"]
Mode = Literal["immediate", "find", "find2", "auto"]
#: the search a plan was made with ("auto" resolves to one of these per library)
Search = Literal["immediate", "find", "find2"]
DIRECTIONS: tuple[Direction, ...] = ("forward", "backward_data", "backward_weights")
REQUEST_ALGOS = 4
MAX_SOLUTIONS = 256  # an upper bound on what GetSolutionCount may sensibly report
MAX_BLOB_BYTES = 64 * 1024 * 1024  # a saved Find 2.0 solution larger than this is treated as damaged
_T = TypeVar("_T")
_VERSION_MISMATCH: tuple[type[BaseException], ...] = tuple(
    cls for code, cls in STATUS_EXCEPTIONS.items() if cls.__name__ == "MIOpenVersionMismatchError")


class AlgoCacheWarning(UserWarning):
    """The Find 2.0 cache directory is unusable (unwritable, unreadable or damaged); plans go on without it."""


_CACHES: weakref.WeakSet[AlgoCache] = weakref.WeakSet()


@dataclass(frozen=True)
class ConvParams:
    pads: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    groups: int = 1
    transpose: bool = False
    output_pads: tuple[int, ...] = ()  # transposed convolutions: extra output size per spatial dim


@dataclass(frozen=True)
class ConvKey:
    """Everything that decides which algorithm is right (handles are deliberately not part of it)."""

    direction: Direction
    dtype: int
    x: tuple[tuple[int, ...], tuple[int, ...]]
    w: tuple[tuple[int, ...], tuple[int, ...]]
    y: tuple[tuple[int, ...], tuple[int, ...]]
    conv: ConvParams
    deterministic: bool
    device: int
    arch: str
    miopen_version: str
    mode: str = "immediate"  # a plan found one way is not reused by a planner searching another way
    workspace_cap: int | None = None
    benchmark: bool = False
    handle_id: int = 0  # legacy Find registers its invokers on the handle it ran on: find plans are per handle

    def __hash__(self) -> int:
        """The fields' hash, computed once (the plan cache hashes the key on every op call); not pickled."""
        known: int | None = self.__dict__.get("_hash")
        if known is None:
            known = hash(tuple(getattr(self, f.name) for f in fields(self)))
            object.__setattr__(self, "_hash", known)
        return known

    def __getstate__(self) -> dict[str, object]:
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    def digest(self) -> str:
        return hashlib.sha256(repr(self).encode()).hexdigest()[:32]


@dataclass
class ConvPlan:
    """The chosen algorithm: a legacy algo (find), a solution id (immediate) or a Solution (find2)."""

    key: ConvKey
    mode: Search
    workspace_bytes: int
    algo: int | None = None
    solution_id: int | None = None
    solution: api.Solution | None = None
    time_ms: float | None = None
    fallback: str | None = None  # why the fastest candidate was not used
    blob: bytes | None = field(default=None, repr=False)


class AlgoCache:
    """Thread-safe plans by problem key, with Find 2.0 solutions saved to / loaded from a directory."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._plans: dict[ConvKey, ConvPlan] = {}
        self._warned: set[str] = set()
        self._disabled: set[str] = set()
        self.hits = 0
        self.misses = 0
        #: bumped whenever a plan the cache held may be gone or replaced (clear, a put over a key, a fork): what
        #: remembers a plan of this cache confirms it by this number instead of a lookup
        self.generation = 0
        _CACHES.add(self)

    def get(self, key: ConvKey) -> ConvPlan | None:
        with self._lock:
            plan = self._plans.get(key)
            if plan is None:
                self.misses += 1
            else:
                self.hits += 1
            return plan

    def hit(self, key: ConvKey) -> ConvPlan | None:
        """`get` that counts only a hit (the caller asks `get` when this finds nothing), without the lock: every op
        call on a planned shape asks it, and a dict lookup is atomic. `hits` is a statistic: two threads counting
        at the same instant could undercount it, never change a plan."""
        plan = self._plans.get(key)
        if plan is not None:
            self.hits += 1
        return plan

    def put(self, plan: ConvPlan) -> None:
        with self._lock:
            old = self._plans.get(plan.key)
            if old is not None and old is not plan:
                self.generation += 1
            self._plans[plan.key] = plan

    def clear(self) -> None:
        with self._lock:
            self.generation += 1
            self._plans.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._plans)

    # ---------------------------------------------------------------- Find 2.0 persistence
    #
    # Persistence is best effort: a cache directory that cannot be read or written (or whose files
    # are damaged) never fails a plan. The first problem with a directory warns once
    # (AlgoCacheWarning); a directory that cannot be read or written is then not used again by
    # this cache (plans are still cached in memory).

    @staticmethod
    def _dir(root: Path, key: ConvKey) -> Path:
        return Path(root) / _path_part(key.miopen_version) / _path_part(key.arch or "unknown-arch")

    def _problem(self, root: Path, what: str, exc: BaseException | None, disable: bool) -> None:
        """Warn once per directory; stop using it when `disable`."""
        where = str(root)
        with self._lock:
            first = where not in self._warned
            self._warned.add(where)
            if disable:
                self._disabled.add(where)
        if first:
            detail = f": {exc}" if exc is not None else ""
            warnings.warn(f"algorithm cache {where}: {what}{detail}; " +
                          ("not using it for the rest of this process (plans are still cached in memory)" if disable
                           else "searching again"), AlgoCacheWarning, stacklevel=3)

    def disabled(self, root: Path) -> bool:
        """Whether persistence in `root` was given up after an I/O error."""
        with self._lock:
            return str(root) in self._disabled

    def save(self, root: Path) -> int:
        """Write every Find 2.0 solution as `<root>/<MIOpen version>/<arch>/<key digest>.bin`."""
        with self._lock:
            plans = [p for p in self._plans.values() if p.mode == "find2" and p.solution is not None]
        for plan in plans:
            self.save_plan(root, plan)
        return len(plans)

    def save_plan(self, root: Path, plan: ConvPlan) -> None:
        """Write one Find 2.0 solution (atomically: readers never see a partial blob); best effort."""
        if plan.solution is None or self.disabled(root):
            return
        try:
            blob = plan.blob or api.save_solution(plan.solution)
        except MIOpenError as exc:
            self._problem(root, "MIOpen could not serialise a solution", exc, disable=False)
            return
        plan.blob = blob
        d = self._dir(root, plan.key)
        tmp: Path | None = None
        try:
            d.mkdir(parents=True, exist_ok=True)
            for name, data in ((f"{plan.key.digest()}.key", (repr(plan.key) + "\n").encode()),
                               (f"{plan.key.digest()}.bin", blob)):
                tmp = d / f".{name}.{os.getpid()}.{threading.get_ident()}.tmp"
                tmp.write_bytes(data)
                os.replace(tmp, d / name)
                tmp = None
        except (OSError, ValueError) as exc:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    tmp.unlink()
            self._problem(root, "cannot write a solution there", exc, disable=True)

    def load(self, root: Path, key: ConvKey, workspace_bytes: int | None = None) -> ConvPlan | None:
        """The saved solution for `key`, or None; a stale (VersionMismatch) or damaged blob is deleted.
        Never raises for what is on disk."""
        if self.disabled(root):
            return None
        path = self._dir(root, key) / f"{key.digest()}.bin"
        keyfile = path.with_suffix(".key")
        try:
            st = path.stat()
            if not stat.S_ISREG(st.st_mode):
                return None
            if st.st_size > MAX_BLOB_BYTES:
                raise ValueError(f"{st.st_size} bytes (at most {MAX_BLOB_BYTES})")
            if keyfile.exists() and keyfile.read_bytes() != (repr(key) + "\n").encode():
                raise ValueError("its key file names another problem")
            blob = path.read_bytes()
        except FileNotFoundError:
            return None
        except ValueError as exc:
            self._drop(root, path, f"damaged solution {path.name}", exc)
            return None
        except OSError as exc:
            self._problem(root, "cannot read it", exc, disable=True)
            return None
        try:
            solution = api.load_solution(blob)
        except MIOpenError as exc:  # VersionMismatch (another MIOpen), or a damaged blob: drop it and search again
            self._drop(root, path, f"unusable solution {path.name}", exc, quiet=isinstance(exc, _VERSION_MISMATCH))
            return None
        try:
            ws = api.get_solution_workspace_size(solution) if workspace_bytes is None else workspace_bytes
            solver = api.get_solution_solver_id(solution)
        except MIOpenError as exc:
            solution.close()
            self._drop(root, path, f"unusable solution {path.name}", exc)
            return None
        plan = ConvPlan(key=key, mode="find2", workspace_bytes=ws, solution=solution, blob=blob, solution_id=solver)
        self.put(plan)
        return plan

    def _drop(self, root: Path, path: Path, what: str, exc: BaseException, quiet: bool = False) -> None:
        """Delete a blob (and its key file) that cannot be used; warn once unless `quiet`."""
        try:
            path.unlink(missing_ok=True)
            path.with_suffix(".key").unlink(missing_ok=True)
        except OSError as err:
            self._problem(root, f"{what} cannot be deleted", err, disable=True)
            return
        if not quiet:
            self._problem(root, what, exc, disable=False)

    def _after_fork(self) -> None:
        """In a forked child: a fresh lock and no plans (solutions belong to the parent's MIOpen)."""
        self._lock = threading.Lock()
        for plan in self._plans.values():
            if plan.solution is not None:
                _disown(plan.solution)
        self.generation += 1
        self._plans = {}


def _path_part(text: str) -> str:
    """A single, harmless path component (the arch string comes from the driver)."""
    part = re.sub(r"[^A-Za-z0-9_.:+-]", "_", text)[:64]
    return part if part.strip(".") else "_"


def _disown(handle: api.Solution) -> None:
    """Forget a handle without destroying it (it belongs to another process's MIOpen)."""
    disown(handle)


_cache = AlgoCache()


def _after_fork_in_child() -> None:
    for cache in list(_CACHES):
        cache._after_fork()


os.register_at_fork(after_in_child=_after_fork_in_child)


def algo_cache() -> AlgoCache:
    return _cache


def _layout(d: FrozenTensorDescriptor) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return (d.dims, d.strides)


_version_lock = threading.Lock()
_version_memo: list[tuple[object, str]] = []  # (loaded library, its version text): one miopenGetVersion per library


def _miopen_version_text() -> str:
    """The loaded library's version for plan keys, asked once per loaded library (not on every plan lookup:
    against the real library a cache hit would otherwise still call miopenGetVersion)."""
    lib = _s.library()
    with _version_lock:
        if _version_memo and _version_memo[0][0] is lib:
            return _version_memo[0][1]
    text = str(runtime_version() or compiled_version())
    with _version_lock:
        _version_memo[:] = [(lib, text)]
    return text


def _library_changed() -> None:
    """load_library/unload_library: ask the version again, and forget every cache's plans (their solutions
    belong to the library that found them)."""
    with _version_lock:
        _version_memo.clear()
    for cache in list(_CACHES):
        cache.clear()


_s._on_reset.append(_library_changed)


def make_key(direction: Direction, x: FrozenTensorDescriptor, w: FrozenTensorDescriptor, y: FrozenTensorDescriptor,
             conv: ConvParams, deterministic: bool, device: int | None = None, *, mode: str = "immediate",
             workspace_cap: int | None = None, benchmark: bool = False, handle_id: int = 0) -> ConvKey:
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {', '.join(DIRECTIONS)}; got {direction!r}")
    dev = _backend.current().current_device() if device is None else device
    return ConvKey(direction=direction, dtype=int(x.dtype), x=_layout(x), w=_layout(w), y=_layout(y), conv=conv,
                   deterministic=deterministic, device=dev, arch=_backend.current().device_arch(dev) or "",
                   miopen_version=_miopen_version_text(), mode=mode, workspace_cap=workspace_cap,
                   benchmark=benchmark, handle_id=handle_id)


class ConvPlanner:
    """Chooses (and caches) how to run a convolution.

    immediate: GetSolutionCount/GetSolution, the fastest solution that fits the workspace cap, compiled
    ahead; find: workspace size queried first, then Find*Algorithm with that workspace; find2:
    Problem + FindOptions (workspace limit) + FindSolutions, optionally persisted in `cache_dir`; auto: find2
    where the bound release has Find 2.0 (MIOpen >= 2.19), else find (`search`).
    Out-of-memory or the cap: fall back to a solution needing no workspace (GEMM first), recorded
    in `plan.fallback`.
    """

    def __init__(self, mode: Mode = "immediate", *, benchmark: bool = False, deterministic: bool = False,
                 workspace_limit_bytes: int | None = None, compile_ahead: bool = True, cache: AlgoCache | None = None,
                 cache_dir: Path | None = None) -> None:
        if mode not in ("immediate", "find", "find2", "auto"):
            raise ValueError(f"ConvPlanner: mode must be 'immediate', 'find', 'find2' or 'auto'; got {mode!r}")
        if workspace_limit_bytes is not None and (isinstance(workspace_limit_bytes, bool)
                                                  or not isinstance(workspace_limit_bytes, int)
                                                  or not 0 <= workspace_limit_bytes <= MAX_WORKSPACE_BYTES):
            raise ValueError(f"ConvPlanner: workspace_limit_bytes must be None or an int in [0, "
                             f"{MAX_WORKSPACE_BYTES}]; got {workspace_limit_bytes!r}")
        if cache_dir is not None:
            if not isinstance(cache_dir, (str, os.PathLike)) or not os.fspath(cache_dir):
                raise TypeError(f"ConvPlanner: cache_dir must be a path or None; got {cache_dir!r}")
            cache_dir = Path(cache_dir)
        self.mode: Mode = mode
        self.benchmark = benchmark
        self.deterministic = deterministic
        self.workspace_limit_bytes = workspace_limit_bytes
        self.compile_ahead = compile_ahead
        self.cache = cache if cache is not None else _cache
        self.cache_dir = cache_dir
        self._auto: tuple[object, Search] | None = None  # (the library it was resolved for, the search)

    @property
    def search(self) -> Search:
        """The search this planner runs with the loaded library: its mode, "auto" resolved to "find2" where the
        bound release has Find 2.0 and to legacy "find" where it has not (resolved once per library)."""
        if self.mode != "auto":
            return self.mode
        lib = _s.library()
        known = self._auto
        if known is None or known[0] is not lib:
            search: Search = "find2" if has_feature("find2") else "find"
            self._auto = known = (lib, search)
        return known[1]

    def cap(self, workspace: MIOpenWorkspace | None) -> int | None:
        other = workspace.cap() if workspace is not None else workspace_limit()  # a workspace's cap holds the global
        own = self.workspace_limit_bytes
        return other if own is None else (own if other is None else min(own, other))

    def key(self, handle: api.Handle, direction: Direction, x: FrozenTensorDescriptor, w: FrozenTensorDescriptor,
            y: FrozenTensorDescriptor, conv: ConvParams, workspace: MIOpenWorkspace | None = None,
            device: int | None = None) -> ConvKey:
        """The cache key this planner uses for a problem."""
        search = self.search
        return make_key(direction, x, w, y, conv, self.deterministic, device, mode=search,
                        workspace_cap=self.cap(workspace), benchmark=self.benchmark,
                        handle_id=handle.address if search == "find" else 0)

    def plan(self, handle: api.Handle, direction: Direction, x: FrozenTensorDescriptor, w: FrozenTensorDescriptor,
             y: FrozenTensorDescriptor, conv_desc: api.ConvolutionDescriptor, conv: ConvParams,
             *, ptrs: tuple[int, int, int] | None = None, workspace: MIOpenWorkspace | None = None,
             device: int | None = None) -> ConvPlan:
        """The plan for this problem (from the cache when known). `ptrs` = (x, w, y) device buffers,
        needed by find/find2 (they run the candidates)."""
        search = self.search
        if search == "find2":
            require_feature("find2", "ConvPlanner('find2')")
        key = self.key(handle, direction, x, w, y, conv, workspace, device)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        if search == "find2" and self.cache_dir is not None:
            loaded = self.cache.load(self.cache_dir, key)
            if loaded is not None:
                return loaded
        if search != "find2":
            _backend.current().check_find(f"ConvPlanner({self.mode!r})")
        if search == "immediate":
            plan = self._immediate(handle, key, x, w, y, conv_desc, workspace, ptrs)
        elif search == "find":
            if ptrs is None:
                raise ValueError("ConvPlanner(mode='find').plan needs ptrs=(x, w, y): Find runs the candidates")
            plan = self._find(handle, key, x, w, y, conv_desc, ptrs, workspace)
        else:
            plan = self._find2(handle, key, x, w, y, conv_desc, workspace)
        self.cache.put(plan)
        if search == "find2" and self.cache_dir is not None:
            self.cache.save_plan(self.cache_dir, plan)
        return plan

    # ---------------------------------------------------------------- immediate
    def _immediate(self, handle: api.Handle, key: ConvKey, x: FrozenTensorDescriptor, w: FrozenTensorDescriptor,
                   y: FrozenTensorDescriptor, conv: api.ConvolutionDescriptor,
                   workspace: MIOpenWorkspace | None, ptrs: tuple[int, int, int] | None = None) -> ConvPlan:
        d = key.direction
        try:
            sols = _solutions(handle, d, x, w, y, conv)
        except MIOpenError as exc:
            # MIOpen's OpenCL backend lists solutions only after a Find of the problem (its fallback without
            # the find-db considers only dynamic solvers, none of them OpenCL): run one, then ask again
            if int(exc.status) != 6 or _backend.current().name != "OpenCL":
                raise
            if ptrs is None:
                raise ValueError(f"ConvPlanner(mode='immediate').plan on MIOpen's OpenCL backend needs "
                                 f"ptrs=(x, w, y): MIOpen lists the solutions of a problem only after a Find, "
                                 f"which runs the candidates") from exc
            self._find(handle, key, x, w, y, conv, ptrs, workspace)
            sols = _solutions(handle, d, x, w, y, conv)
        if not sols:
            raise _no_solution(f"immediate mode ({d})", {"solutions": 0})
        cap = self.cap(workspace)
        ordered = sorted(sols, key=lambda s: s.time)
        def is_gemm(s: api.ConvSolution) -> bool:
            return int(s.algorithm) == int(api.ConvAlgorithm.miopenConvolutionAlgoGEMM)

        chosen, fallback = self._pick(ordered, cap, lambda s: int(s.workspace_size), is_gemm)
        chosen, fallback = self._reserve(chosen, fallback, ordered, lambda s: int(s.workspace_size), is_gemm,
                                         workspace)
        if self.compile_ahead:
            if d == "forward":
                api.convolution_forward_compile_solution(handle, w, x, conv, y, chosen.solution_id)
            elif d == "backward_data":
                api.convolution_backward_data_compile_solution(handle, y, w, conv, x, chosen.solution_id)
            else:
                api.convolution_backward_weights_compile_solution(handle, y, x, conv, w, chosen.solution_id)
        return ConvPlan(key=key, mode="immediate", workspace_bytes=int(chosen.workspace_size), algo=int(chosen.algorithm),
                        solution_id=int(chosen.solution_id), time_ms=float(chosen.time), fallback=fallback)

    # ---------------------------------------------------------------- legacy find
    def _find(self, handle: api.Handle, key: ConvKey, x: FrozenTensorDescriptor, w: FrozenTensorDescriptor,
              y: FrozenTensorDescriptor, conv: api.ConvolutionDescriptor, ptrs: tuple[int, int, int],
              workspace: MIOpenWorkspace | None) -> ConvPlan:
        d = key.direction
        xp, wp, yp = ptrs
        if d == "forward":
            need = api.convolution_forward_get_work_space_size(handle, w, x, conv, y)
        elif d == "backward_data":
            need = api.convolution_backward_data_get_work_space_size(handle, y, w, conv, x)
        else:
            need = api.convolution_backward_weights_get_work_space_size(handle, y, x, conv, w)
        cap = self.cap(workspace)
        size = 0 if workspace is None else need if cap is None else min(need, cap)
        fallback = None if size == need else f"Find searched with {size} of the {need} bytes of workspace it asked for"
        ptr: int | None = None
        if workspace is not None and size:
            try:
                ptr = workspace.get(size)
            except (WorkspaceOOM, WorkspaceLimitError, HipOutOfMemoryError) as exc:
                size, ptr, fallback = 0, None, f"out of memory for {need} bytes of workspace ({exc}); searched without"
        algo_of: Callable[[api.ConvAlgoPerf], int]
        if d == "forward":
            perf = api.find_convolution_forward_algorithm(handle, x, xp, w, wp, conv, y, yp, REQUEST_ALGOS, ptr, size,
                                                          self.benchmark)
            algo_of = lambda p: int(p.fwd_algo)  # noqa: E731
        elif d == "backward_data":
            perf = api.find_convolution_backward_data_algorithm(handle, y, yp, w, wp, conv, x, xp, REQUEST_ALGOS, ptr,
                                                                size, self.benchmark)
            algo_of = lambda p: int(p.bwd_data_algo)  # noqa: E731
        else:
            perf = api.find_convolution_backward_weights_algorithm(handle, y, yp, x, xp, conv, w, wp, REQUEST_ALGOS, ptr,
                                                                   size, self.benchmark)
            algo_of = lambda p: int(p.bwd_weights_algo)  # noqa: E731
        if not perf:
            raise _no_solution(f"Find ({d})", {"results": 0})
        ordered = sorted(perf, key=lambda p: p.time)
        fits = [p for p in ordered if int(p.memory) <= size]
        chosen = fits[0] if fits else min(ordered, key=lambda p: int(p.memory))
        if chosen is not ordered[0] and fallback is None:
            fallback = f"the fastest algorithm needs {int(ordered[0].memory)} bytes; {size} available"
        return ConvPlan(key=key, mode="find", workspace_bytes=int(chosen.memory), algo=algo_of(chosen),
                        time_ms=float(chosen.time), fallback=fallback)

    # ---------------------------------------------------------------- Find 2.0
    def _find2(self, handle: api.Handle, key: ConvKey, x: FrozenTensorDescriptor, w: FrozenTensorDescriptor,
               y: FrozenTensorDescriptor, conv: api.ConvolutionDescriptor,
               workspace: MIOpenWorkspace | None) -> ConvPlan:
        direction = {"forward": api.ProblemDirection.miopenProblemDirectionForward,
                     "backward_data": api.ProblemDirection.miopenProblemDirectionBackward,
                     "backward_weights": api.ProblemDirection.miopenProblemDirectionBackwardWeights}[key.direction]
        ids = api.TensorArgumentId
        with api.create_conv_problem(conv, direction) as problem, api.create_find_options() as options:
            api.set_problem_tensor_descriptor(problem, ids.miopenTensorConvolutionX, x)
            api.set_problem_tensor_descriptor(problem, ids.miopenTensorConvolutionW, w)
            api.set_problem_tensor_descriptor(problem, ids.miopenTensorConvolutionY, y)
            cap = self.cap(workspace)
            if cap is not None:
                api.set_find_option_workspace_limit(options, cap)
            solutions = [s for s in api.find_solutions(handle, problem, options, REQUEST_ALGOS) if s is not None]
        if not solutions:
            raise _no_solution("Find 2.0", {"solutions": 0})
        sized = sorted(((api.get_solution_time(s), api.get_solution_workspace_size(s), s) for s in solutions),
                       key=lambda t: t[0])
        chosen, fallback = self._pick(sized, cap, lambda t: int(t[1]), lambda t: False)
        chosen, fallback = self._reserve(chosen, fallback, sized, lambda t: int(t[1]), lambda t: False, workspace)
        for _, _, s in sized:
            if s is not chosen[2]:
                s.close()
        sol = chosen[2]
        return ConvPlan(key=key, mode="find2", workspace_bytes=int(chosen[1]), solution=sol,
                        solution_id=api.get_solution_solver_id(sol), time_ms=float(chosen[0]), fallback=fallback)

    # ---------------------------------------------------------------- choices
    @staticmethod
    def _pick(ordered: list[_T], cap: int | None, ws: Callable[[_T], int], is_gemm: Callable[[_T], bool]
              ) -> tuple[_T, str | None]:
        """The fastest candidate within the cap (a zero-workspace one always fits; GEMM preferred among those
        when nothing with workspace fits)."""
        if cap is None or ws(ordered[0]) <= cap:
            return ordered[0], None
        fits = [c for c in ordered if 0 < ws(c) <= cap]
        zero = [c for c in ordered if ws(c) == 0]
        if fits:
            return fits[0], f"the fastest candidate needs {ws(ordered[0])} bytes; the cap is {cap}"
        if zero:
            pick = ([c for c in zero if is_gemm(c)] or zero)[0]
            return pick, (f"the fastest candidate needs {ws(ordered[0])} bytes and none with workspace fits the cap "
                          f"of {cap} bytes; fell back to a zero-workspace one{' (GEMM)' if is_gemm(pick) else ''}")
        raise WorkspaceLimitError(f"no algorithm fits the workspace cap of {cap} bytes (smallest needs "
                                  f"{min(ws(c) for c in ordered)})")

    @staticmethod
    def _reserve(chosen: _T, fallback: str | None, ordered: list[_T], ws: Callable[[_T], int],
                 is_gemm: Callable[[_T], bool], workspace: MIOpenWorkspace | None) -> tuple[_T, str | None]:
        """Allocate the chosen workspace now; on out-of-memory fall back to a zero-workspace candidate,
        GEMM first."""
        need = ws(chosen)
        if workspace is None or need == 0:
            return chosen, fallback
        try:
            workspace.get(need)
            return chosen, fallback
        except (WorkspaceOOM, HipOutOfMemoryError) as exc:
            zero = [c for c in ordered if ws(c) == 0]
            if not zero:
                raise
            pick = ([c for c in zero if is_gemm(c)] or zero)[0]
            return pick, (f"out of memory for {need} bytes of workspace ({exc}); fell back to a zero-workspace "
                          f"one{' (GEMM)' if is_gemm(pick) else ''}")

    # ---------------------------------------------------------------- running
    def run(self, plan: ConvPlan, handle: api.Handle, x: FrozenTensorDescriptor, xp: int, w: FrozenTensorDescriptor,
            wp: int, y: FrozenTensorDescriptor, yp: int, conv: api.ConvolutionDescriptor,
            workspace: MIOpenWorkspace | None, alpha: float = 1.0, beta: float = 0.0, *, planned: bool = False
            ) -> None:
        """Run the planned convolution (x, w, y are the forward roles: for backward_data y is dy and x is dx).

        Only legacy find mode takes alpha/beta; immediate mode and Find 2.0 compute y = conv(x, w)
        (ops.conv blends other scalings itself), so other values raise here rather than being dropped.
        `planned`: x, w and y are the descriptors the plan was made with (an immediate solution is not checked again).
        """
        if plan.mode != "find" and (alpha != 1.0 or beta != 0.0):
            raise ValueError(f"ConvPlanner.run: {plan.mode} mode computes y = conv(x, w) only; got alpha={alpha}, "
                             f"beta={beta}")
        if plan.workspace_bytes and workspace is None:
            raise ValueError(f"ConvPlanner.run: this plan needs {plan.workspace_bytes} bytes of workspace; pass one")
        ws = workspace.get(plan.workspace_bytes) if (workspace is not None and plan.workspace_bytes) else None
        size = plan.workspace_bytes if ws is not None else 0
        d = plan.key.direction
        if plan.mode == "immediate":
            assert plan.solution_id is not None
            if not planned:
                _check_solution(handle, plan, x, w, y, conv)
            if d == "forward":
                api.convolution_forward_immediate(handle, w, wp, x, xp, conv, y, yp, ws, size, plan.solution_id)
            elif d == "backward_data":
                api.convolution_backward_data_immediate(handle, y, yp, w, wp, conv, x, xp, ws, size, plan.solution_id)
            else:
                api.convolution_backward_weights_immediate(handle, y, yp, x, xp, conv, w, wp, ws, size,
                                                           plan.solution_id)
        elif plan.mode == "find":
            assert plan.algo is not None
            a, b = _scalars(x, alpha, beta)
            if d == "forward":
                api.convolution_forward(handle, a, x, xp, w, wp, conv, plan.algo, b, y, yp, ws, size)
            elif d == "backward_data":
                api.convolution_backward_data(handle, a, y, yp, w, wp, conv, plan.algo, b, x, xp, ws, size)
            else:
                api.convolution_backward_weights(handle, a, y, yp, x, xp, conv, plan.algo, b, w, wp, ws, size)
        else:
            assert plan.solution is not None
            ids = api.TensorArgumentId
            # (id, descriptor, buffer): the wrapper makes the descriptor variables MIOpen reads through
            api.run_solution(handle, plan.solution, [(ids.miopenTensorConvolutionX, x, xp),
                                                     (ids.miopenTensorConvolutionW, w, wp),
                                                     (ids.miopenTensorConvolutionY, y, yp)], ws, size)


def _solutions(handle: api.Handle, d: Direction, x: FrozenTensorDescriptor, w: FrozenTensorDescriptor,
               y: FrozenTensorDescriptor, conv: api.ConvolutionDescriptor) -> list[api.ConvSolution]:
    """The solutions MIOpen lists for the problem (GetSolutionCount, then GetSolution)."""
    if d == "forward":
        n = api.convolution_forward_get_solution_count(handle, w, x, conv, y)
        return list(api.convolution_forward_get_solution(handle, w, x, conv, y, min(max(n, 1), MAX_SOLUTIONS)))
    if d == "backward_data":
        n = api.convolution_backward_data_get_solution_count(handle, y, w, conv, x)
        return list(api.convolution_backward_data_get_solution(handle, y, w, conv, x, min(max(n, 1), MAX_SOLUTIONS)))
    n = api.convolution_backward_weights_get_solution_count(handle, y, x, conv, w)
    return list(api.convolution_backward_weights_get_solution(handle, y, x, conv, w, min(max(n, 1), MAX_SOLUTIONS)))


#: (direction, x, w, y layouts, conv descriptor address, solution id) already checked against MIOpen's list
_CHECKED: set[tuple[object, ...]] = set()
_CHECKED_MAX = 4096


def _check_solution(handle: api.Handle, plan: ConvPlan, x: FrozenTensorDescriptor, w: FrozenTensorDescriptor,
                    y: FrozenTensorDescriptor, conv: api.ConvolutionDescriptor) -> None:
    """Refuse an Immediate call with a solution id MIOpen does not list for this problem: MIOpen does not check it
    (a wrong id computes garbage or crashes the process). A plan run on the problem it was made for passes at once;
    any other problem is checked against GetSolution (remembered per problem and id)."""
    d = plan.key.direction
    layouts = (_layout(x), _layout(w), _layout(y))
    if (plan.key.x, plan.key.w, plan.key.y) == layouts and plan.key.dtype == int(x.dtype):
        return
    key = (d, int(x.dtype), layouts, conv.address, plan.solution_id)
    if key in _CHECKED:
        return
    try:
        listed = {int(s.solution_id) for s in _solutions(handle, d, x, w, y, conv)}
    except MIOpenError:
        listed = set()
    if plan.solution_id not in listed:
        raise ValueError(f"ConvPlanner.run: solution {plan.solution_id} (planned for x {plan.key.x}, w {plan.key.w}, "
                         f"y {plan.key.y}) is not among the solutions MIOpen lists for this {d} problem "
                         f"(x {layouts[0]}, w {layouts[1]}, y {layouts[2]}: {sorted(listed) or 'none'}); MIOpen "
                         f"does not check it and would compute garbage or crash: plan this problem")
    if len(_CHECKED) >= _CHECKED_MAX:
        _CHECKED.clear()
    _CHECKED.add(key)


def _no_solution(where: str, args: dict[str, object]) -> MIOpenError:
    """MIOpen offered no algorithm: the NotImplemented status exception (also a NotImplementedError)."""
    return STATUS_EXCEPTIONS.get(6, MIOpenError)(6, where, args)


def _scalars(x: FrozenTensorDescriptor, alpha: float, beta: float) -> tuple[ctypes.c_float | ctypes.c_double,
                                                                           ctypes.c_float | ctypes.c_double]:
    from .descriptors import scaling_params

    return scaling_params(x.dtype, alpha, beta)

"""The generated package's support: loading the library and binding the layer of its release.

The other jobs live in modules of their own, re-exported here for the generated code (`_s.as_int`):
`_search` (where the library is looked for), `_selection` (which release serves a library),
`_convert` and `_pointers` (argument conversion, the one device-pointer reader), `_elements`
(run-time element encodings), `_handlebase` (handle ownership), `_inflight` (the in-flight guard),
`_status` (status codes), `_state` (the library state they share) and `_target` (the target's facts)."""

from __future__ import annotations

import ctypes
import functools
import importlib
import os
import struct
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence

from . import _state
from ._search import library_candidates
from ._target import (
    FIND_LIBRARY_NAME as FIND_LIBRARY_NAME,
    LIB_NAME as LIB_NAME,
    LIBRARY_ENV as LIBRARY_ENV,
    LIBRARY_NAMES as LIBRARY_NAMES,
    LIBRARY_ROOT_ENV as LIBRARY_ROOT_ENV,
    LIBRARY_PREFIX_ENVS as LIBRARY_PREFIX_ENVS,
    LIBRARY_ROOTS as LIBRARY_ROOTS,
    LIBRARY_WHEEL_DIRS as LIBRARY_WHEEL_DIRS,
    RELEASES as RELEASES,
    SKIP_VERSION_CHECK_ENV as SKIP_VERSION_CHECK_ENV,
    VERSION_GETTER as VERSION_GETTER,
    VersionError as VersionError,
    VersionWarning as VersionWarning,
)
from ._target import MODULES as _MODULES
from ._target import *  # noqa: F403  the version error classes under the target's names (e.g. MIOpenVersionError)
from ._text import (
    cut as cut,
    LIST_MAX as LIST_MAX,
    name_list as name_list,
    QUOTE_MAX as QUOTE_MAX,
    quoted as quoted,
    RELEASES_MAX as RELEASES_MAX,
    shown as shown,
)
from ._status import (
    _raise_hook as _raise_hook,
    raise_status as raise_status,
    StatusHook as StatusHook,
    summarize as summarize,
)
from ._pointers import (
    address_held as address_held,
    ADDRESS_LIMIT as ADDRESS_LIMIT,
    as_device_ptr as as_device_ptr,
    as_opaque as as_opaque,
    as_stream as as_stream,
    buffer_bytes as buffer_bytes,
    check_address as check_address,
    check_described as check_described,
    check_extent as check_extent,
    check_sized as check_sized,
    device_arg as device_arg,
    DEVICE_ARGS as DEVICE_ARGS,
    DEVICE_ARGS_MAX as DEVICE_ARGS_MAX,
    DLPACK_DEVICE_TYPES as DLPACK_DEVICE_TYPES,
    span_bytes as span_bytes,
    typed_pointer as typed_pointer,
)
from ._handlebase import (
    _retire_live as _retire_live,
    fast_subclass as fast_subclass,
    HandleBase as HandleBase,
)
from ._inflight import (
    calls_in_flight as calls_in_flight,
    wait_idle as wait_idle,
)
from ._convert import (
    _ENUM_PY as _ENUM_PY,
    as_blob as as_blob,
    as_bool as as_bool,
    as_char as as_char,
    as_cstring as as_cstring,
    as_enum as as_enum,
    as_float as as_float,
    as_float32 as as_float32,
    as_handle as as_handle,
    as_int as as_int,
    as_sequence as as_sequence,
    bool_elem as bool_elem,
    buffer_elem as buffer_elem,
    check_length as check_length,
    common_length as common_length,
    double_scalar as double_scalar,
    Elem as Elem,
    enum_elem as enum_elem,
    enum_expected as enum_expected,
    enum_py_name as enum_py_name,
    EnumMeta as EnumMeta,
    float_elem as float_elem,
    float_scalar as float_scalar,
    FLT_MAX as FLT_MAX,
    handle_arg as handle_arg,
    handle_elem as handle_elem,
    host_scalar as host_scalar,
    in_array as in_array,
    int_elem as int_elem,
    length_per as length_per,
    record_elem as record_elem,
    struct_elem as struct_elem,
    to_enum as to_enum,
)
from ._elements import (
    as_real as as_real,
    element_array as element_array,
    element_encoding as element_encoding,
    element_out as element_out,
    element_scalar as element_scalar,
    ELEMENT_SIZES as ELEMENT_SIZES,
    element_values as element_values,
    pack_element as pack_element,
    unpack_element as unpack_element,
)
from ._selection import (
    missing_name as missing_name,
    POLICIES as POLICIES,
    _env_policy as _env_policy,
    _first as _first,
    _select as _select,
    read_version as read_version,
    select_release as select_release,
    exports as exports,
    Version as Version,
)

TYPE_CHECKING = False  # typing stays unimported at run time (import cost); type checkers read the block below
if TYPE_CHECKING:
    from typing import Any

#: called after every load and unload (the same list as `_state.on_reset`)
_on_reset = _state.on_reset


class LibraryNotFoundError(OSError):
    """The library could not be loaded; the message lists every place that was searched (paths' bytes that are not
    UTF-8 shown as \\xNN: `shown`)."""

    def __str__(self) -> str:
        return shown(super().__str__())


class MissingSymbolError(AttributeError):
    """The loaded library does not export a function of this API."""

    def __init__(self, function: str, library: str, detail: str = "") -> None:
        super().__init__(f"{function} is not exported by the loaded library {library}{detail}")
        self.function = function
        self.library = library




#: called (no arguments) before a library is opened while none is loaded
before_load: list[Callable[[], None]] = []


def _candidates() -> list[tuple[str, str]]:
    """Where `load_library()` looks, in order: (origin, path or name) pairs."""
    return library_candidates(LIBRARY_ENV, LIBRARY_NAMES, LIBRARY_ROOT_ENV, LIBRARY_ROOTS, FIND_LIBRARY_NAME,
                              prefix_envs=LIBRARY_PREFIX_ENVS, wheel_dirs=LIBRARY_WHEEL_DIRS)


def load_library(path: str | bytes | os.PathLike[str] | os.PathLike[bytes] | ctypes.CDLL | None = None
                 ) -> ctypes.CDLL:
    """Load (or inject) the library and bind the layer of its release.

    `path`: str, bytes or a path object; a POSIX path may hold any bytes (kept through os.fsdecode).

    Without `path`: $`LIBRARY_ENV` when set (a library that does not load there is an error, never a
    fall-through), else the install roots, then the loader path. The library's
    version selects the release: the same major.minor (nearest patch; another patch warns), else the
    newest older release (warns: what the library added is unbound). An older library, one without
    a readable version, or one whose exports contradict its version raises VersionError; so does
    loading a different library while one is loaded (call `unload_library()` first).
    """
    with _state.lock:
        if _state.lib is None:
            for hook in before_load:  # e.g. the runtime's settings, into the environment before the library reads it
                hook()
        lib, where = _open(path)
        if _state.lib is not None:
            if getattr(_state.lib, "_handle", None) == getattr(lib, "_handle", None):
                return _state.lib  # the same library again
            raise VersionError(
                f"{where}: another {LIB_NAME} library is loaded ({_state.lib_path}, bound to release {_state.bound}); "
                f"two libraries in one process would mix releases: call unload_library() first")
        release, version, notes = _select(lib, where, _state.policy)
        from . import _userreleases  # imported on a load only (import cost)

        user, refused = _userreleases.matching(version) if version and str(Version(*version)) not in RELEASES else (None, "")
        if user is not None:  # added with `miogen add-release`: exactly the library's version
            release, notes, modules = user.release, [], _userreleases.import_release(user)
        else:
            notes += [f"{where} is {LIB_NAME} {Version(*version)}: {refused}"] if refused and version else []
            modules = _import_release(release)
            if _env_policy(_state.policy) != "off":
                _check_exports(lib, where, release, version, modules[0])
        _state.lib, _state.lib_path = lib, where
        _bind(release, version, modules)
    for note in notes:
        warnings.warn(note, VersionWarning, stacklevel=2)
    for reset in _on_reset:
        reset()
    return lib


def _open(path: str | bytes | os.PathLike[str] | os.PathLike[bytes] | ctypes.CDLL | None
          ) -> tuple[ctypes.CDLL, str]:
    if isinstance(path, ctypes.CDLL):
        name = getattr(path, "_name", None)
        return path, os.fsdecode(name) if isinstance(name, (str, bytes)) else "<injected>"
    if path is not None:
        if not isinstance(path, (str, bytes, os.PathLike)):
            raise TypeError(f"load_library: path must be a str, bytes, os.PathLike or ctypes.CDLL; got "
                            f"{type(path).__name__}")
        where = os.fsdecode(path)
        if "\0" in where:
            raise LibraryNotFoundError(f"cannot load {LIB_NAME} from {where!r}: a path cannot hold a NUL byte")
        try:
            return _dlopen(where), where
        except OSError as exc:
            raise LibraryNotFoundError(f"cannot load {LIB_NAME} from {where}: "
                                       f"{load_failure(where, exc)}") from None
    env = os.environ.get(LIBRARY_ENV)
    if env:
        try:
            return _dlopen(env), env
        except OSError as exc:
            raise LibraryNotFoundError(
                f"${LIBRARY_ENV} is set to {env!r}, which cannot be loaded: {load_failure(env, exc)}; "
                f"fix it, or unset ${LIBRARY_ENV} to search the install roots and the loader path") from None
    tried: list[str] = []
    for origin, candidate in _candidates():
        if os.sep in candidate and not os.path.isfile(candidate):
            tried.append(f"{candidate} ({origin}): {load_failure(candidate)}")
            continue
        try:
            return ctypes.CDLL(candidate), candidate
        except OSError as exc:
            tried.append(f"{candidate} ({origin}): {exc}")
    raise LibraryNotFoundError(
        f"cannot find the {LIB_NAME} library; set ${LIBRARY_ENV} to its path"
        + (f" or ${LIBRARY_ROOT_ENV} to its install root" if LIBRARY_ROOT_ENV else "")
        + ". Searched:\n  " + "\n  ".join(tried)
    )


def _dlopen(path: str) -> ctypes.CDLL:
    """ctypes.CDLL(path), refusing first (OSError) what is no regular file: a FIFO or a device would block the loader."""
    if os.sep in path and not os.path.isfile(path):
        raise OSError(f"{path}: not a regular file")
    return ctypes.CDLL(path)


#: ELF e_machine values -> names, for "built for another architecture"
ELF_MACHINES: dict[int, str] = {2: "SPARC", 3: "x86 (i386)", 8: "MIPS", 20: "PowerPC", 21: "PowerPC64", 22: "s390",
                                40: "ARM", 43: "SPARC V9", 50: "IA-64", 62: "x86-64", 183: "AArch64", 243: "RISC-V",
                                258: "LoongArch"}
_ELF_TYPES = {1: "an ELF relocatable object (.o)", 2: "an ELF executable", 4: "an ELF core dump"}


def elf_header(head: bytes) -> tuple[int, str, int, int] | None:
    """(bits, byte order, e_type, e_machine) of an ELF header, or None when `head` is not one."""
    if len(head) < 20 or head[:4] != b"\x7fELF" or head[4] not in (1, 2) or head[5] not in (1, 2):
        return None
    order = "<" if head[5] == 1 else ">"
    e_type, e_machine = struct.unpack(order + "HH", head[16:20])
    return (32 if head[4] == 1 else 64), ("little" if order == "<" else "big"), e_type, e_machine


def _elf_name(header: tuple[int, str, int, int]) -> str:
    bits, order, _, machine = header
    return f"{ELF_MACHINES.get(machine, f'ELF machine {machine}')} ({bits}-bit, {order}-endian)"


def load_failure(path: str, error: OSError | None = None) -> str:
    """Why the library at `path` does not load, in our words: no such file, a directory, unreadable, not a shared
    library (not ELF, or an ELF object/executable), built for another architecture than this interpreter's (ELF
    class, byte order, e_machine), else the dynamic loader's own message (e.g. a missing dependency)."""
    loader = f"the dynamic loader refused it ({error})" if error is not None else "the dynamic loader refused it"
    if os.sep not in path:  # a bare name: the loader searches its path, not the current directory
        return f"not found on the dynamic loader's path ({error})" if error is not None else "not found"
    if not os.path.lexists(path):
        return "no such file"
    if not os.path.exists(path):
        return "a broken symbolic link"
    if os.path.isdir(path):
        return "a directory, not a shared library"
    if not os.path.isfile(path):  # reading a FIFO or a device would block
        return "not a regular file (a FIFO, socket or device), not a shared library"
    try:
        with open(path, "rb") as f:
            head = f.read(64)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    mine = _host_elf()
    if mine is None:  # not an ELF platform: no header to compare with
        return loader
    theirs = elf_header(head)
    if theirs is None:
        return "not a shared library (a truncated ELF header)" if head[:4] == b"\x7fELF" else \
            "not a shared library (not an ELF file)"
    if (theirs[0], theirs[1], theirs[3]) != (mine[0], mine[1], mine[3]):
        return f"built for another architecture: {_elf_name(theirs)}, but this Python runs on {_elf_name(mine)}"
    if theirs[2] in _ELF_TYPES:
        return f"not a shared library ({_ELF_TYPES[theirs[2]]})"
    return loader


@functools.cache
def _host_elf() -> tuple[int, str, int, int] | None:
    """The ELF header of this interpreter's executable (None off ELF platforms)."""
    try:
        with open(sys.executable or "/proc/self/exe", "rb") as f:
            return elf_header(f.read(64))
    except OSError:
        return None


def unload_library() -> None:
    """Forget the loaded library and unbind its release (the next use loads and binds again). Every handle
    object made under it is retired: closed for every later call (refused as a closed one), never destroyed."""
    with _state.lock:
        if _state.lib is not None:
            _state.generation += 1
            _retire_live()
        _state.lib, _state.lib_path = None, ""
        _unbind()
    for reset in _on_reset:
        reset()


def library() -> ctypes.CDLL:
    lib = _state.lib
    return lib if lib is not None else load_library()



def library_path() -> str:
    library()
    return _state.lib_path


def symbol(name: str, restype: Any, argtypes: Sequence[Any] | None) -> Any:
    """The prototype of `name` bound to the loaded library, or a clear error naming it. With argtypes
    None: a function object of its own with no argtypes, which converts nothing (see raw.DIRECT)."""
    lib = library()
    try:
        fn = getattr(lib, name) if argtypes is not None else lib[name]
    except (AttributeError, UnicodeDecodeError):  # (a library path that is not UTF-8: see _selection.exports)
        from ._releases import ADDED_IN

        added = ADDED_IN.get(name)
        detail = ""
        if added:
            detail = f": {name} was added in {LIB_NAME} {added}"
            if _state.runtime is not None:
                detail += f"; the loaded library is {Version(*_state.runtime)}"
        raise MissingSymbolError(name, _state.lib_path, detail) from None
    fn.restype = restype
    fn.argtypes = None if argtypes is None else list(argtypes)
    return fn



def _import_release(release: str) -> tuple[Any, Any]:
    api = importlib.import_module(f"{_state.PACKAGE}.{_MODULES[release]}.api")
    return importlib.import_module(f"{_state.PACKAGE}.{_MODULES[release]}.raw"), api


def _check_exports(lib: ctypes.CDLL, where: str, release: str, version: tuple[int, int, int] | None, raw: Any) -> None:
    """A library must not export most of what a later minor release introduced (what it must export is
    judged when its release is selected)."""
    if version is None:
        return
    from ._releases import FUNCTIONS

    # functions first declared by a committed release of a later minor whose previous release is this version
    # or newer (after an older previous one they may have come in an uncommitted patch of this minor, up to
    # this version): a library may export a few before its header declares them (2.17.0 exports the two
    # find-mode functions 3.4.0 declares), so only most of a release's additions, three at least, contradict
    # its version (a release adding fewer cannot be told apart by its exports)
    introduced: dict[str, list[str]] = {}
    for name, (declared, _) in FUNCTIONS.items():
        first = declared[0]
        i = RELEASES.index(first)
        if i > 0 and Version.parse(first)[:2] > version[:2] and Version.parse(RELEASES[i - 1]) >= version:
            introduced.setdefault(first, []).append(name)
    later: list[str] = []
    for names in introduced.values():
        exported = sorted(n for n in names if exports(lib, n))
        if len(exported) >= 3 and 2 * len(exported) > len(names):
            later += exported
    later.sort(key=lambda n: (_first(n), n))
    if later:
        raise VersionError(
            f"{where} reports {LIB_NAME} {Version(*version)}, but it exports {len(later)} function(s) "
            f"introduced after {Version(*version)} (e.g. {', '.join(later[:4])} from {_first(later[0])}): is the "
            f"version or the library wrong? Nothing was bound")


# facade namespaces (the package, `api`, `raw`, and the runtime's) -> the names bound into each
_facades: list[tuple[dict[str, Any], str]] = []
_injected: dict[int, list[str]] = {}


def register_facade(ns: dict[str, Any], kind: str) -> None:
    """Let a module's namespace receive the bound release's names: kind "api", "raw" or "package"."""
    with _state.lock:
        _facades.append((ns, kind))
        if _state.bound_modules is not None:
            _fill(ns, kind, _state.bound_modules)


def _names(kind: str, modules: tuple[Any, Any]) -> dict[str, Any]:
    raw, api = modules
    if kind == "raw":
        return {n: getattr(raw, n) for n in raw.__all__}
    names = {n: getattr(api, n) for n in api.__all__}
    if kind == "package":
        names["MIOPEN_VERSION"] = _state.bound
    return names


def _fill(ns: dict[str, Any], kind: str, modules: tuple[Any, Any]) -> None:
    names = _names(kind, modules)
    ns.update(names)
    _injected[id(ns)] = list(names)
    if kind == "raw":
        modules[0]._NAMESPACES.append(ns)


def _bind(release: str, version: tuple[int, int, int] | None, modules: tuple[Any, Any]) -> None:
    _unbind()
    _state.bound, _state.bound_modules, _state.runtime = release, modules, version
    for ns, kind in _facades:
        _fill(ns, kind, modules)


def _unbind() -> None:
    if _state.bound_modules is not None:
        spaces = _state.bound_modules[0]._NAMESPACES
        spaces[1:] = []
    for ns, _ in _facades:
        for name in _injected.pop(id(ns), ()):
            ns.pop(name, None)
    _state.bound, _state.bound_modules, _state.runtime = None, None, None


def facade_attr(ns: dict[str, Any], kind: str, name: str) -> Any:
    """A name of the bound release. With none bound, the name as the newest committed release that has it
    defines it (a function: one that binds the library's release when called), opening no library."""
    if name == "__all__":
        return facade_all(kind)
    if name.startswith("__"):
        raise AttributeError(name)
    modules = _state.bound_modules
    if modules is None:
        return _unbound_attr(kind, name)
    if name in ns:
        return ns[name]
    if kind == "raw" or name in _names(kind, modules):
        return getattr(modules[0] if kind == "raw" else modules[1], name)
    raise AttributeError(missing_name(name))


def facade_dir(ns: dict[str, Any], kind: str) -> list[str]:
    """dir() of a facade: its own names and the bound release's (with none bound: every committed release's),
    opening no library."""
    modules = _state.bound_modules
    extra = _unbound_names(kind) if modules is None else _names(kind, modules)
    return sorted({*ns, *extra})


def facade_all(kind: str) -> list[str]:
    """The public names of the bound release's layer of `kind`; with none bound, the newest release's."""
    modules = _state.bound_modules or _import_release(RELEASES[-1])
    return list(modules[0].__all__ if kind == "raw" else modules[1].__all__)


# kind -> name -> the newest release that has it, for the facades while no release is bound
_unbound: dict[str, dict[str, str]] = {}
_dispatchers: dict[tuple[str, str], Callable[..., Any]] = {}


def _layer_names(kind: str, release: str) -> list[str]:
    raw, api = _import_release(release)
    return [*(raw.__all__ if kind == "raw" else api.__all__), *(["MIOPEN_VERSION"] if kind == "package" else [])]


def _unbound_names(kind: str) -> dict[str, str]:
    """Every name the facade of `kind` has in some committed release, with the newest release that has it
    (from the release table: only the releases that are the newest to have some name are imported)."""
    names = _unbound.get(kind)
    if names is None:
        from ._releases import HAVE

        names = dict.fromkeys(_layer_names(kind, RELEASES[-1]), RELEASES[-1])
        layers: dict[str, set[str]] = {}
        for name, have in HAVE.items():
            release = have[-1]
            if "." in name or name in names or release not in _MODULES:
                continue
            if release not in layers:
                layers[release] = set(_layer_names(kind, release))
            if name in layers[release]:
                names[name] = release
        _unbound[kind] = names
    return names


def _unbound_attr(kind: str, name: str) -> Any:
    if kind == "package" and name == "MIOPEN_VERSION":
        return None  # no release is bound yet
    release = _unbound_names(kind).get(name)
    if release is None:
        raise AttributeError(missing_name(name))
    raw, api = _import_release(release)
    value = getattr(raw if kind == "raw" else api, name)
    if callable(value) and not isinstance(value, type):
        return _dispatcher(kind, name, value)
    return value


def _dispatcher(kind: str, name: str, template: Callable[..., Any]) -> Callable[..., Any]:
    """A function with `template`'s name, docstring and signature that calls `name` of the release bound when it
    is called (binding one first, which opens the library)."""
    fn = _dispatchers.get((kind, name))
    if fn is None:
        def call(*args: Any, **kwargs: Any) -> Any:
            if _state.bound_modules is None:
                with _state.lock:
                    if _state.bound_modules is None:
                        load_library()
            modules = _state.bound_modules
            assert modules is not None
            target = getattr(modules[0] if kind == "raw" else modules[1], name, None)
            if target is None:
                raise AttributeError(missing_name(name))
            return target(*args, **kwargs)

        fn = _dispatchers.setdefault((kind, name), functools.update_wrapper(call, template))
    return fn


def bound_raw_prototypes() -> Mapping[str, Any]:
    """The C functions the bound release's layer binds."""
    bound_release()
    assert _state.bound_modules is not None
    prototypes: Mapping[str, Any] = _state.bound_modules[0].PROTOTYPES
    return prototypes


def bound_all() -> list[str]:
    """The typed API's public names in the bound release (loading the library when none is bound)."""
    bound_release()
    assert _state.bound_modules is not None
    return list(_state.bound_modules[1].__all__)


def bound_release() -> str:
    """The release whose layer is bound (loading the library when none is)."""
    if _state.bound is None:
        library()
    assert _state.bound is not None
    return _state.bound


def runtime_version() -> tuple[int, int, int] | None:
    """The loaded library's version (None when it has no version function)."""
    library()
    return _state.runtime


def set_version_policy(policy: str) -> None:
    """compatible (default): same major.minor, else the older neighbour with a warning; strict: a committed
    release of the same major.minor is required; off: never refuse (binds the nearest release)."""
    if policy not in POLICIES:
        raise ValueError(f"set_version_policy: policy must be one of {', '.join(POLICIES)}; got {policy!r}")
    _state.policy = policy


def check_binding(policy: str | None = None) -> tuple[int, int, int] | None:
    """Re-apply the version rules (e.g. a stricter policy) to the loaded library; returns its version."""
    lib = library()
    with _state.lock:
        release, version, notes = _select(lib, _state.lib_path, policy or _state.policy)
        if release != _state.bound:
            raise VersionError(f"{_state.lib_path}: under the {policy!r} policy it would bind {release}, but "
                               f"{_state.bound} is bound; call unload_library() and load it again")
    for note in notes:
        warnings.warn(note, VersionWarning, stacklevel=2)
    return version

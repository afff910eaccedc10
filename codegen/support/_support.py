"""Support for the generated bindings: lazy library loading, argument conversion, handle ownership."""

from __future__ import annotations

import ctypes
import enum
import functools
import importlib
import math
import os
import struct
import sys
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, NoReturn, TypeVar

from ._search import library_candidates
from ._target import (  # re-exported: the package and the runtime read them here
    FIND_LIBRARY_NAME as FIND_LIBRARY_NAME,
    LIB_NAME as LIB_NAME,
    LIBRARY_ENV as LIBRARY_ENV,
    LIBRARY_NAMES as LIBRARY_NAMES,
    LIBRARY_ROOT_ENV as LIBRARY_ROOT_ENV,
    LIBRARY_ROOTS as LIBRARY_ROOTS,
    RELEASES as RELEASES,
    SKIP_VERSION_CHECK_ENV as SKIP_VERSION_CHECK_ENV,
    VERSION_GETTER as VERSION_GETTER,
    VersionError as VersionError,
    VersionWarning as VersionWarning,
)
from ._target import MODULES as _MODULES
from ._target import *  # noqa: F403  the version error classes under the target's names (e.g. MIOpenVersionError)

E = TypeVar("E", bound=enum.IntEnum)
H = TypeVar("H", bound="HandleBase")


class LibraryNotFoundError(OSError):
    """The library could not be loaded; the message lists every place that was searched."""


class MissingSymbolError(AttributeError):
    """The loaded library does not export a function of this API."""

    def __init__(self, function: str, library: str, detail: str = "") -> None:
        super().__init__(f"{function} is not exported by the loaded library {library}{detail}")
        self.function = function
        self.library = library


# --------------------------------------------------------------------------- the library

_lock = threading.RLock()
_lib: ctypes.CDLL | None = None
_lib_path: str = ""
_on_reset: list[Callable[[], None]] = []
_PACKAGE = __name__.rpartition(".")[0]
POLICIES = ("compatible", "strict", "off")
_policy = "compatible"
_bound: str | None = None  # the release whose layer is bound
_bound_modules: tuple[Any, Any] | None = None  # its (raw, api) modules
_runtime: tuple[int, int, int] | None = None  # the loaded library's version
_generation = 0  # bumped by unload_library(): objects made under an older library are retired, never destroyed


def _candidates() -> list[tuple[str, str]]:
    """Where `load_library()` looks, in order: (origin, path or name) pairs."""
    return library_candidates(LIBRARY_ENV, LIBRARY_NAMES, LIBRARY_ROOT_ENV, LIBRARY_ROOTS, FIND_LIBRARY_NAME)


def load_library(path: str | os.PathLike[str] | ctypes.CDLL | None = None) -> ctypes.CDLL:
    """Load (or inject) the library and bind the layer of its release.

    Without `path`: $`LIBRARY_ENV` when set (a library that does not load there is an error, never a
    fall-through), else the install roots, then the loader path. The library's
    version selects the release: the same major.minor (nearest patch; another patch warns), else the
    newest older release (warns: what the library added is unbound). An older library, one without
    a readable version, or one whose exports contradict its version raises VersionError; so does
    loading a different library while one is loaded (call `unload_library()` first).
    """
    global _lib, _lib_path
    with _lock:
        lib, where = _open(path)
        if _lib is not None:
            if getattr(_lib, "_handle", None) == getattr(lib, "_handle", None):
                return _lib  # the same library again
            raise VersionError(
                f"{where}: another {LIB_NAME} library is loaded ({_lib_path}, bound to release {_bound}); "
                f"two libraries in one process would mix releases: call unload_library() first")
        release, version, notes = _select(lib, where, _policy)
        modules = _import_release(release)
        if _env_policy(_policy) != "off":
            _check_exports(lib, where, release, version, modules[0])
        _lib, _lib_path = lib, where
        _bind(release, version, modules)
    for note in notes:
        warnings.warn(note, VersionWarning, stacklevel=2)
    for reset in _on_reset:
        reset()
    return lib


def _open(path: str | os.PathLike[str] | ctypes.CDLL | None) -> tuple[ctypes.CDLL, str]:
    if isinstance(path, ctypes.CDLL):
        return path, str(getattr(path, "_name", "<injected>"))
    if path is not None:
        where = os.fspath(path)
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
    global _lib, _lib_path, _generation
    with _lock:
        if _lib is not None:
            _generation += 1
            _retire_live()
        _lib, _lib_path = None, ""
        _unbind()
    for reset in _on_reset:
        reset()


def library() -> ctypes.CDLL:
    lib = _lib
    return lib if lib is not None else load_library()



def library_path() -> str:
    library()
    return _lib_path


def symbol(name: str, restype: Any, argtypes: Sequence[Any] | None) -> Any:
    """The prototype of `name` bound to the loaded library, or a clear error naming it. With argtypes
    None: a function object of its own with no argtypes, which converts nothing (see raw.DIRECT)."""
    lib = library()
    try:
        fn = getattr(lib, name) if argtypes is not None else lib[name]
    except AttributeError:
        from ._releases import ADDED_IN

        added = ADDED_IN.get(name)
        detail = ""
        if added:
            detail = f": {name} was added in {LIB_NAME} {added}"
            if _runtime is not None:
                detail += f"; the loaded library is {_vstr(_runtime)}"
        raise MissingSymbolError(name, _lib_path, detail) from None
    fn.restype = restype
    fn.argtypes = None if argtypes is None else list(argtypes)
    return fn


# --------------------------------------------------------------------------- releases: selection and binding


def _vt(text: str) -> tuple[int, int, int]:
    a, b, c = (int(x) for x in text.split("."))
    return a, b, c


def _vstr(v: tuple[int, int, int]) -> str:
    return ".".join(str(x) for x in v)


def _env_policy(policy: str) -> str:
    """The policy, or "off" when the skip switch is set in the environment (1/true/yes or 0/false/no)."""
    if SKIP_VERSION_CHECK_ENV is None:
        return policy
    raw = os.environ.get(SKIP_VERSION_CHECK_ENV, "").strip().lower()
    if raw in ("", "0", "false", "no"):
        return policy
    if raw in ("1", "true", "yes"):
        return "off"
    raise ValueError(f"${SKIP_VERSION_CHECK_ENV}={os.environ[SKIP_VERSION_CHECK_ENV]!r}: expected 1/true/yes or 0/false/no")


def read_version(lib: ctypes.CDLL, where: str) -> tuple[int, int, int] | None:
    """The library's version from its version function; None when it has none."""
    if VERSION_GETTER is None:
        return None
    try:
        get = getattr(lib, VERSION_GETTER)
    except AttributeError:
        return None
    parts = [ctypes.c_size_t() for _ in range(3)]
    get.restype = ctypes.c_int
    get.argtypes = [ctypes.POINTER(ctypes.c_size_t)] * 3
    status: int = get(*(ctypes.byref(p) for p in parts))
    major, minor, patch = (p.value for p in parts)
    if status != 0 or not (0 < major < 100 and minor < 1000 and patch < 100000):
        raise VersionError(
            f"{where}: {VERSION_GETTER} gave an unparsable version ({major}.{minor}.{patch}, status {status}); "
            f"nothing was bound")
    return major, minor, patch


def _select(lib: ctypes.CDLL, where: str, policy: str) -> tuple[str, tuple[int, int, int] | None, list[str]]:
    """(release to bind, the library's version, warnings) under `policy`, judged by its version and exports."""
    version = read_version(lib, where)
    release, notes = select_release(version, policy, where, exports=lambda name: hasattr(lib, name))
    return release, version, notes


def _stable() -> dict[str, frozenset[str]]:
    """Committed release -> its functions outside the beta API."""
    from ._releases import FUNCTIONS

    out: dict[str, set[str]] = {r: set() for r in RELEASES}
    for name, (_, stable) in FUNCTIONS.items():
        for r in filter(None, stable.split(", ")):
            out[r].add(name)
    return {r: frozenset(names) for r, names in out.items()}


def _functions(release: str) -> frozenset[str]:
    """Every function (beta included) that committed `release` declares."""
    from ._releases import FUNCTIONS

    return frozenset(n for n, (declared, _) in FUNCTIONS.items() if release in declared.split(", "))


def _first(name: str) -> tuple[int, int, int]:
    """The first committed release declaring function `name`."""
    from ._releases import FUNCTIONS

    return _vt(FUNCTIONS[name][0].split(", ")[0])


def select_release(version: tuple[int, int, int] | None, policy: str = "compatible", where: str = "the library",
                   exports: Callable[[str], bool] | None = None) -> tuple[str, list[str]]:
    """The committed release whose bindings serve a library of `version`, and the warnings to give.

    `exports(name)` tells whether the library exports a function; with it (and a policy other than "off"),
    a library of a committed major.minor gets its own patch when it exports that patch's functions outside
    the beta API, else the nearest patch whose functions it exports, else the nearest patch with a warning
    naming what it lacks. It is refused only when it lacks a function that every committed patch of its
    major.minor declares and that was declared by its version already.
    """
    policy = _env_policy(policy)
    supported = ", ".join(RELEASES)
    if version is None:
        if VERSION_GETTER is None or policy == "off":
            return RELEASES[-1], []
        raise VersionError(
            f"{where} has no {VERSION_GETTER}, so its release is unknown (older than every supported one?); "
            f"these bindings support {LIB_NAME} {supported}")
    v = _vstr(version)
    same = sorted((r for r in RELEASES if _vt(r)[:2] == version[:2]),
                  key=lambda r: (_vt(r) != version, abs(_vt(r)[2] - version[2]), -_vt(r)[2]))
    if same and (exports is None or policy == "off"):
        notes = [] if _vt(same[0]) == version or policy == "off" else [
            f"{where} is {LIB_NAME} {v}; bound to the bindings of {same[0]} (another patch release)"]
        return same[0], notes
    if same and exports is not None:
        return _select_patch(version, same, exports, where)
    older = [r for r in RELEASES if _vt(r) < version]
    if policy == "strict" or not older:
        if policy == "off":
            return (older or RELEASES)[-1 if older else 0], []
        why = ("no committed release has the same major.minor (strict policy)" if older
               else "it is older than every supported release")
        raise VersionError(f"{where} is {LIB_NAME} {v}: {why}; these bindings support {LIB_NAME} {supported}")
    release = older[-1]
    newer = [r for r in RELEASES if _vt(r) > version]
    where_it_is = f"between {release} and {newer[0]}" if newer else f"newer than every committed release ({release})"
    notes = [] if policy == "off" else [
        f"{where} is {LIB_NAME} {v}, {where_it_is}: bound to the bindings of {release}; functions and enum values "
        f"added after {release} are unbound. Add its release with `make upgrade HEADER=<its include/miopen/miopen.h>`"]
    return release, notes


def _select_patch(version: tuple[int, int, int], same: list[str], exports: Callable[[str], bool],
                  where: str) -> tuple[str, list[str]]:
    """Among the committed patches of the library's major.minor (nearest first), the one to bind."""
    v = _vstr(version)
    stable = _stable()
    common = frozenset.intersection(*(stable[r] for r in same))
    lacking = sorted(n for n in common if _first(n) <= version and not exports(n))
    if lacking:
        minor = ".".join(v.split(".")[:2])
        raise VersionError(
            f"{where} reports {LIB_NAME} {v}, but it lacks {len(lacking)} function(s) that every committed "
            f"{LIB_NAME} {minor} release ({', '.join(same)}) has (e.g. {', '.join(lacking[:4])}): is the "
            f"version or the library wrong? Nothing was bound")
    release = next((r for r in same if all(exports(n) for n in stable[r])), same[0])
    missing = sorted(n for n in stable[release] if not exports(n))
    if _vt(release) == version and not missing:
        return release, []
    unbound = sorted(n for r in same if r != release for n in _functions(r) - _functions(release) if exports(n))
    note = f"{where} is {LIB_NAME} {v}; bound to the bindings of {release}"
    note += " (another patch release)" if _vt(release) != version else ""
    if missing:
        note += (f"; it lacks {len(missing)} function(s) of {release}, which raise MissingSymbolError "
                 f"(e.g. {', '.join(missing[:4])})")
    if unbound:
        note += f"; {len(unbound)} function(s) it exports are unbound (e.g. {', '.join(unbound[:4])})"
    return release, [note]


def _import_release(release: str) -> tuple[Any, Any]:
    api = importlib.import_module(f"{_PACKAGE}.{_MODULES[release]}.api")
    return importlib.import_module(f"{_PACKAGE}.{_MODULES[release]}.raw"), api


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
        first = declared.split(", ")[0]
        i = RELEASES.index(first)
        if i > 0 and _vt(first)[:2] > version[:2] and _vt(RELEASES[i - 1]) >= version:
            introduced.setdefault(first, []).append(name)
    later: list[str] = []
    for names in introduced.values():
        exported = sorted(n for n in names if hasattr(lib, n))
        if len(exported) >= 3 and 2 * len(exported) > len(names):
            later += exported
    later.sort(key=lambda n: (_first(n), n))
    if later:
        raise VersionError(
            f"{where} reports {LIB_NAME} {_vstr(version)}, but it exports {len(later)} function(s) "
            f"introduced after {_vstr(version)} (e.g. {', '.join(later[:4])} from {_vstr(_first(later[0]))}): is the "
            f"version or the library wrong? Nothing was bound")


# facade namespaces (the package, `api`, `raw`, and the runtime's) -> the names bound into each
_facades: list[tuple[dict[str, Any], str]] = []
_injected: dict[int, list[str]] = {}


def register_facade(ns: dict[str, Any], kind: str) -> None:
    """Let a module's namespace receive the bound release's names: kind "api", "raw" or "package"."""
    with _lock:
        _facades.append((ns, kind))
        if _bound_modules is not None:
            _fill(ns, kind, _bound_modules)


def _names(kind: str, modules: tuple[Any, Any]) -> dict[str, Any]:
    raw, api = modules
    if kind == "raw":
        return {n: getattr(raw, n) for n in raw.__all__}
    names = {n: getattr(api, n) for n in api.__all__}
    if kind == "package":
        names["MIOPEN_VERSION"] = _bound
    return names


def _fill(ns: dict[str, Any], kind: str, modules: tuple[Any, Any]) -> None:
    names = _names(kind, modules)
    ns.update(names)
    _injected[id(ns)] = list(names)
    if kind == "raw":
        modules[0]._NAMESPACES.append(ns)


def _bind(release: str, version: tuple[int, int, int] | None, modules: tuple[Any, Any]) -> None:
    global _bound, _bound_modules, _runtime
    _unbind()
    _bound, _bound_modules, _runtime = release, modules, version
    for ns, kind in _facades:
        _fill(ns, kind, modules)


def _unbind() -> None:
    global _bound, _bound_modules, _runtime
    if _bound_modules is not None:
        spaces = _bound_modules[0]._NAMESPACES
        spaces[1:] = []
    for ns, _ in _facades:
        for name in _injected.pop(id(ns), ()):
            ns.pop(name, None)
    _bound, _bound_modules, _runtime = None, None, None


def facade_attr(ns: dict[str, Any], kind: str, name: str) -> Any:
    """A name of the bound release. With none bound, the name as the newest committed release that has it
    defines it (a function: one that binds the library's release when called), opening no library."""
    if name == "__all__":
        return facade_all(kind)
    if name.startswith("__"):
        raise AttributeError(name)
    modules = _bound_modules
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
    modules = _bound_modules
    extra = _unbound_names(kind) if modules is None else _names(kind, modules)
    return sorted({*ns, *extra})


def facade_all(kind: str) -> list[str]:
    """The public names of the bound release's layer of `kind`; with none bound, the newest release's."""
    modules = _bound_modules or _import_release(RELEASES[-1])
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
            release = have.rpartition(", ")[2]
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
            if _bound_modules is None:
                with _lock:
                    if _bound_modules is None:
                        load_library()
            modules = _bound_modules
            assert modules is not None
            target = getattr(modules[0] if kind == "raw" else modules[1], name, None)
            if target is None:
                raise AttributeError(missing_name(name))
            return target(*args, **kwargs)

        fn = _dispatchers.setdefault((kind, name), functools.update_wrapper(call, template))
    return fn


def missing_name(name: str) -> str:
    """Why the bound release (or, with none bound, every release) lacks `name`, naming the releases that have it."""
    from ._releases import HAVE

    have = HAVE.get(name)
    if have is None:
        return f"{name} is in no {LIB_NAME} release these bindings have ({name_list(RELEASES, limit=RELEASES_MAX)})"
    releases = name_list(have.split(', '), limit=RELEASES_MAX)
    if _bound is None and "." in name:
        return (f"{name} is not in {LIB_NAME} {RELEASES[-1]}, whose names serve while no library is loaded; "
                f"releases that have it: {releases} (load_library() binds the loaded library's release)")
    if _bound is None:
        return (f"{name} is not a name of this module in any release (no {LIB_NAME} library is loaded yet); "
                f"releases with a {name} elsewhere: {releases}")
    bound = f"the bound {LIB_NAME} release {_bound} ({_lib_path})"
    return f"{name} is not in {bound}; releases that have it: {releases}"


def bound_raw_prototypes() -> Mapping[str, Any]:
    """The C functions the bound release's layer binds."""
    bound_release()
    assert _bound_modules is not None
    prototypes: Mapping[str, Any] = _bound_modules[0].PROTOTYPES
    return prototypes


def bound_all() -> list[str]:
    """The typed API's public names in the bound release (loading the library when none is bound)."""
    bound_release()
    assert _bound_modules is not None
    return list(_bound_modules[1].__all__)


def bound_release() -> str:
    """The release whose layer is bound (loading the library when none is)."""
    if _bound is None:
        library()
    assert _bound is not None
    return _bound


def runtime_version() -> tuple[int, int, int] | None:
    """The loaded library's version (None when it has no version function)."""
    library()
    return _runtime


def set_version_policy(policy: str) -> None:
    """compatible (default): same major.minor, else the older neighbour with a warning; strict: a committed
    release of the same major.minor is required; off: never refuse (binds the nearest release)."""
    global _policy
    if policy not in POLICIES:
        raise ValueError(f"set_version_policy: policy must be one of {', '.join(POLICIES)}; got {policy!r}")
    _policy = policy


def check_binding(policy: str | None = None) -> tuple[int, int, int] | None:
    """Re-apply the version rules (e.g. a stricter policy) to the loaded library; returns its version."""
    lib = library()
    with _lock:
        release, version, notes = _select(lib, _lib_path, policy or _policy)
        if release != _bound:
            raise VersionError(f"{_lib_path}: under the {policy!r} policy it would bind {release}, but "
                               f"{_bound} is bound; call unload_library() and load it again")
    for note in notes:
        warnings.warn(note, VersionWarning, stacklevel=2)
    return version


class EnumMeta(enum.EnumType):
    """Enum classes whose missing members say which releases have them."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return cls._member_map_[name]
        except KeyError:
            raise AttributeError(missing_name(f"{enum_py_name(cls)}.{cut(name)}")) from None


#: C enum name -> the typed API's name, filled in by the releases' api modules
_ENUM_PY: dict[str, str] = {}


# --------------------------------------------------------------------------- argument conversion


#: the most names an error message lists (then how many there are, and where to see them all)
LIST_MAX = 6
#: the most releases a message lists
RELEASES_MAX = 12
#: the most characters of a caller's value an error message quotes
QUOTE_MAX = 60


def name_list(names: Iterable[object], see: str = "", limit: int = LIST_MAX) -> str:
    """`names` joined by commas, cut after `limit` with how many there are in all and `see` (where to find
    them all): every message that lists names goes through here, so none grows with an enum or the releases."""
    items = [str(n) for n in names]
    if len(items) <= limit:
        return ", ".join(items)
    return ", ".join(items[:limit]) + f", ... ({len(items)} in all{f'; see {see}' if see else ''})"


def cut(text: str) -> str:
    """`text` cut to QUOTE_MAX characters: a caller's 10 KB string never becomes a 10 KB message."""
    return text if len(text) <= QUOTE_MAX else text[:QUOTE_MAX - 3] + "..."


def quoted(value: object) -> str:
    """repr(value), `cut`."""
    return cut(repr(value))


def _what(value: object) -> str:
    return f"{type(value).__name__} {quoted(value)}" if not isinstance(value, (bytes, bytearray)) else type(value).__name__


def enum_py_name(cls: type) -> str:
    """The typed API's name of an enum class (DataType for miopenDataType_t)."""
    return _ENUM_PY.get(cls.__name__, cls.__name__)


def enum_expected(cls: type[enum.Enum], ints: bool = True, spellings: str = "") -> str:
    """What an argument of enum `cls` may be, for an error message: a few members and how to list them all,
    then (`ints`) its int value and `spellings` (what else the caller takes, e.g. "a name (relu, ...)")."""
    py = enum_py_name(cls)
    parts = [f"a member of {py} ({name_list((m.name for m in cls), see=f'list({_TOP}.{py})')})"]
    parts += ["its int value"] * ints + [spellings] * bool(spellings)
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} or {parts[-1]}"


#: the top package, where the typed API's enums are (miopen.DataType)
_TOP = __name__.split(".")[0]


def as_int(value: object, lo: int, hi: int, name: str, fn: str) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{fn}: {name} must be an int; got {_what(value)}")
    v: int = value.__index__()
    if not lo <= v <= hi:
        if v < 0 <= lo:
            raise ValueError(f"{fn}: {name} must not be negative; got {v}")
        raise ValueError(f"{fn}: {name} must be in [{lo}, {hi}]; got {v}")
    return v


#: the largest finite C float; what lies beyond rounds to infinity (or is refused, see as_float32)
FLT_MAX = 3.4028234663852886e+38


def as_float(value: object, name: str, fn: str) -> float:
    """A C double: a float, an int (exactly representable or rounded; too large ones are refused) or
    anything with __float__ (not str/bytes)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        if hasattr(value, "__float__") and not isinstance(value, (str, bytes)):
            result = value.__float__()
            if not isinstance(result, float):
                raise TypeError(f"{fn}: {name}: __float__ of {type(value).__name__} returned {type(result).__name__}")
            return result
        raise TypeError(f"{fn}: {name} must be a float; got {_what(value)}")
    try:
        return float(value)
    except OverflowError:
        raise OverflowError(f"{fn}: {name}={value} is too large for a C double") from None


def as_float32(value: object, name: str, fn: str) -> float:
    """A C float: `as_float`, then refused if it is finite but would round to infinity (1e300 is an
    OverflowError naming the parameter, never a silent inf); inf and nan pass as they are."""
    v = as_float(value, name, fn)
    if -FLT_MAX <= v <= FLT_MAX or v != v or v in (float("inf"), float("-inf")):
        return v
    try:
        struct.pack("<f", v)  # C's round-to-nearest: just above FLT_MAX may still round down to it
    except OverflowError:
        raise OverflowError(f"{fn}: {name}={v!r} does not fit a C float (at most {FLT_MAX!r} in magnitude)") from None
    return v


def as_char(value: object, name: str, fn: str) -> bytes:
    """A C char: one byte (bytes of length 1), or an int in [-128, 255]."""
    if isinstance(value, (bytes, bytearray)) and len(value) == 1:
        return bytes(value)
    if isinstance(value, int) and not isinstance(value, bool):
        if -128 <= value <= 255:
            return bytes([value & 0xFF])
        raise ValueError(f"{fn}: {name} must be a char (an int in [-128, 255] or one byte); got {value}")
    raise TypeError(f"{fn}: {name} must be a char (an int in [-128, 255] or one byte); got {_what(value)}")


def as_bool(value: object, name: str, fn: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise TypeError(f"{fn}: {name} must be a bool; got {_what(value)}")


def as_enum(value: object, cls: type[E], name: str, fn: str, *, ints: bool = True, spellings: str = "") -> E:
    """A member of `cls` from a member (or the same-named member of another release's `cls`) or, with `ints`,
    its int value; a member of any other enum, a bool or anything else is refused. `spellings` tells the
    error what else the caller accepts (the runtime's names)."""
    if isinstance(value, cls):
        return value
    if type(value).__name__ == cls.__name__ and isinstance(value, enum.IntEnum):
        # the same enum of another release's bindings (kept from before a rebind): same name, same meaning
        member = cls._member_map_.get(value.name)
        if member is None:
            raise ValueError(f"{fn}: {name}: {missing_name(f'{enum_py_name(cls)}.{value.name}')}")
        return member  # type: ignore[return-value]
    if isinstance(value, enum.Enum) or isinstance(value, bool) or not isinstance(value, int) or not ints:
        raise TypeError(f"{fn}: {name} must be {enum_expected(cls, ints, spellings)}; got {_what(value)}")
    try:
        return cls(value)
    except ValueError:
        valid = name_list((f"{m.name}={m.value}" for m in cls), see=f"list({_TOP}.{enum_py_name(cls)})")
        raise ValueError(f"{fn}: {name}={value} is not a {cls.__name__} value; valid: {valid}") from None


def to_enum(cls: type[E], value: int) -> E | int:
    """An enum member, or the plain int when the library returns a value this release does not know."""
    try:
        return cls(value)
    except ValueError:
        return value


def as_handle(value: object, cls: type[H], name: str, fn: str, nullable: bool) -> int | None:
    if value is None:
        if nullable:
            return None
        raise TypeError(f"{fn}: {name} must be a {cls.__name__}; got None")
    if not isinstance(value, cls):
        if type(value).__name__ == cls.__name__:
            raise TypeError(f"{fn}: {name} is a {cls.__name__} made under a library that is no longer loaded "
                            f"(now: {_lib_path}, release {_bound}); make a new one")
        raise TypeError(f"{fn}: {name} must be a {cls.__name__}; got {_what(value)}")
    ptr = value._ptr
    if ptr is None:
        raise ValueError(f"{fn}: {name} is a closed {cls.__name__}{_retired_note(value)}")
    return ptr


def handle_arg(value: object, cls: type[H], name: str, fn: str, nullable: bool) -> ctypes.c_void_p | None:
    """A handle argument as the wrappers pass it (the object's c_void_p; None for NULL where allowed), for
    what their fast path (an open object of exactly `cls`) did not take: an open object of a subclass
    (a runtime descriptor) takes one isinstance; anything else gets `as_handle`'s checks and errors."""
    if isinstance(value, cls):
        cp = value._cp
        if type(cp) is ctypes.c_void_p:
            return cp
    ptr = as_handle(value, cls, name, fn, nullable)
    if ptr is None:
        return None
    return ctypes.c_void_p(check_address(ptr, name, fn))  # a subclass that replaced _cp: its address, checked


#: addresses are unsigned 64-bit: ctypes would silently pass 2**64 + x as x and -1 as 2**64 - 1
ADDRESS_LIMIT = 1 << 64


def check_address(address: object, name: str, fn: str, source: str = "") -> int:
    """`address` as an int in [0, 2**64), or a TypeError/ValueError naming the function, the parameter
    and where the address came from (`source`, e.g. "data_ptr()")."""
    where = f" (from its {source})" if source else ""
    if isinstance(address, bool) or not isinstance(address, int):
        raise TypeError(f"{fn}: {name} must be an int address{where}; got {_what(address)}")
    if not 0 <= address < ADDRESS_LIMIT:
        raise ValueError(f"{fn}: {name} must be an address in [0, 2**64){where}; got {address}")
    return int(address)


_STREAM_ATTRIBUTES = ("cuda_stream", "hip_stream", "stream_handle", "handle", "ptr")


def as_stream(value: object, name: str, fn: str) -> int | None:
    """A HIP stream: None/0 (the default stream), an int handle, a ctypes.c_void_p, or an object that
    carries one (`.cuda_stream` (torch), `.hip_stream`, `.stream_handle`, `.handle`, `.ptr` (CuPy),
    `_as_parameter_`); every handle must lie in [0, 2**64)."""
    if value is None:
        return None
    if type(value) is int and 0 <= value < ADDRESS_LIMIT:
        return value or None
    if isinstance(value, int) and not isinstance(value, bool):
        return check_address(value, name, fn) or None
    if isinstance(value, ctypes.c_void_p):
        return value.value or None
    for attr in _STREAM_ATTRIBUTES:
        try:
            inner = getattr(value, attr, None)
        except Exception as exc:  # e.g. a closed stream object refusing to give its handle
            raise ValueError(f"{fn}: {name}: its .{attr} is unavailable: {exc}") from None
        if isinstance(inner, int) and not isinstance(inner, bool):
            return check_address(inner, name, fn, f".{attr}") or None
    param = getattr(value, "_as_parameter_", None)
    if isinstance(param, ctypes.c_void_p):
        return param.value or None
    if isinstance(param, int) and not isinstance(param, bool):
        return check_address(param, name, fn, "_as_parameter_") or None
    raise TypeError(f"{fn}: {name} must be a stream (an int handle, or an object with .cuda_stream); got {_what(value)}")


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    """dlpack.h's DLTensor (the head of DLManagedTensor, which a "dltensor" capsule points to)."""

    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


#: DLPack device types whose memory a library kernel may address: kDLCUDA (2), kDLROCM (10),
#: kDLCUDAManaged (13). Host memory (kDLCPU 1, kDLCUDAHost 3, kDLROCMHost 11) and other devices are refused:
#: a kernel reading a host address as device memory faults or reads garbage.
DLPACK_DEVICE_TYPES: dict[int, str] = {2: "kDLCUDA", 10: "kDLROCM", 13: "kDLCUDAManaged"}
_DLPACK_NAMES = {1: "kDLCPU", 3: "kDLCUDAHost", 4: "kDLOpenCL", 7: "kDLVulkan", 8: "kDLMetal", 9: "kDLVPI",
                 11: "kDLROCMHost", 12: "kDLExtDev", 14: "kDLOneAPI", 15: "kDLWebGPU", 16: "kDLHexagon", 17: "kDLMAIA"}


def _check_dlpack_device(device_type: object, name: str, fn: str, source: str) -> None:
    if isinstance(device_type, int) and not isinstance(device_type, bool) and device_type in DLPACK_DEVICE_TYPES:
        return
    shown = _DLPACK_NAMES.get(device_type, f"device type {device_type!r}") if isinstance(device_type, int) \
        else f"device type {device_type!r}"
    accepted = ", ".join(f"{v} ({k})" for k, v in DLPACK_DEVICE_TYPES.items())
    raise ValueError(f"{fn}: {name} is {shown} memory (by its {source}), not device memory; device buffers are "
                     f"{accepted}")


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def as_device_ptr(value: object, name: str, fn: str, nullable: bool) -> int | None:
    """A device address from an int, `__cuda_array_interface__`, `data_ptr()` or DLPack.

    Every address, whatever its source, must lie in [0, 2**64) (never wrapped modulo 2**64); NULL
    (None or 0) only where the parameter is nullable. Memory the object itself says is on the host
    is refused: a torch tensor with `is_cuda` False, a `__dlpack_device__()` or DLPack tensor of a
    device type outside DLPACK_DEVICE_TYPES. A DLPack tensor's `byte_offset` is added to its data.
    """
    if value is None:
        if nullable:
            return None
        raise TypeError(f"{fn}: {name} must be a device buffer; got None (this parameter is not optional)")
    if isinstance(value, int) and not isinstance(value, bool):
        address = check_address(value, name, fn)
    else:
        try:
            iface = getattr(value, "__cuda_array_interface__", None)
        except Exception as exc:  # producers raise for what they cannot describe (e.g. a CPU tensor)
            raise TypeError(f"{fn}: {name}: its __cuda_array_interface__ is unavailable: {exc}") from None
        if iface is not None:
            data = iface.get("data") if isinstance(iface, Mapping) else None
            if not isinstance(data, (tuple, list)) or len(data) != 2:
                raise TypeError(f"{fn}: {name}: __cuda_array_interface__ must be a mapping whose 'data' is "
                                f"(address, read_only); got {_what(data if isinstance(iface, Mapping) else iface)}")
            address = check_address(data[0], name, fn, "__cuda_array_interface__")
        elif callable(getattr(value, "data_ptr", None)):
            _check_not_host(value, name, fn)
            address = check_address(value.data_ptr(), name, fn, "data_ptr()")  # type: ignore[attr-defined]
        elif callable(getattr(value, "__dlpack__", None)):
            address = _dlpack_address(value, name, fn)
        else:
            raise TypeError(
                f"{fn}: {name} must be a device buffer: an int address or an object with __cuda_array_interface__, "
                f"data_ptr() or __dlpack__; got {_what(value)}"
            )
    if address:
        return address
    if nullable:
        return None
    raise ValueError(f"{fn}: {name} is a NULL device address, and this parameter is not optional")


#: device addresses already passed, as the c_void_p the wrappers hand to C (a training loop passes the same
#: few buffers again and again); only addresses `as_device_ptr` accepted; emptied when it reaches the bound
DEVICE_ARGS: dict[int, ctypes.c_void_p] = {}
DEVICE_ARGS_MAX = 4096


def device_arg(value: object, name: str, fn: str, nullable: bool) -> ctypes.c_void_p | None:
    """A device buffer argument as the wrappers pass it: `as_device_ptr`'s address as a c_void_p (None: NULL)."""
    address = as_device_ptr(value, name, fn, nullable)
    if address is None:
        return None
    cp = DEVICE_ARGS.get(address)
    if cp is None:
        cp = ctypes.c_void_p(address)
        if len(DEVICE_ARGS) >= DEVICE_ARGS_MAX:
            DEVICE_ARGS.clear()
        DEVICE_ARGS[address] = cp
    return cp


def _check_not_host(value: object, name: str, fn: str) -> None:
    """Refuse an object that says its memory is on the host (torch: is_cuda; else __dlpack_device__())."""
    on_device = getattr(value, "is_cuda", None)
    if on_device is True:
        return
    if on_device is False:
        raise ValueError(f"{fn}: {name} is a host (CPU) tensor; device buffers are GPU tensors")
    dlpack_device = getattr(value, "__dlpack_device__", None)
    if callable(dlpack_device):
        device = dlpack_device()
        _check_dlpack_device(device[0] if isinstance(device, tuple) and device else device, name, fn,
                             "__dlpack_device__()")


def _dlpack_address(value: object, name: str, fn: str) -> int:
    """data + byte_offset of a DLPack tensor, after checking its device (before and after export)."""
    dlpack_device = getattr(value, "__dlpack_device__", None)
    if callable(dlpack_device):
        device = dlpack_device()
        _check_dlpack_device(device[0] if isinstance(device, tuple) and device else device, name, fn,
                             "__dlpack_device__()")
    capsule = value.__dlpack__()  # type: ignore[attr-defined]
    if type(capsule).__name__ != "PyCapsule":
        raise TypeError(f"{fn}: {name}: __dlpack__() returned {_what(capsule)}, not a DLPack capsule")
    try:
        pointer = _capsule_pointer(capsule, b"dltensor")
    except ValueError:
        raise TypeError(f"{fn}: {name}: __dlpack__() returned a capsule that is not an unconsumed \"dltensor\"") from None
    if not pointer:
        raise ValueError(f"{fn}: {name}: __dlpack__() returned a capsule holding NULL")
    tensor = _DLTensor.from_address(pointer)
    _check_dlpack_device(tensor.device.device_type, name, fn, "DLPack tensor")
    data: int = tensor.data or 0
    address: int = data + tensor.byte_offset
    if address >= ADDRESS_LIMIT:
        raise ValueError(f"{fn}: {name}: DLPack data {data:#x} + byte_offset {tensor.byte_offset} is beyond 2**64")
    return address


def typed_pointer(address: int | None, ptype: Any) -> Any:
    """A device address as the typed pointer a prototype expects (e.g. `size_t *` device data)."""
    return None if address is None else ctypes.cast(ctypes.c_void_p(address), ptype)


def as_opaque(value: object, name: str, fn: str) -> int | None:
    """An untyped host address: None, or an int in [0, 2**64)."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return check_address(value, name, fn) or None
    raise TypeError(f"{fn}: {name} must be an int address or None; got {_what(value)}")


_host_float = ctypes.c_float
_byref = ctypes.byref


def host_scalar(value: object, name: str, fn: str) -> Any:
    """A host scaling factor: a float (passed as a C float: one too large for it is an OverflowError)
    or a ctypes c_float/c_double (passed as is)."""
    if isinstance(value, (ctypes.c_float, ctypes.c_double)):
        return _byref(value)
    return _byref(_host_float(as_float32(value, name, fn)))


_host_double = ctypes.c_double


def float_scalar(value: object, name: str, fn: str) -> Any:
    """A host scalar the library reads as float whatever the tensor type: a number, c_float, or c_double
    (its value, passed as float: a double's bytes would be misread)."""
    if isinstance(value, ctypes.c_float):
        return _byref(value)
    if isinstance(value, ctypes.c_double):
        return _byref(_host_float(as_float32(value.value, name, fn)))
    return _byref(_host_float(as_float32(value, name, fn)))


def double_scalar(value: object, name: str, fn: str) -> Any:
    """A host scalar the library reads as double whatever the tensor type."""
    if isinstance(value, ctypes.c_double):
        return _byref(value)
    if isinstance(value, ctypes.c_float):
        return _byref(_host_double(value.value))
    return _byref(_host_double(as_float(value, name, fn)))


# --------------------------------------------------------------------------- values of a run-time element type
#
# A host scalar or array whose C type another argument chooses (a tensor's data type, an attribute type):
# the annotations' element tables give each type's encoding; values are packed into a zeroed cell of at
# least 8 bytes, so a reader that peeks at more bytes than the element (a float test of a half) stays inside.

_FORMATS = {"float16": "=e", "float32": "=f", "float64": "=d", "int8": "=b", "uint8": "=B", "int16": "=h",
            "uint16": "=H", "int32": "=i", "uint32": "=I", "int64": "=q", "uint64": "=Q", "bool": "=?", "pointer": "@P"}
ELEMENT_SIZES: dict[str, int] = {"bfloat16": 2, **{k: struct.calcsize(f) for k, f in _FORMATS.items()}}
_INT_BITS = {"int8": (8, True), "uint8": (8, False), "int16": (16, True), "uint16": (16, False),
             "int32": (32, True), "uint32": (32, False), "int64": (64, True), "uint64": (64, False)}
_CELL = ctypes.c_char * 8


def element_encoding(table: Mapping[int, str], names: Mapping[int, str], type_value: int, name: str, fn: str,
                     source: str) -> str:
    """The encoding of type `type_value` (an enum value) in `table`, or a ValueError naming it."""
    enc = table.get(type_value)
    if enc is None:
        raise ValueError(f"{fn}: {name} is read in the type {source} names, {names.get(type_value, type_value)}, "
                         f"which has no host form (types with one: "
                         f"{name_list(names.get(v, str(v)) for v in table)})")
    return enc


def as_real(value: object, name: str, fn: str) -> int | float:
    """A number for an element of a run-time type (ints stay exact; bool refused)."""
    if type(value) is float or type(value) is int:
        return value
    if isinstance(value, bool):
        raise TypeError(f"{fn}: {name} must be a number; got {_what(value)}")
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float) or (hasattr(value, "__float__") and not isinstance(value, (str, bytes))):
        return float(value)
    raise TypeError(f"{fn}: {name} must be a number; got {_what(value)}")


def pack_element(value: object, enc: str, name: str, fn: str) -> bytes:
    """One value in the native bytes of `enc`: float16 via struct 'e', bfloat16 as the upper half of the
    float32 (round to nearest even), integers range-checked, bool, pointer (int address, handle or None)."""
    if enc == "pointer":
        if value is None:
            return struct.pack("@P", 0)
        if isinstance(value, HandleBase):
            return struct.pack("@P", value.address)
        return struct.pack("@P", as_int(value, 0, 2**(8 * ELEMENT_SIZES["pointer"]) - 1, name, fn))
    if enc == "bool":
        return struct.pack("=?", as_bool(value, name, fn))
    v = as_real(value, name, fn)
    bits = _INT_BITS.get(enc)
    if bits is not None:
        if isinstance(v, float):
            if not v.is_integer():
                raise ValueError(f"{fn}: {name} must be an integer for a {enc} value; got {v!r}")
            v = int(v)
        n, signed = bits
        lo, hi = (-(1 << (n - 1)), (1 << (n - 1)) - 1) if signed else (0, (1 << n) - 1)
        if not lo <= v <= hi:
            raise ValueError(f"{fn}: {name} must be in [{lo}, {hi}] for a {enc} value; got {v}")
        return struct.pack(_FORMATS[enc], v)
    f = as_float(v, name, fn)  # an int too large for a double: an OverflowError naming the parameter
    try:
        if enc == "bfloat16":
            if math.isnan(f):
                return struct.pack("=H", 0x7FC0)
            f32: int = struct.unpack("=I", struct.pack("=f", f))[0]
            rounded = (f32 + 0x7FFF + ((f32 >> 16) & 1)) >> 16  # round to nearest even
            if rounded > 0xFFFF or (rounded & 0x7F80) == 0x7F80 and not math.isinf(f):
                raise OverflowError
            return struct.pack("=H", rounded)
        return struct.pack(_FORMATS[enc], f)
    except (OverflowError, struct.error):
        raise ValueError(f"{fn}: {name}={f!r} does not fit in a {enc} value") from None


def unpack_element(data: bytes, enc: str) -> Any:
    """The Python value of one element in the native bytes of `enc`."""
    if enc == "bfloat16":
        return float(struct.unpack("=f", struct.pack("=I", struct.unpack("=H", data[:2])[0] << 16))[0])
    value = struct.unpack(_FORMATS[enc], data[:ELEMENT_SIZES[enc]])[0]
    if enc == "pointer":
        return value or None
    return value


def element_scalar(value: object, enc: str, name: str, fn: str) -> Any:
    """A host scalar of a run-time type, by reference: `value` packed into a zeroed 8-byte cell."""
    return _byref(_CELL.from_buffer_copy(pack_element(value, enc, name, fn).ljust(8, b"\0")))


def element_array(values: Sequence[object] | None, enc: str, name: str, fn: str) -> Any:
    """Host memory holding `values` in the encoding `enc` (None stays NULL)."""
    if values is None:
        return None
    data = b"".join(pack_element(v, enc, f"{name}[{i}]", fn) for i, v in enumerate(values))
    return ctypes.create_string_buffer(data, max(len(data), 8))


def element_out(count: int, enc: str) -> Any:
    """Zeroed host memory for `count` output elements of `enc` (at least one 8-byte cell)."""
    return ctypes.create_string_buffer(max(count * ELEMENT_SIZES[enc], 8))


def element_values(buf: Any, enc: str, count: int) -> list[Any]:
    """`count` elements of `enc` read back from `buf`."""
    size = ELEMENT_SIZES[enc]
    raw = bytes(buf)
    return [unpack_element(raw[k * size:(k + 1) * size], enc) for k in range(count)]


def as_sequence(value: object, name: str, fn: str, nullable: bool) -> Sequence[object] | None:
    """A Python sequence (not str/bytes), or None where allowed."""
    if value is None:
        if nullable:
            return None
        raise TypeError(f"{fn}: {name} must be a sequence; got None")
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"{fn}: {name} must be a sequence; got {_what(value)}")
    return value


def address_held(address: int | None) -> int | None:
    """The pointer stored at `address` (an out pointer that received the address of a pointer field)."""
    if not address:
        return None
    return ctypes.c_void_p.from_address(address).value


def as_cstring(value: object, name: str, fn: str, nullable: bool) -> bytes | None:
    if value is None and nullable:
        return None
    if isinstance(value, str):
        if "\0" in value:
            raise ValueError(f"{fn}: {name} must not contain NUL characters")
        return value.encode("utf-8")
    if isinstance(value, bytes):
        return value
    raise TypeError(f"{fn}: {name} must be a str; got {_what(value)}")


def as_blob(value: object, name: str, fn: str) -> tuple[Any, int]:
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        return ctypes.create_string_buffer(data, len(data)), len(data)
    raise TypeError(f"{fn}: {name} must be bytes; got {_what(value)}")


def check_length(value: object, name: str, fn: str, hi: int = (1 << 63) - 1) -> int:
    """An element count the caller gave for an output array or string: an int in [0, hi] (the range
    of its C type); it sizes a buffer allocated before the parameter's own conversion runs."""
    return as_int(value, 0, hi, name, fn)


class Elem:
    """How to convert one element of an input array."""

    def __init__(self, ctype: Any, convert: Callable[[object, str, str], Any], handles: bool = False) -> None:
        self.ctype = ctype
        self.convert = convert
        self.handles = handles


def int_elem(ctype: Any, lo: int, hi: int) -> Elem:
    return Elem(ctype, lambda v, n, f: as_int(v, lo, hi, n, f))


def float_elem(ctype: Any) -> Elem:
    return Elem(ctype, as_float32 if ctype is ctypes.c_float else as_float)


def bool_elem(ctype: Any) -> Elem:
    return Elem(ctype, as_bool)


def enum_elem(ctype: Any, cls: type[enum.IntEnum]) -> Elem:
    return Elem(ctype, lambda v, n, f: int(as_enum(v, cls, n, f)))


def handle_elem(cls: type[HandleBase]) -> Elem:
    return Elem(ctypes.c_void_p, lambda v, n, f: as_handle(v, cls, n, f, False), handles=True)


def buffer_elem() -> Elem:
    return Elem(ctypes.c_void_p, lambda v, n, f: as_device_ptr(v, n, f, True))


def struct_elem(ctype: Any) -> Elem:
    def convert(v: object, n: str, f: str) -> Any:
        if isinstance(v, ctype):
            return v
        if isinstance(v, tuple):
            try:
                c = ctype(*v)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"{f}: {n}: cannot make a {ctype.__name__} from {v!r}: {exc}") from None
            _check_fields(c, v, n, f)
            return c
        raise TypeError(f"{f}: {n} must be a {ctype.__name__} or a tuple of its fields; got {_what(v)}")

    return Elem(ctype, convert)


def _check_fields(c: Any, values: tuple[object, ...], name: str, fn: str) -> None:
    """ctypes truncates an int field silently (2**40 in an int field) and turns 1e300 into inf in a
    float field: read each field back and refuse what did not survive."""
    for (field, _), given in zip(type(c)._fields_, values):
        got = getattr(c, field)
        if isinstance(given, bool) or isinstance(got, ctypes.Structure | ctypes.Union):
            continue
        if isinstance(given, int) and isinstance(got, int | None) and (got or 0) != given:
            raise ValueError(f"{fn}: {name}.{field}={given} does not fit its C type")
        if isinstance(given, float) and isinstance(got, float) and got in (float("inf"), float("-inf")) \
                and given not in (float("inf"), float("-inf")):
            raise OverflowError(f"{fn}: {name}.{field}={given!r} does not fit its C type")


def in_array(value: object, elem: Elem, name: str, fn: str, nullable: bool) -> Any:
    """A ctypes array from a Python sequence (each element checked), or None."""
    if value is None:
        if nullable:
            return None
        raise TypeError(f"{fn}: {name} must be a sequence; got None")
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"{fn}: {name} must be a sequence; got {_what(value)}")
    convert = elem.convert
    items = [convert(v, f"{name}[{i}]", fn) for i, v in enumerate(value)]
    array = (elem.ctype * len(items))(*items)
    if elem.handles:  # the objects, for calls_in_flight (whatever kind of sequence the caller gave)
        array._miogen_handles = tuple(value)
    return array


def common_length(fn: str, arrays: Mapping[str, Any]) -> int:
    """The shared length of parallel input arrays. A None (NULL: an optional array) does not take part;
    with every array None the length is 0."""
    lengths = {name: len(a) for name, a in arrays.items() if a is not None}
    if len(set(lengths.values())) > 1:
        shown = ", ".join(f"{n} has {k}" for n, k in lengths.items())
        raise ValueError(f"{fn}: these sequences must have the same length: {shown}")
    return next(iter(lengths.values()), 0)


def length_per(fn: str, name: str, array: Any, per: int) -> int:
    """How many units of `per` elements an input array holds (its length must be a multiple of `per`)."""
    if array is None:
        return 0
    n = len(array)
    if n % per:
        raise ValueError(f"{fn}: {name} holds {per} values for each item; got {n} values, not a multiple of {per}")
    return n // per


def record_elem(ctype: Any, names: tuple[str, ...], fields: Mapping[str, tuple[str, Any, bool]]) -> Elem:
    """Elements of a record with pointer fields that have semantics: a `ctype` instance passes as is; a
    tuple (or the record's NamedTuple) is converted field by field. `fields`: field name -> (shape, handle
    class or None, nullable); shape `scalar` is a pointer to one handle (a descriptor variable made here and
    kept alive by the record), `buffer` device memory, `opaque` a host address."""

    def convert(v: object, n: str, f: str) -> Any:
        if isinstance(v, ctype):
            return v
        if not isinstance(v, tuple) or len(v) != len(names):
            raise TypeError(f"{f}: {n} must be a {ctype.__name__} or a tuple of its {len(names)} fields "
                            f"({', '.join(names)}); got {_what(v)}")
        obj = ctype()
        for fname, value in zip(names, v):
            spec = fields.get(fname)
            where = f"{n}.{fname}"
            if spec is None:
                try:
                    setattr(obj, fname, int(value) if isinstance(value, enum.IntEnum) else value)
                except (TypeError, ValueError) as exc:
                    raise TypeError(f"{f}: {where}: {exc}") from None
                continue
            shape, cls, nullable = spec
            if shape == "scalar":
                ptr = as_handle(value, cls, where, f, nullable)
                if ptr is not None:  # the descriptor variable, kept alive by obj (ctypes keeps the pointer's target)
                    setattr(obj, fname, ctypes.pointer(ctypes.c_void_p(ptr)))
            elif shape == "buffer":
                setattr(obj, fname, as_device_ptr(value, where, f, nullable))
            else:
                if value is None and not nullable:
                    raise TypeError(f"{f}: {where} must be an int address; got None")
                setattr(obj, fname, as_opaque(value, where, f))
        return obj

    return Elem(ctype, convert)


# --------------------------------------------------------------------------- handles


class HandleBase:
    """Owns one opaque library handle: destroyed exactly once (close(), `with`, or the finalizer)."""

    __slots__ = ("_ptr", "_cp", "_owned", "_keep", "_children", "_gen", "__weakref__")
    _ptr: int | None
    _cp: ctypes.c_void_p | None  # the same address as a ctypes object, made once: what the wrappers pass
    _owned: bool
    _keep: list[object] | None
    _children: list[HandleBase] | None
    _gen: int  # the library generation it was made under
    _c_name: ClassVar[str] = ""
    _destroy_name: ClassVar[str | None] = None

    def __init__(self) -> None:
        raise TypeError(f"{type(self).__name__} objects come from their create functions, "
                        f"or from {type(self).__name__}.from_address()")

    @classmethod
    def from_address(cls: type[H], ptr: int, *, owned: bool = False) -> H:
        """Wrap an existing handle (borrowed unless `owned`)."""
        if isinstance(ptr, bool) or not isinstance(ptr, int) or not 0 < ptr < ADDRESS_LIMIT:
            raise ValueError(f"{cls.__name__}.from_address: expected a non-null int address below 2**64; got {ptr!r}")
        obj = cls.__new__(cls)
        obj._ptr = ptr
        obj._cp = ctypes.c_void_p(ptr)
        obj._owned = owned and cls._destroy_name is not None
        obj._keep = None
        obj._children = None
        obj._gen = _generation
        _live.append(_ref(obj))
        if len(_live) > _live_limit:
            _prune_live()
        return obj

    @classmethod
    def _from_c(cls: type[H], ptr: int | None, owned: bool, owner: HandleBase | None = None) -> H | None:
        if not ptr:
            return None
        obj = cls.from_address(ptr, owned=owned)
        if owner is not None:
            obj._keep = [owner]  # keeps the owner alive
            with _close_lock:  # against a concurrent close of the owner (which frees what it owns)
                if owner._ptr is None:
                    obj._ptr = obj._cp = None  # born closed: the owner is being destroyed
                else:
                    if owner._children is None:
                        owner._children = []
                    owner._children.append(obj)
        return obj

    @classmethod
    def _created(cls: type[H], ptr: int | None, fn: str, owner: HandleBase | None = None) -> H:
        """The object a create function made (owned, unless the library frees it with its owner)."""
        if not ptr:
            raise RuntimeError(f"{fn} succeeded but returned a null {cls._c_name}")
        obj = cls._from_c(ptr, owner is None, owner)
        assert obj is not None
        return obj

    @property
    def address(self) -> int:
        """The raw handle value (raises once closed)."""
        if self._ptr is None:
            raise ValueError(f"this {type(self).__name__} is closed{_retired_note(self)}")
        return self._ptr

    @property
    def closed(self) -> bool:
        return self._ptr is None

    @property
    def _as_parameter_(self) -> int:
        return self.address

    def keep_alive(self, key: str, objects: object) -> None:
        """Keep `objects` (e.g. callbacks) alive as long as this handle."""
        if self._keep is None:
            self._keep = []
        self._keep.append((key, objects))

    def _retire(self) -> tuple[int | None, list[HandleBase]]:
        """Mark this object and everything it owns closed, atomically against other closers and
        against children being made; (the raw handle, or None when another closer was first; the
        objects marked). Calls that start afterwards see it closed; calls in flight are not waited for."""
        with _close_lock:
            ptr, self._ptr, self._cp = self._ptr, None, None
            children, self._children = self._children or [], None
        if ptr is None:
            return None, []
        group: list[HandleBase] = [self]
        for child in children:
            _, marked = child._retire()
            group += marked
        return ptr, group

    def _detach(self) -> int:
        """Mark closed (children first), wait until no call through it or what it owns is in flight in
        another thread, and return the raw handle (for a destroy function); raises if already closed."""
        ptr, group = self._retire()
        if ptr is None:
            raise ValueError(f"this {type(self).__name__} is already closed{_retired_note(self)}")
        wait_idle(group, sys._getframe(1))  # the caller: the destroy wrapper, which holds this object itself
        return ptr

    def close(self) -> None:
        """Destroy the handle now (idempotent, also under concurrent closes: one caller destroys it, the
        others return); objects it owns are closed first; calls through it in flight in other threads
        finish first (see `wait_idle`)."""
        if self._ptr is None:
            return
        ptr, group = self._retire()
        if ptr is None:
            return  # another thread closed it first
        name = type(self)._destroy_name
        if self._owned and name is not None:
            if self._gen != _generation or _bound_modules is None:
                return  # made under a library that is no longer loaded: never hand it to another one
            wait_idle(group)
            status: int = getattr(_bound_modules[0], name)(ptr)
            if status:
                raise_status(status, name, {"handle": ptr})

    def __copy__(self) -> NoReturn:
        raise TypeError(f"{type(self).__name__} objects cannot be copied: two owners would destroy one handle twice")

    def __deepcopy__(self, memo: object) -> NoReturn:
        self.__copy__()

    def __reduce__(self) -> NoReturn:
        raise TypeError(f"{type(self).__name__} objects cannot be pickled: a handle is valid in one process only")

    def __enter__(self: H) -> H:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if sys.is_finalizing() or getattr(self, "_ptr", None) is None:
            return  # never destroy during interpreter shutdown: the library may be gone
        try:
            self.close()
        except Exception as exc:  # a finalizer must not raise
            warnings.warn(f"{type(self).__name__}: destroying the handle failed: {exc}", ResourceWarning, stacklevel=1)

    def __repr__(self) -> str:
        state = "closed" if self._ptr is None else f"0x{self._ptr:x}{'' if self._owned else ', borrowed'}"
        return f"<{type(self).__name__} {state}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HandleBase) and type(other) is type(self) and other._ptr == self._ptr

    def __hash__(self) -> int:
        return hash((type(self), self._ptr))


# every handle object made (weakly): unload_library() retires those of the library it unloads
# the docstring names the target's library (a lone surrogate in its name is shown as its escape)
HandleBase.__doc__ = (HandleBase.__doc__ or "").replace("library", "".join(
    f"\\u{ord(c):04x}" if "\ud800" <= c <= "\udfff" else c for c in LIB_NAME), 1)
_live: list[weakref.ref[HandleBase]] = []
_live_limit = 1024  # prune dead references when the list grows past this (then twice the survivors)
_ref = weakref.ref


def _prune_live() -> None:
    global _live_limit
    with _close_lock:
        n = len(_live)
        if n > _live_limit:  # only the first n: references appended meanwhile stay
            _live[:n] = [r for r in _live[:n] if r() is not None]
            _live_limit = max(1024, 2 * len(_live))


def _retire_live() -> None:
    """Mark every live handle object closed without destroying it: its library is being unloaded (and may be
    gone), so no call, and no destroy function of a library loaded later, may ever receive it."""
    global _live_limit
    with _close_lock:
        n = len(_live)
        refs = _live[:n]
        del _live[:n]
        _live_limit = 1024
        for r in refs:
            obj = r()
            if obj is not None and obj._gen < _generation:
                obj._ptr = obj._cp = None
                obj._children = None


def _retired_note(obj: HandleBase) -> str:
    return " (made under a library that has since been unloaded)" if obj._gen != _generation else ""


# --------------------------------------------------------------------------- calls in flight

#: guards every change of a handle object's pointer and of its owner's list of children
_close_lock = threading.RLock()
_MAX_WAIT_SLEEP = 1e-3


def _after_fork_in_child() -> None:
    """A forked child gets fresh locks (one another thread held at fork time would stay locked)."""
    global _lock, _close_lock
    _lock = threading.RLock()
    _close_lock = threading.RLock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _wrapper_module(name: object) -> bool:
    """A typed-API module of one release (`<package>.vX_Y_Z.api`), whose functions are the wrappers."""
    return isinstance(name, str) and name.startswith(_PACKAGE + ".v") and name.endswith(".api")


def _holds(frame: Any, objects: Sequence[HandleBase]) -> bool:
    """Does the frame's local namespace reference one of `objects` (directly, in a list or tuple
    argument, or in the handle array `in_array` made)?"""
    for value in frame.f_locals.values():
        if any(value is o for o in objects):
            return True
        if type(value) in (list, tuple) or isinstance(value, ctypes.Array):
            items = getattr(value, "_miogen_handles", value)
            if any(item is o for item in items if isinstance(item, HandleBase) for o in objects):
                return True
    return False


def calls_in_flight(objects: Sequence[HandleBase], skip: Any = None) -> tuple[int, bool]:
    """(threads with a typed-API call running through one of `objects`, whether the current thread
    is one of them). A wrapper's frame references its arguments from before it reads a handle's
    pointer until after the C call returns, so a call that read the pointer before it was marked
    closed is found here until it has returned; a call that starts later sees the object closed.
    `skip`: a frame to ignore (the destroy wrapper that is closing the object itself)."""
    me = threading.get_ident()
    others, mine = 0, False
    frames = sys._current_frames()
    frame: Any = None
    try:
        for tid, frame in frames.items():
            while frame is not None:
                if frame is not skip and _wrapper_module(frame.f_globals.get("__name__")) and _holds(frame, objects):
                    if tid == me:
                        mine = True
                    else:
                        others += 1
                    break
                frame = frame.f_back
    finally:  # this very frame is among them: a reference kept here would keep it, and every caller, alive
        frames.clear()
        frame = skip = None
    return others, mine


def wait_idle(objects: Sequence[HandleBase], skip: Any = None) -> None:
    """Block until no other thread has a call through `objects` in flight (they were marked closed
    first, so no new call can start); polling with short sleeps, so the calls never pay for the
    guard. A call through them in flight in this very thread (a callback of that call closing it)
    cannot be waited for: RuntimeError, and the caller destroys nothing."""
    delay = 0.0
    while True:
        others, mine = calls_in_flight(objects, skip)
        if mine:
            names = ", ".join(sorted({type(o).__name__ for o in objects}))
            raise RuntimeError(f"closing a {names} while a call through it is in progress on this thread "
                               f"(from a callback or a signal handler?); it is marked closed but not destroyed")
        if not others:
            return
        time.sleep(delay)
        delay = min(delay * 2 or 1e-5, _MAX_WAIT_SLEEP)


# --------------------------------------------------------------------------- status codes

StatusHook = Callable[[int, str, Mapping[str, object]], None]
_raise_hook: list[StatusHook] = []


def raise_status(status: int, fn: str, args: Mapping[str, object]) -> None:
    """Turn a failing status into the matching exception (set by the errors module)."""
    _raise_hook[0](status, fn, args)


def summarize(args: Mapping[str, object]) -> str:
    parts = []
    for name, value in args.items():
        text = repr(value)
        parts.append(f"{name}={text if len(text) <= 60 else text[:57] + '...'}")
    return ", ".join(parts)

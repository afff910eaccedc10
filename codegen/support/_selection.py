"""Release selection: which committed release serves a library of a given version, under a version policy."""

from __future__ import annotations

import ctypes
from collections.abc import Callable

from . import _state
from ._envflags import env_flag
from ._target import LIB_NAME, RELEASES, SKIP_VERSION_CHECK_ENV, VERSION_GETTER, VersionError
from ._text import RELEASES_MAX, name_list

#: the version policies: bind a neighbouring release with a warning, only the same major.minor, or without a check
POLICIES = ("compatible", "strict", "off")


class Version(tuple[int, int, int]):
    """A release, major.minor.patch: the package's one version type and one grammar (`parse`: three ASCII numbers of
    up to six digits joined by dots, the generator's `miogen.spec.releases.Version` grammar). A tuple of three ints, so it
    compares, hashes and unpacks as one; shown as X.Y.Z."""

    __slots__ = ()

    def __new__(cls, major: int, minor: int, patch: int) -> Version:
        return super().__new__(cls, (int(major), int(minor), int(patch)))

    @classmethod
    def parse(cls, text: str) -> Version:
        """`text` ("X.Y.Z", spaces around allowed) as a Version; ValueError naming it otherwise."""
        parts = text.strip().split(".") if isinstance(text, str) else []
        if len(parts) != 3 or not all(p.isascii() and p.isdecimal() and len(p) <= 6 for p in parts):
            raise ValueError(f"expected a version X.Y.Z; got {text!r}")
        return cls(int(parts[0]), int(parts[1]), int(parts[2]))

    @property
    def major(self) -> int:
        return self[0]

    @property
    def minor(self) -> int:
        return self[1]

    @property
    def patch(self) -> int:
        return self[2]

    def as_int(self) -> int:
        """major * 1_000_000 + minor * 1_000 + patch (PyTorch's packing; never ATen's lossy shifts)."""
        return self[0] * 1_000_000 + self[1] * 1_000 + self[2]

    def __str__(self) -> str:
        return f"{self[0]}.{self[1]}.{self[2]}"

    def __repr__(self) -> str:
        return f"Version({self[0]}, {self[1]}, {self[2]})"

    def __getnewargs__(self) -> tuple[int, int, int]:  # pickling and copying make a Version again
        return self[0], self[1], self[2]


def _env_policy(policy: str) -> str:
    """The policy, or "off" when the skip switch is on in the environment (see `_envflags.env_flag`)."""
    if SKIP_VERSION_CHECK_ENV is None:
        return policy
    return "off" if env_flag(SKIP_VERSION_CHECK_ENV) else policy


def exports(lib: ctypes.CDLL, name: str) -> bool:
    """Whether the library exports `name`. (For a library whose path is not UTF-8, ctypes answers a missing name with
    UnicodeDecodeError, decoding the path for its AttributeError's message: that is a no too.)"""
    try:
        getattr(lib, name)
    except (AttributeError, UnicodeDecodeError):
        return False
    return True


def read_version(lib: ctypes.CDLL, where: str) -> Version | None:
    """The library's version from its version function; None when it has none."""
    if VERSION_GETTER is None:
        return None
    if not exports(lib, VERSION_GETTER):
        return None
    get = getattr(lib, VERSION_GETTER)
    parts = [ctypes.c_size_t() for _ in range(3)]
    get.restype = ctypes.c_int
    get.argtypes = [ctypes.POINTER(ctypes.c_size_t)] * 3
    status: int = get(*(ctypes.byref(p) for p in parts))
    major, minor, patch = (p.value for p in parts)
    if status != 0 or not (0 < major < 100 and minor < 1000 and patch < 100000):
        raise VersionError(
            f"{where}: {VERSION_GETTER} gave an unparsable version ({major}.{minor}.{patch}, status {status}); "
            f"nothing was bound")
    return Version(major, minor, patch)


def _select(lib: ctypes.CDLL, where: str, policy: str) -> tuple[str, tuple[int, int, int] | None, list[str]]:
    """(release to bind, the library's version, warnings) under `policy`, judged by its version and exports."""
    version = read_version(lib, where)
    release, notes = select_release(version, policy, where, exports=lambda name: exports(lib, name))
    return release, version, notes


def _stable() -> dict[str, frozenset[str]]:
    """Committed release -> its functions outside the beta API."""
    from ._releases import FUNCTIONS

    out: dict[str, set[str]] = {r: set() for r in RELEASES}
    for name, (_, stable) in FUNCTIONS.items():
        for r in stable:
            out[r].add(name)
    return {r: frozenset(names) for r, names in out.items()}


def _functions(release: str) -> frozenset[str]:
    """Every function (beta included) that committed `release` declares."""
    from ._releases import FUNCTIONS

    return frozenset(n for n, (declared, _) in FUNCTIONS.items() if release in declared)


def _first(name: str) -> Version:
    """The first committed release declaring function `name`."""
    from ._releases import FUNCTIONS

    return Version.parse(FUNCTIONS[name][0][0])


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
    v = str(Version(*version))
    committed = {r: Version.parse(r) for r in RELEASES}  # each release read once
    same = sorted((r for r, c in committed.items() if c[:2] == version[:2]),
                  key=lambda r: (committed[r] != version, abs(committed[r][2] - version[2]), -committed[r][2]))
    if same and (exports is None or policy == "off"):
        notes = [] if committed[same[0]] == version or policy == "off" else [
            f"{where} is {LIB_NAME} {v}; bound to the bindings of {same[0]} (another patch release)"]
        return same[0], notes
    if same and exports is not None:
        return _select_patch(version, same, exports, where)
    older = [r for r, c in committed.items() if c < version]
    if policy == "strict" or not older:
        if policy == "off":
            return (older or RELEASES)[-1 if older else 0], []
        why = ("no committed release has the same major.minor (strict policy)" if older
               else "it is older than every supported release")
        raise VersionError(f"{where} is {LIB_NAME} {v}: {why}; these bindings support {LIB_NAME} {supported}")
    release = older[-1]
    newer = [r for r, c in committed.items() if c > version]
    where_it_is = f"between {release} and {newer[0]}" if newer else f"newer than every committed release ({release})"
    notes = [] if policy == "off" else [
        f"{where} is {LIB_NAME} {v}, {where_it_is}: bound to the bindings of {release}; functions and enum values "
        f"added after {release} are unbound. Add its release with `miogen add-release <its include/miopen/miopen.h>` "
        f"(in a checkout: `make upgrade HEADER=...`)"]
    return release, notes


def _select_patch(version: tuple[int, int, int], same: list[str], exports: Callable[[str], bool],
                  where: str) -> tuple[str, list[str]]:
    """Among the committed patches of the library's major.minor (nearest first), the one to bind."""
    v = str(Version(*version))
    stable = _stable()
    common = frozenset.intersection(*(stable[r] for r in same))
    lacking = sorted(n for n in common if _first(n) <= version and not exports(n))
    if lacking:
        minor = f"{version[0]}.{version[1]}"
        raise VersionError(
            f"{where} reports {LIB_NAME} {v}, but it lacks {len(lacking)} function(s) that every committed "
            f"{LIB_NAME} {minor} release ({', '.join(same)}) has (e.g. {', '.join(lacking[:4])}): is the "
            f"version or the library wrong? Nothing was bound")
    release = next((r for r in same if all(exports(n) for n in stable[r])), same[0])
    missing = sorted(n for n in stable[release] if not exports(n))
    exact = Version.parse(release) == version
    if exact and not missing:
        return release, []
    unbound = sorted(n for r in same if r != release for n in _functions(r) - _functions(release) if exports(n))
    note = f"{where} is {LIB_NAME} {v}; bound to the bindings of {release}"
    note += "" if exact else " (another patch release)"
    if missing:
        note += (f"; it lacks {len(missing)} function(s) of {release}, which raise MissingSymbolError "
                 f"(e.g. {', '.join(missing[:4])})")
    if unbound:
        note += f"; {len(unbound)} function(s) it exports are unbound (e.g. {', '.join(unbound[:4])})"
    return release, [note]


def missing_name(name: str) -> str:
    """Why the bound release (or, with none bound, every release) lacks `name`, naming the releases that have it."""
    from ._releases import HAVE

    have = HAVE.get(name)
    if have is None:
        return f"{name} is in no {LIB_NAME} release these bindings have ({name_list(RELEASES, limit=RELEASES_MAX)})"
    releases = name_list(have, limit=RELEASES_MAX)
    if _state.bound is None and "." in name:
        return (f"{name} is not in {LIB_NAME} {RELEASES[-1]}, whose names serve while no library is loaded; "
                f"releases that have it: {releases} (load_library() binds the loaded library's release)")
    if _state.bound is None:
        return (f"{name} is not a name of this module in any release (no {LIB_NAME} library is loaded yet); "
                f"releases with a {name} elsewhere: {releases}")
    bound = f"the bound {LIB_NAME} release {_state.bound} ({_state.lib_path})"
    return f"{name} is not in {bound}; releases that have it: {releases}"

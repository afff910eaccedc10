"""libclang and the compiler builtin headers it needs.

The libclang PyPI wheel ships libclang.so but no clang resource headers, so
stddef.h/stdbool.h/stdint.h must come from an installed compiler. Without them clang
turns `size_t` and `bool` into `int` after a single fatal diagnostic.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
from pathlib import Path
from types import ModuleType

from ..base.errors import SetupError

BUILTIN_ENV = "MIOGEN_BUILTIN_INCLUDE"
_REQUIRED = ("stddef.h", "stdbool.h", "stdint.h")


def cindex() -> ModuleType:
    """The `clang.cindex` module, with a clear error when libclang is unusable."""
    try:
        import clang.cindex as ci
    except ImportError:
        raise SetupError("libclang is not installed: pip install libclang==18.1.1 (or run `make venv`)") from None
    try:
        if not ci.Config.loaded and not ci.Config.library_file:
            ci.Config.library_file = library_file(ci.Config.library_path)
        ci.conf.lib  # noqa: B018 - loads libclang.so
    except Exception as exc:  # cindex raises LibclangError, a plain Exception
        raise SetupError(f"cannot load libclang.so from the libclang wheel: {exc}") from None
    if not getattr(ci.c_interop_string, "_miogen_paths", False):
        # paths are bytes on POSIX: libclang's strings (file names among them) as os.fsdecode reads them, so a
        # folder named with any bytes round-trips (pass paths back with os.fsencode); UTF-8 text reads the same
        def value(self: ctypes.c_char_p) -> str | None:
            raw = super(ctypes.c_char_p, self).value
            return None if raw is None else os.fsdecode(raw)

        ci.c_interop_string.value = property(value)
        ci.c_interop_string._miogen_paths = True
    return ci  # type: ignore[no-any-return]


def library_file(folder: str | None) -> str:
    """The libclang file cindex loads (`Config.get_filename`: the platform's file name, in `folder` if it is there),
    named from `sys.platform`: cindex asks `platform.system()`, and importing `platform` is a millisecond or two of
    every parse."""
    name = {"darwin": "libclang.dylib", "win32": "libclang.dll"}.get(sys.platform, "libclang.so")
    if folder and os.path.isfile(folder + "/" + name):
        return folder + "/" + name
    return name


def _has_builtins(d: Path) -> bool:
    return all((d / name).is_file() for name in _REQUIRED)


def which(name: str) -> str | None:
    """`shutil.which(name)` for a plain command name: the first executable file of that name on $PATH. Every parse
    looks up the compilers; shutil would cost it a few milliseconds of imports (bz2, lzma, zlib)."""
    search = os.environ.get("PATH")
    if search is None:
        search = os.confstr("CS_PATH")
    for folder in dict.fromkeys(search.split(os.pathsep)) if search else ():
        path = os.path.join(folder, name)
        if os.access(path, os.F_OK | os.X_OK) and not os.path.isdir(path):
            return path
    return None


def _ask(cmd: list[str]) -> str | None:
    if which(cmd[0]) is None:
        return None
    import subprocess  # only here: most runs find the answer in the per-user cache

    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


_COMPILERS = ("clang", "gcc", "cc")
# what else steers where a compiler driver finds its own files
_DRIVER_VARIABLES = ("GCC_EXEC_PREFIX", "COMPILER_PATH")


@functools.cache
def find_builtin_include() -> Path:
    """The first directory holding the compiler's stddef.h, stdbool.h and stdint.h.

    Looks at $MIOGEN_BUILTIN_INCLUDE, then `clang -print-resource-dir`, then
    `gcc`/`cc -print-file-name=include`. The compilers' answers are kept in the per-user cache, keyed by
    which compiler each name finds (path, size, mtime) and the variables that steer them; which answer holds
    the headers is checked on every run.
    """
    env = os.environ.get(BUILTIN_ENV)
    if env:
        if _has_builtins(Path(env)):
            return Path(env)
        raise SetupError(
            f"${BUILTIN_ENV}={env} does not hold {', '.join(_REQUIRED)}; point it at a compiler's builtin include dir"
        )
    from ..base import cache

    found: list[object] = []
    for name in _COMPILERS:
        path = which(name)
        try:
            st = os.stat(path) if path else None
        except OSError:
            st = None
        found.append((name, path, st and (st.st_size, st.st_mtime_ns)))
    key = f"builtin include\0{found!r}\0{[os.environ.get(v) for v in _DRIVER_VARIABLES]!r}"
    return _choose(cache.remembered(key, tuple, _ask_compilers))


def _ask_compilers() -> tuple[str | None, str | None, str | None]:
    """What the compilers answer: clang's resource folder, then gcc's and cc's builtin include folder (None where
    one is missing or says nothing)."""
    return (_ask(["clang", "-print-resource-dir"]), _ask(["gcc", "-print-file-name=include"]),
            _ask(["cc", "-print-file-name=include"]))


def _choose(answers: tuple[str | None, str | None, str | None]) -> Path:
    """The first of the compilers' answers that holds the builtin headers (checked on every run: headers installed
    or removed since change the choice)."""
    resource, gcc, cc = answers
    tried: list[str] = []
    if resource:
        tried.append(f"clang: {resource}/include")
        if _has_builtins(Path(resource) / "include"):
            return Path(resource) / "include"
    for name, found in (("gcc", gcc), ("cc", cc)):
        if found:
            tried.append(f"{name}: {found}")
            if os.path.isabs(found) and _has_builtins(Path(found)):
                return Path(found)
    raise SetupError(
        "cannot find the compiler builtin headers (stddef.h, stdbool.h, stdint.h) that the libclang wheel lacks; "
        "install gcc or clang, or set $" + BUILTIN_ENV + " to their directory"
        + (f" (tried {'; '.join(tried)})" if tried else " (no clang, gcc or cc on PATH)")
    )

"""The one library search of the package: where a shared library is looked for, in order.

Both the bound library (`_support.load_library`) and the HIP runtime (`miopen.hip`) search with it;
what differs between them is a parameter here, never a second search."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

#: the folders pip installs wheels into, as sys.path names them (venv, user, system and Debian's)
SITE_DIR_NAMES = ("site-packages", "dist-packages")


def site_dirs() -> list[str]:
    """The site-packages folders of this interpreter, in sys.path's order (each once)."""
    seen: dict[str, None] = {}
    for entry in sys.path:
        if entry and os.path.basename(entry.rstrip(os.sep)) in SITE_DIR_NAMES and os.path.isdir(entry):
            seen.setdefault(os.path.abspath(entry))
    return list(seen)


def _wheel_candidates(wheel_dirs: Sequence[str], names: Sequence[str]) -> list[tuple[str, str]]:
    """Each wheel folder pattern in each site-packages folder: every match (sorted), or the pattern itself when none
    matches, so the search lists every place it looked."""
    import glob  # only when searching

    found: list[tuple[str, str]] = []
    for site in site_dirs():
        for pattern in wheel_dirs:
            where = os.path.join(site, pattern)
            matches = sorted(m for m in glob.glob(where) if os.path.isdir(m)) or [where]
            for folder in matches:
                origin = f"wheel {os.path.relpath(folder, site)} in {site}"
                found += [(origin, os.path.join(folder, name)) for name in names]
    return found


def _in_root(label: str | None, root: str, subdirs: Sequence[str], names: Sequence[str]) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for sub in subdirs:
        origin = f"{label}/{sub}" if label else f"{root}/{sub}"
        found += [(origin, os.path.join(root, sub, name)) for name in names]
    return found


def library_candidates(env: str, names: Sequence[str], root_env: str | None = None, roots: Sequence[str] = (),
                       find_name: str | None = None, *, subdirs: Sequence[str] = ("lib", "lib64"),
                       env_dir: bool = False, env_root_label: bool = False, prefix_envs: Sequence[str] = (),
                       wheel_dirs: Sequence[str] = ()) -> list[tuple[str, str]]:
    """(origin, path or name) pairs to try in order.

    $`env` alone when set (that library or an error, never another one; with `env_dir`, a directory
    there stands for each of `names` in it); else each install root's `subdirs` ($`root_env` first,
    labelled "$ROOT_ENV/lib" with `env_root_label`; then each prefix of the `prefix_envs`, os.pathsep-separated
    lists such as $CONDA_PREFIX, labelled "$CONDA_PREFIX/lib"), the `wheel_dirs` (patterns relative to each
    site-packages folder of this interpreter), then `roots`' `subdirs`, the loader path by each of `names`, and what ctypes.util.find_library(`find_name`)
    finds."""
    explicit = os.environ.get(env)
    if explicit:
        if env_dir and os.path.isdir(explicit):
            return [(f"${env}", os.path.join(explicit, name)) for name in names]
        return [(f"${env}", explicit)]
    found: list[tuple[str, str]] = []
    labelled: list[tuple[str | None, str]] = []
    if root_env and os.environ.get(root_env):
        labelled.append((f"${root_env}" if env_root_label else None, os.environ[root_env]))
    for var in prefix_envs:
        prefixes = [p for p in os.environ.get(var, "").split(os.pathsep) if p]
        labelled += [(f"${var}" if len(prefixes) == 1 else f"${var} ({p})", p) for p in dict.fromkeys(prefixes)]
    for label, root in labelled:
        found += _in_root(label, root, subdirs, names)
    if wheel_dirs:  # this interpreter's own ROCm before the system-wide roots
        found += _wheel_candidates(wheel_dirs, names)
    for root in roots:
        found += _in_root(None, root, subdirs, names)
    found += [("loader path", name) for name in names]
    if find_name:
        import ctypes.util  # only when searching: it costs milliseconds at import

        util = ctypes.util.find_library(find_name)
        if util:
            found.append(("ctypes.util.find_library", util))
    return found

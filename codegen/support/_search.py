"""The one library search of the package: where a shared library is looked for, in order.

Both the bound library (`_support.load_library`) and the HIP runtime (`miopen.hip`) search with it;
what differs between them is a parameter here, never a second search."""

from __future__ import annotations

import os
from collections.abc import Sequence


def library_candidates(env: str, names: Sequence[str], root_env: str | None = None, roots: Sequence[str] = (),
                       find_name: str | None = None, *, subdirs: Sequence[str] = ("lib", "lib64"),
                       env_dir: bool = False, env_root_label: bool = False) -> list[tuple[str, str]]:
    """(origin, path or name) pairs to try in order.

    $`env` alone when set (that library or an error, never another one; with `env_dir`, a directory
    there stands for each of `names` in it); else each install root's `subdirs` ($`root_env` first,
    labelled "$ROOT_ENV/lib" with `env_root_label`, then `roots`), the loader path by each of `names`,
    and what ctypes.util.find_library(`find_name`) finds."""
    explicit = os.environ.get(env)
    if explicit:
        if env_dir and os.path.isdir(explicit):
            return [(f"${env}", os.path.join(explicit, name)) for name in names]
        return [(f"${env}", explicit)]
    found: list[tuple[str, str]] = []
    labelled: list[tuple[str | None, str]] = []
    if root_env and os.environ.get(root_env):
        labelled.append((f"${root_env}" if env_root_label else None, os.environ[root_env]))
    labelled += [(None, root) for root in roots]
    for label, root in labelled:
        for sub in subdirs:
            origin = f"{label}/{sub}" if label else f"{root}/{sub}"
            found += [(origin, os.path.join(root, sub, name)) for name in names]
    found += [("loader path", name) for name in names]
    if find_name:
        import ctypes.util  # only when searching: it costs milliseconds at import

        util = ctypes.util.find_library(find_name)
        if util:
            found.append(("ctypes.util.find_library", util))
    return found

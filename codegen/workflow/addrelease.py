"""`miogen add-release HEADER`: a pip user's upgrade. Parse the header of the MIOpen they have, diff and gate it
against the committed specs this miogen ships, and render its release sub-package into the per-user releases folder
(`$MIOGEN_RELEASES_PATH`, else the user data folder), where the installed `import miopen` finds it and binds it to a
library of exactly that version. Nothing of the installed package is written."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from .. import GENERATOR_VERSION
from ..base.digest import sha256
from ..base.errors import CodegenError
from ..render.plans import HandlePlan
from ..spec.releases import Version


def releases_root(target: str) -> Path:
    """The per-user releases folder of `target` (the same rule as the package's `_userreleases.releases_root`)."""
    base = os.environ.get("MIOGEN_RELEASES_PATH")
    if not base:
        data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
        base = os.path.join(data, "miogen", "releases")
    return Path(base) / target


def add_release(args: argparse.Namespace) -> int:
    from ..semantics.annotations import load_annotations
    from ..semantics.resolve import resolve
    from ..spec.diff import diff, to_markdown
    from ..parse.headers import ParseOptions
    from ..parse.parser import parse_header
    from ..render.planner import plan
    from ..spec.releases import Releases
    from ..render.package import banner, render, support_digest
    from ..spec.spec_io import dumps, load
    from ..spec.target import TARGETS_DIR, target_for

    started = time.perf_counter()
    specs_dir = args.specs or TARGETS_DIR / args.target_name
    shipped = Releases.of(specs_dir)
    if not shipped.paths:
        raise CodegenError(f"{specs_dir}: no committed specs; is this miogen installed from a wheel that ships them?")
    target = target_for(args.target_name)
    print(f"add-release [parse] {args.header}", flush=True)
    spec = parse_header(args.header, target, ParseOptions(includes=tuple(args.includes), defines=tuple(args.defines),
                                                          beta=True, shims=not args.no_shims),
                        args.miopen_version, args.rocm_release)
    version = spec.version
    if version in shipped.paths:
        print(f"{target.display_name} {version} is a committed release of this miogen: `import miopen` binds its own "
              f"bindings; nothing to add")
        return 0
    older = [v for v in shipped.versions if v < version]
    if not older:
        raise CodegenError(f"{args.header} is {target.display_name} {version}, older than every release this miogen "
                           f"supports (the oldest is {shipped.versions[0]})")
    base = load(shipped.paths[older[-1]])
    print(f"add-release [diff] {target.display_name} {base.version} → {version}", flush=True)
    print(to_markdown(diff(base, spec)))
    ann_path = specs_dir / "annotations.yaml"
    print(f"add-release [gate] the annotations this miogen ships ({ann_path})", flush=True)
    ann = load_annotations(ann_path)
    sem = resolve(spec, ann, prefix=target.function_prefix)  # AnnotationGateError: printed by the command line
    print("add-release [render] its release sub-package", flush=True)
    added = shipped.added_in()
    for f in spec.functions:
        added.setdefault(f.name, str(version))
    text = dumps(spec)
    info = banner(f"{version}.yaml", sha256(text.encode()).hexdigest(), sha256(ann_path.read_bytes()).hexdigest())
    p = plan(spec, sem, target, info, added)
    _check_handles(p.handles, target.display_name, version)
    module = version.module
    files = {name.partition("/")[2]: body for name, body in render(p).items() if name.startswith(module + "/")}
    files["release.json"] = json.dumps({
        "release": str(version), "module": module, "generator": GENERATOR_VERSION, "support": support_digest(),
        "source": os.fsdecode(os.path.abspath(args.header)), "header_sha256": spec.header.sha256,
        "shipped_in": spec.release or "", "added": time.strftime("%Y-%m-%d"),
        "functions": sorted(f.name for f in spec.functions)}, indent=1, sort_keys=True) + "\n"
    root = args.output or releases_root(target.name)
    folder = _write_private(root, module, files)
    print(f"wrote {folder} ({len(files)} files) in {time.perf_counter() - started:.1f} s")
    print(f"`import miopen` now binds {target.display_name} {version} to a library of exactly that version "
          f"(`python -m miopen` lists it)")
    return 0


def _check_handles(handles: Sequence[HandlePlan], lib: str, version: Version) -> None:
    """Every handle class the release uses must exist in the installed package's shared handle module."""
    import importlib.util

    found = importlib.util.find_spec("miopen._generated._handles")
    if found is None or found.origin is None:
        return  # no installed package beside this miogen: the release folder is still valid for one of its version
    text = Path(found.origin).read_text(encoding="utf-8")
    missing = [h.py_name for h in handles if f"\nclass {h.py_name}(" not in text]
    if missing:
        raise CodegenError(f"{lib} {version} has handle types the installed miopen package does not know "
                           f"({', '.join(missing)}): a release adding handle types needs a newer miogen")


def _write_private(root: Path, module: str, files: dict[str, str]) -> Path:
    """Write the release folder (0700, files 0600; whatever the umask) beside its place, then swap it in."""
    import shutil

    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(root, 0o700)
    folder = root / module
    staged = root / f".{module}.{os.getpid()}.tmp"
    shutil.rmtree(staged, ignore_errors=True)
    staged.mkdir(mode=0o700)
    for name, body in files.items():
        fd = os.open(staged / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(body)
    old = root / f".{module}.{os.getpid()}.old"
    if folder.exists():
        os.replace(folder, old)
    os.replace(staged, folder)
    shutil.rmtree(old, ignore_errors=True)
    if sys.platform != "win32":
        os.chmod(folder, 0o700)
    return folder

"""`python -m miopen`: the releases this package has bindings for, the library it finds, the release it binds, and
which features that library offers.

    python -m miopen [--library PATH] [--json]

Sections: MIOpen's settings (`miopen.configure`: each value and where it came from), the committed releases (with the ROCm release each shipped in) and what each is proven against (`_releases.PROVEN`,
rendered from specs/miopen/releases.yaml: its real header, the ABI check on it, its real library); every place searched for the library, in order, with why each failed; the
library found (path, version, backend: HIP or OpenCL); the selected release, with any warning the selection gave, or the refusal (the
MIOpenVersionError message); the `has_feature` table.

Exit status: 0 when a library was found and a release bound; 1 when no library was found, or its version was refused
(or the environment's version switch is malformed); 2 for a usage error. Nothing ends in a traceback.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import stat
import sys
import warnings
from collections.abc import Sequence
from typing import Any

EXIT_OK = 0
EXIT_NOT_USABLE = 1  # no library found, or its version refused
ROOT_ENV = "ROCM_PATH"
_RELEASES_PATH_ENV = "MIOGEN_RELEASES_PATH"

def _probe(library: str | None) -> tuple[list[dict[str, str]], str | None]:
    """Every candidate in the order `load_library` tries them, with the outcome; and the first that loads.

    Mirrors the search of `_support.load_library`: a path that does not exist is skipped, anything else is
    handed to the dynamic loader. Candidates after the one that loads are listed as not tried."""
    from ._generated import _support as s

    candidates = [("--library", library)] if library is not None else s._candidates()
    tried: list[dict[str, str]] = []
    found: str | None = None
    for origin, candidate in candidates:
        entry = {"origin": origin, "path": candidate}
        if found is not None:
            tried.append({**entry, "result": "not tried", "detail": "a library was found before it"})
            continue
        if os.sep in candidate and not os.path.isfile(candidate):  # a FIFO or a device would block the loader
            tried.append({**entry, "result": "failed", "detail": s.load_failure(candidate)})
            continue
        try:
            ctypes.CDLL(candidate)
        except OSError as exc:
            tried.append({**entry, "result": "failed", "detail": s.load_failure(candidate, exc)})
            continue
        tried.append({**entry, "result": "loaded", "detail": ""})
        found = candidate
    return tried, found


def _vstr(version: Sequence[int] | None) -> str | None:
    from ._generated._selection import Version

    return None if version is None else str(Version(*version))


def _features(lib: ctypes.CDLL) -> list[dict[str, Any]]:
    from . import version as v
    from ._generated import _support as s
    from ._generated._selection import exports as _exports

    bound = s.bound_raw_prototypes()
    runtime = v.runtime_version()
    rows = []
    for name in sorted(v.FEATURES):
        symbols, minimum = v.FEATURES[name]
        available = v.has_feature(name)
        lacking = [sym for sym in symbols if not _exports(lib, sym)]
        unbound = [sym for sym in symbols if sym not in bound]
        if available:
            why = ""
        elif lacking:
            why = "the library lacks " + ", ".join(lacking)
        elif unbound:
            why = f"the bound release {s.bound_release()} has no binding for " + ", ".join(unbound)
        else:
            why = f"needs MIOpen {minimum} or newer; the library is {runtime}"
        rows.append({"name": name, "available": available, "symbols": list(symbols), "minimum": str(minimum),
                     "why_not": why})
    return rows


def report(library: str | None = None) -> tuple[dict[str, Any], int]:
    """What `python -m miopen` shows, as data, and its exit status. Loads (and binds) the library it finds:
    meant for a process of its own, where no library is loaded yet."""
    from . import __version__
    from ._generated import _state
    from ._generated import _support as s
    from ._generated._releases import PROVEN, ROCM  # the module itself: `from ._generated import _releases` would bind
    from ._generated._selection import _env_policy
    from ._generated import _userreleases as _ur
    from ._generated._target import MODULES

    info: dict[str, Any] = {
        "package": {"name": "miopen", "version": __version__},
        "releases": [{"miopen": r, "rocm": ROCM.get(r, ""), "module": MODULES[r], "proven": PROVEN.get(r, {})}
                     for r in s.RELEASES],
        "added_releases": {"root": _ur.releases_root(), "releases": [r._asdict() for r in _ur.scan()]},
        "environment": {name: os.environ.get(name) for name in
                        dict.fromkeys((s.LIBRARY_ENV, ROOT_ENV, *s.LIBRARY_PREFIX_ENVS, s.SKIP_VERSION_CHECK_ENV or "")) if name},
        "settings": [],
        "search": [],
        "library": None,
        "selection": None,
        "features": [],
        "error": None,
    }
    from . import settings

    settings.apply_defaults()  # what `import miopen` does before its library loads
    info["settings"] = settings.current()
    if library is not None and not library:
        info["error"] = "--library: an empty path"
        return info, EXIT_NOT_USABLE
    tried, found = _probe(library)
    info["search"] = tried
    if found is None:
        env = os.environ.get(s.LIBRARY_ENV) if library is None else None
        where = (f"{library} does not load" if library is not None else
                 f"${s.LIBRARY_ENV} is set to '{env}', which does not load" if env else "no MIOpen library found")
        hint = ("check the path, and that the library's own dependencies are installed" if library is not None else
                f"fix it, or unset ${s.LIBRARY_ENV} to search the install roots and the loader path" if env else
                f"set ${s.LIBRARY_ENV} to the library's path or ${ROOT_ENV} to its install root, or pass --library PATH")
        info["error"] = f"{where}; {hint}"
        return info, EXIT_NOT_USABLE
    lib = ctypes.CDLL(found)
    from .backend import detect

    library_info: dict[str, Any] = {"path": found, "version": None, "version_error": None, "backend": detect(lib)}
    info["library"] = library_info
    try:
        library_info["version"] = _vstr(s.read_version(lib, found))
    except s.MIOpenVersionError as exc:
        library_info["version_error"] = str(exc)
    selection: dict[str, Any] = {"release": None, "policy": _state.policy, "warnings": [], "refused": None}
    info["selection"] = selection
    try:
        selection["policy"] = _env_policy(_state.policy)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            s.load_library(found)
        selection["warnings"] = [str(w.message) for w in caught if issubclass(w.category, s.MIOpenVersionWarning)]
    except (s.MIOpenVersionError, ValueError) as exc:
        selection["refused"] = str(exc)
        info["error"] = f"the library's version was refused: {exc}" if isinstance(exc, s.MIOpenVersionError) else str(exc)
        return info, EXIT_NOT_USABLE
    except OSError as exc:  # the loader changed its mind between the probe and the load
        info["error"] = f"{found} does not load: {exc}"
        return info, EXIT_NOT_USABLE
    selection["release"] = s.bound_release()
    library_info["version"] = _vstr(s.runtime_version()) or library_info["version"]
    info["features"] = _features(s.library())
    return info, EXIT_OK


def _text(info: dict[str, Any], status: int) -> str:
    from ._generated._text import shown

    lines: list[str] = []
    out = lines.append
    pkg = info["package"]
    out(f"{pkg['name']} {pkg['version']}: MIOpen for Python (bindings generated by miogen)")
    out("")
    out(f"Bindings for {len(info['releases'])} MIOpen releases:")
    out(f"  {'MIOpen':<8} {'ROCm':<24} sub-package")
    for r in info["releases"]:
        out(f"  {r['miopen']:<8} {r['rocm'] or '-':<24} {r['module']}")
    added = info["added_releases"]
    out("")
    out(f"Releases added with `miogen add-release` ({added['root']}; ${_RELEASES_PATH_ENV} moves it):")
    for r in added["releases"]:
        state = f"refused: {r['refused']}" if r["refused"] else "bound to a library of exactly this version"
        out(f"  {r['release']:<8} {r['path']} (from {r['source'] or '?'}): {state}")
    if not added["releases"]:
        out("  none")
    out("")
    out("Proven against real MIOpen (header: the real miopen.h re-parses to the committed spec byte for byte; abi:")
    out("make abi-check on that header; library: the API and runtime run against that real libMIOpen; every release also")
    out("runs the runtime suite against a stub library generated from its spec):")
    for r in info["releases"]:
        proof = r["proven"]
        kinds = [f"{kind}: {proof[kind]}" for kind in ("header", "abi", "library") if proof.get(kind)]
        out(f"  {r['miopen']:<8} {'; '.join(kinds) or 'stub library only'}")
    out("")
    out("MIOpen's settings (miopen.configure(name=value) before the first call, or the variable; MIOpen reads each "
        "once):")
    width = max((len(r["name"]) for r in info["settings"]), default=0)
    for r in info["settings"]:
        value = "unset (MIOpen's default)" if r["value"] is None else repr(r["value"])
        out(f"  {r['name']:<{width}}  ${r['env']}={value}  [{r['origin']}]")
    out("")
    env = ", ".join(f"${k}='{v}'" if v is not None else f"${k} unset" for k, v in info["environment"].items())
    out(f"Library search ({env}):")
    later = [t for t in info["search"] if t["result"] == "not tried"]
    for t in info["search"]:
        if t["result"] == "not tried":
            continue
        detail = f": {t['detail']}" if t["detail"] else ""
        out(f"  [{t['result']}] {t['path']} ({t['origin']}){detail}")
    if later:
        out(f"  ({len(later)} later candidate(s) not tried)")
    out("")
    lib = info["library"]
    if lib is None:
        out("Library: none found")
        out(f"  {info['error']}")
    else:
        out(f"Library: {lib['path']}")
        if lib["version"]:
            out(f"  version: {lib['version']}")
        else:
            out(f"  version: unknown ({lib['version_error'] or 'it has no miopenGetVersion'})")
        out(f"  backend: {lib['backend']}" + (" (its functions carry the version node MIOPEN_OpenCL_1: handles on "
                                              "cl_command_queues, buffers as cl_mem)" if lib["backend"] == "OpenCL"
                                              else ""))
        sel = info["selection"]
        out("")
        if sel["release"] is None:
            out(f"Selected release: none (policy {sel['policy']})")
            out(f"  refused: {sel['refused']}")
        else:
            out(f"Selected release: {sel['release']} (policy {sel['policy']})")
            for w in sel["warnings"]:
                out(f"  warning: {w}")
    if info["features"]:
        out("")
        out("Features (miopen.has_feature):")
        width = max(len(f["name"]) for f in info["features"])
        for f in info["features"]:
            mark = "yes" if f["available"] else "no "
            why = f"  ({f['why_not']})" if f["why_not"] else ""
            out(f"  {f['name']:<{width}}  {mark}  {', '.join(f['symbols'])}; MIOpen >= {f['minimum']}{why}")
    out("")
    out(f"exit status {status}: " + ("a library was found and bound" if status == EXIT_OK else
                                     "no usable library (none found, or its version refused)"))
    return shown("\n".join(lines))  # a path's bytes that are not UTF-8 as \xNN: printable on any terminal


def _library(text: str) -> str:
    """argparse type of --library: a FIFO, device or directory is refused before the loader opens it
    (a bare name, or a path that does not exist, is left to the search, which reports it)."""
    try:
        mode = os.stat(text).st_mode
    except (OSError, ValueError):
        return text
    if not stat.S_ISREG(mode):
        raise argparse.ArgumentTypeError(f"{text}: not a regular file (a directory, FIFO or device); pass the path "
                                         f"of the library")
    return text


def parser() -> argparse.ArgumentParser:
    """The command line of `python -m miopen`."""
    ap = argparse.ArgumentParser(
        prog="python -m miopen",
        description="Show the MIOpen releases this package has bindings for, the library it finds (and where it "
                    "looked), the release it binds, and the features the library offers.",
        epilog="Exit status: 0 a library was found and bound; 1 none was found, or its version was refused; "
               "2 a usage error.")
    ap.add_argument("--library", metavar="PATH", type=_library, help="use this library instead of searching")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        info, status = report(args.library)
    except Exception as exc:  # never a traceback: say what failed
        info = {"error": f"{type(exc).__name__}: {exc}"}
        status = EXIT_NOT_USABLE
        if not args.json:
            from ._generated._text import shown

            print(shown(f"python -m miopen: unexpected error: {info['error']}"), file=sys.stderr)
            return status
    print(json.dumps(info, indent=2) if args.json else _text(info, status))
    return status


if __name__ == "__main__":
    sys.exit(main())

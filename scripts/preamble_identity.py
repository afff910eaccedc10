"""Every real header x beta on/off x (installed HIP headers, miogen's shims): the spec parsed with the precompiled
preamble (codegen/parse/preamble.py) is byte-identical to the spec parsed without it; prints whether each parse used it.

Usage: python scripts/preamble_identity.py [--headers DIR]   (default $MIOGEN_HEADERS or /tmp/miopen-headers)
The shims run hides the installed HIP headers in a user mount namespace (benchmarks/run_all.py `hide_hip`).
Exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))


def child(headers: Path) -> int:
    from run_all import _committed_headers

    from miogen.parse import preamble
    from miogen.parse.headers import ParseOptions
    from miogen.parse.parser import parse_header
    from miogen.spec.spec_io import dumps
    from miogen.spec.target import load_target

    used: list[bool] = []
    real = preamble.parse

    def spy(*args: object) -> object:
        tu = real(*args)  # type: ignore[arg-type]
        used.append(tu is not None)
        return tu

    preamble.parse = spy  # type: ignore[assignment]
    target = load_target()
    found, _ = _committed_headers(headers)
    differ = 0
    for version, header in sorted(found.items()):
        for beta in (True, False):
            used.clear()
            on = dumps(parse_header(header, target, ParseOptions(beta=beta), version))
            pch = list(used)
            off = dumps(parse_header(header, target, ParseOptions(beta=beta, preamble=False), version))
            differ += on != off
            print(f"  {version:7s} {'beta  ' if beta else 'stable'} {'same' if on == off else 'DIFFERENT'}"
                  f" (preamble used: {', '.join('yes' if u else 'no' for u in pch)})")
    return 1 if differ else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--headers", type=Path, default=Path(os.environ.get("MIOGEN_HEADERS", "/tmp/miopen-headers")))
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.headers)
    from run_all import HIP_DIRS, hide_hip

    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, wrap in (("installed HIP headers", []), ("miogen's shims", hide_hip(Path(tmp)))):
            if name.startswith("installed") and not any(d.is_dir() for d in HIP_DIRS):
                print(f"{name}: none installed, skipped")
                continue
            print(f"{name}:", flush=True)
            cmd = [*wrap, sys.executable, __file__, "--child", "--headers", str(args.headers)]
            failed |= subprocess.run(cmd, cwd=REPO).returncode
    print("identical" if not failed else "DIFFERENT (or failed)")
    return failed


if __name__ == "__main__":
    sys.exit(main())

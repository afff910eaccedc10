"""`make docs`'s site: stage the pages (docs/site/pages.py) and the API reference (docs/site/reference.py) into
OUT/src, then build the HTML site into OUT/html with Sphinx (the configuration: docs/site/conf.py).

Usage: python docs/site/build.py [--out DIR]   (default: build/docs; Sphinx's warnings, mostly docstring
markup, go to OUT/warnings.log)"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import pages  # noqa: E402
import reference  # noqa: E402


def build(out: Path) -> Path:
    """Stage and build; returns the HTML folder. Raises SystemExit with Sphinx's status on a failure."""
    from sphinx.cmd.build import build_main

    src = out / "src"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    shutil.copy(HERE / "index.md", src / "index.md")
    pages.stage(src)
    reference.stage(src)
    html = out / "html"
    warnings = out / "warnings.log"
    status = build_main(["-q", "-j", "auto", "-b", "html", "-c", str(HERE), "-d", str(out / "doctrees"),
                         "-w", str(warnings), str(src), str(html)])
    if status:
        raise SystemExit(f"docs: the Sphinx build failed (status {status}; {warnings})")
    return html


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("build/docs"), help="the output folder (default build/docs)")
    args = parser.parse_args(argv)
    start = time.monotonic()
    html = build(args.out.resolve())
    print(f"docs: the site is in {html}/index.html ({time.monotonic() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

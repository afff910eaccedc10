"""Move a test file into its tier folder (tests/tiers.py): `git mv`, then its relative imports of the tests' shared
modules (tests/helpers.py, tests/conftest.py, tests/real/..., tests/gpu/...) reach them from there. Changes nothing
else, so the branches editing the file still merge through git's rename detection.

    python scripts/move_test.py tests/test_x.py runtime      # git mv into tests/runtime/, then the imports
    python scripts/move_test.py --imports tests/runtime/test_x.py ...   # the imports alone (after a merge)
    python scripts/move_test.py --mentions AGENTS.md docs/*.md ...     # `tests/test_x.py` named where it is now

An import is rewritten only when it stops short of tests/ root and names no module from there (the folder's own
conftest.py aside) but one of tests/ root (`.helpers`, `.conftest`, `.real.client`) or a test file of a tier
folder (`.test_real_miopen_ocl`): running it twice changes nothing.
A path the file derives from its own place (`Path(__file__).parents[1]`) needs one more level by hand.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
sys.path.insert(0, str(REPO))

from tests.tiers import FOLDERS  # noqa: E402

_FROM = re.compile(r"^(\s*from )(\.+)([\w.]*)( import .*)$")


def _exists(package: Path, dotted: str) -> bool:
    """Whether `dotted` names a module or package under the folder `package` ("" : the folder itself)."""
    path = package.joinpath(*dotted.split(".")) if dotted else package
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def fix_imports(path: Path) -> bool:
    """Rewrite the relative imports of `path` that reach nothing from its folder but a module of tests/ root;
    whether the file changed."""
    here = path.resolve().parent
    up = "." * (len(here.relative_to(TESTS).parts) + 1)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    out = []
    for line in lines:
        m = _FROM.match(line.rstrip("\n"))
        if m:
            head, dots, dotted, rest = m.groups()
            base = here.parents[len(dots) - 2] if len(dots) > 1 else here
            named = dotted or rest.removeprefix(" import ").split(",")[0].split(" as ")[0].strip("( ")
            # a folder's own conftest.py only marks its tier: `.conftest` means tests/conftest.py
            local = _exists(base, named) and named.split(".")[0] != "conftest"
            if not local and base != TESTS and _exists(TESTS, named):
                line = f"{head}{up}{dotted}{rest}\n"
            elif not local and dotted.startswith("test_"):  # another test file, moved into its tier folder
                folder = next((f for f in FOLDERS if _exists(TESTS / f, dotted)), None)
                if folder is not None:
                    line = f"{head}{up}{folder.replace('/', '.')}.{dotted}{rest}\n"
        out.append(line)
    if out == lines:
        return False
    path.write_text("".join(out), encoding="utf-8")
    return True


_MENTION = re.compile(r"tests/(test_\w+)\.py")


def fix_mentions(path: Path) -> bool:
    """Rewrite each `tests/test_x.py` that `path` names, where no such file is and one tier folder holds it, to that
    folder's path; whether the file changed."""
    def where(m: re.Match[str]) -> str:
        if (TESTS / f"{m.group(1)}.py").exists():
            return m.group(0)
        found = [f for f in FOLDERS if (TESTS / f / f"{m.group(1)}.py").is_file()]
        return f"tests/{found[0]}/{m.group(1)}.py" if len(found) == 1 else m.group(0)

    text = path.read_text(encoding="utf-8")
    new = _MENTION.sub(where, text)
    if new == text:
        return False
    path.write_text(new, encoding="utf-8")
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--imports", action="store_true", help="rewrite the imports of the files given, move nothing")
    ap.add_argument("--mentions", action="store_true",
                    help="rewrite the tests/test_x.py paths the files given name (docs, scripts), move nothing")
    ap.add_argument("paths", nargs="+", type=Path, help="FILE FOLDER (a folder of tests/tiers.py), or with --imports: FILES")
    args = ap.parse_args()
    if args.imports or args.mentions:
        for path in args.paths:
            if (fix_imports if args.imports else fix_mentions)(path):
                print(f"{path}: {'imports' if args.imports else 'test file paths'} rewritten")
        return 0
    if len(args.paths) != 2 or args.paths[1].as_posix() not in FOLDERS:
        ap.error(f"give FILE FOLDER, FOLDER one of {', '.join(FOLDERS)}")
    src, folder = args.paths
    dest = TESTS / folder / src.name
    if dest.exists():
        ap.error(f"{dest.relative_to(REPO)} exists")
    subprocess.run(["git", "mv", str(src), str(dest)], check=True, cwd=REPO)
    fix_imports(dest)
    print(f"moved {src} to {dest.relative_to(REPO)} (tier {FOLDERS[folder.as_posix()]})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The contributor pages stay true: every repository path they name in backquotes exists, every module of
codegen/ and runtime/ is placed in docs/architecture.md's map, every make target is documented, and every
relative link resolves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ..helpers import REPO

#: the pages whose backquoted paths and links are checked
PAGES = ("README.md", "AGENTS.md", "docs/architecture.md", "docs/internals.md", "docs/speed.md")
ARCHITECTURE = REPO / "docs" / "architecture.md"
#: placeholders a path may hold, matched as a glob: `specs/<target>/target.yaml`, `generated/vX_Y_Z/`, `X.Y.Z.yaml`
_PLACEHOLDERS = re.compile(r"<[^>/]+>|X_Y_Z|X\.Y\.Z")


def _prose(text: str) -> str:
    """`text` without its fenced code blocks (commands and output, not claims about paths)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)


def _top_level() -> set[str]:
    return {p.name for p in REPO.iterdir() if not p.name.startswith(".") and p.name != "__pycache__"}


def repo_paths(text: str, top: set[str]) -> list[str]:
    """The backquoted spans of `text` (outside code blocks) that name a path inside the repository: one word
    whose first component is a top-level entry of the checkout."""
    out = []
    for span in re.findall(r"`([^`\n]+)`", _prose(text)):
        span = span.strip()
        if " " in span or span.split("/", 1)[0] not in top:
            continue
        out.append(span.rstrip(":,;"))
    return out


def missing_paths(text: str, root: Path, top: set[str]) -> list[str]:
    """The repository paths `text` names that do not exist under `root` (placeholders and `*` match as globs)."""
    missing = []
    for path in repo_paths(text, top):
        pattern = _PLACEHOLDERS.sub("*", path).rstrip("/")
        found = any(root.glob(pattern)) if "*" in pattern else (root / pattern).exists()
        if not found:
            missing.append(path)
    return missing


@pytest.mark.parametrize("page", PAGES)
def test_backquoted_paths_exist(page: str) -> None:
    text = (REPO / page).read_text(encoding="utf-8")
    assert repo_paths(text, _top_level()), f"{page}: no repository path found (is the extraction broken?)"
    assert missing_paths(text, REPO, _top_level()) == [], f"{page} names paths that do not exist"


def test_path_check_catches_a_missing_path(tmp_path: Path) -> None:
    """The check is not vacuous: a missing file, a folder, a placeholder matching nothing are caught; code blocks,
    commands with spaces and paths outside the checkout are not paths."""
    (tmp_path / "codegen" / "sub").mkdir(parents=True)
    (tmp_path / "codegen" / "a.py").write_text("")
    (tmp_path / "specs" / "miopen").mkdir(parents=True)
    (tmp_path / "specs" / "miopen" / "3.3.0.yaml").write_text("")
    top = {"codegen", "specs"}
    text = ("`codegen/a.py` `codegen/sub/` `codegen/b.py` `codegen/gone/` `specs/miopen/<version>.yaml` "
            "`specs/cudnn/X.Y.Z.yaml` `python -m codegen x` `miogen/targets/` `.venv/`\n"
            "```sh\n`codegen/in_a_block.py`\n```\n")
    assert missing_paths(text, tmp_path, top) == ["codegen/b.py", "codegen/gone/", "specs/cudnn/X.Y.Z.yaml"]


def _modules() -> list[str]:
    return sorted(p.relative_to(REPO).as_posix() for folder in ("codegen", "runtime")
                  for p in (REPO / folder).rglob("*.py")
                  if "templates" not in p.parts and "__pycache__" not in p.parts)


def test_every_module_is_in_the_architecture_map() -> None:
    """A new module of codegen/ or runtime/ must be placed in docs/architecture.md (named by its path)."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    named = set(repo_paths(text, _top_level()))
    modules = _modules()
    assert len(modules) > 50
    assert [m for m in modules if m not in named] == []


def _phony() -> list[str]:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    line = re.search(r"^\.PHONY:(.*)$", makefile, re.M)
    assert line is not None
    return line.group(1).split()


def test_every_make_target_is_documented() -> None:
    """Each .PHONY target (but FORCE, a prerequisite no one runs) appears as `make <target>` in AGENTS.md or the
    README, and each target the pages name exists."""
    docs = "\n".join((REPO / page).read_text(encoding="utf-8") for page in ("AGENTS.md", "README.md"))
    targets = [t for t in _phony() if t != "FORCE"]
    assert len(targets) > 10
    assert [t for t in targets if not re.search(rf"`make {re.escape(t)}(?![\w-])", docs)] == []
    named = set(re.findall(r"`make ([a-z][\w-]*)", "\n".join(
        (REPO / page).read_text(encoding="utf-8") for page in PAGES)))
    assert named - set(targets) == set()


@pytest.mark.parametrize("page", PAGES)
def test_relative_links_resolve(page: str) -> None:
    path = REPO / page
    links = re.findall(r"\]\(([^)\s]+)\)", _prose(path.read_text(encoding="utf-8")))
    local = [link.split("#", 1)[0] for link in links if not re.match(r"[a-z]+:", link) and not link.startswith("#")]
    assert [link for link in local if link and not (path.parent / link).exists()] == []


def test_no_page_quotes_a_count_of_tests_or_files_that_nothing_checks() -> None:
    """Counts of the project's own tests, test files, modules or files go stale (docs/real-miopen.md said "17 tests"
    of a file that had 35): the pages name the file instead. A release's function counts are facts of that release
    (its spec), not of the project, and stay."""
    import re

    pattern = re.compile(r"(?<![\w.])\d+ (?:tests?|test files|test functions|modules|source files)\b")
    pages = [REPO / "README.md", REPO / "AGENTS.md", *sorted((REPO / "docs").glob("*.md"))]
    found = [f"{p.relative_to(REPO)}:{n}: {m.group(0)}" for p in pages
             for n, line in enumerate(p.read_text().splitlines(), 1) for m in pattern.finditer(line)]
    assert not found, found

"""The Markdown pages of the site: the README (the user's guide), AGENTS.md and every page of docs/, staged with
their links rewritten to the staged names (a link to a repository file that is not a page keeps its text)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: repository page -> its name in the site (the pages of docs/ keep theirs)
RENAMED = {"README.md": "guide.md", "AGENTS.md": "contributing.md"}
_LINK = re.compile(r"(?<!!)\[([^\]\n]*)\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def sources(repo: Path = REPO) -> dict[Path, str]:
    """Each page's repository path -> its staged name."""
    pages = {repo / name: staged for name, staged in RENAMED.items()}
    pages.update({p: p.name for p in sorted((repo / "docs").glob("*.md"))})
    return pages


def rewrite_links(text: str, source: Path, pages: dict[Path, str]) -> str:
    """`text` (the page at `source`) with each relative link to a page pointing at its staged name; a relative link
    to anything else becomes its text (the site holds no repository files). Code blocks are left alone."""

    def link(m: re.Match[str]) -> str:
        label, target = m.group(1), m.group(2)
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            return m.group(0)
        path, _, anchor = target.partition("#")
        staged = pages.get((source.parent / path).resolve())
        if staged is None:
            return label
        return f"[{label}]({staged}{'#' + anchor if anchor else ''})"

    out, pos = [], 0
    for fence in _FENCE.finditer(text):
        out.append(_LINK.sub(link, text[pos:fence.start()]))
        out.append(fence.group(0))
        pos = fence.end()
    out.append(_LINK.sub(link, text[pos:]))
    return "".join(out)


def stage(src: Path, repo: Path = REPO) -> list[str]:
    """Write every page into `src`; returns the staged names."""
    pages = {path.resolve(): name for path, name in sources(repo).items()}
    for path, name in pages.items():
        (src / name).write_text(rewrite_links(path.read_text(encoding="utf-8"), path, pages), encoding="utf-8")
    return sorted(pages.values())

"""The documentation site (`make docs`): the link rewriting and release ranges it is built from, then (marked
`browser`: `make docs-test`, CI) the built site in a real headless Chromium: pages load, search finds
`convolution_forward`, no internal link is broken, each typed-API function says its releases, and a screenshot
has a body."""

from __future__ import annotations

import functools
import html.parser
import http.server
import os
import shutil
import struct
import subprocess
import sys
import threading
import urllib.parse
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..helpers import REPO

sys.path.insert(0, str(REPO / "docs" / "site"))
import pages  # noqa: E402
import reference  # noqa: E402

from miogen.spec.releases import Releases, Version  # noqa: E402

#: set by CI (.ci/run): a missing Chromium fails the browser tests instead of skipping them
REQUIRE_ENV = "MIOGEN_REQUIRE_BROWSER"


def test_links_point_at_staged_pages(tmp_path: Path) -> None:
    """A link to a page becomes its staged name (anchors kept); a link to a repository file that is not a page keeps
    only its text; external links, in-page anchors and code blocks are left alone."""
    (tmp_path / "docs").mkdir()
    for name in ("README.md", "AGENTS.md", "docs/a.md", "docs/b.md", "setup.py"):
        (tmp_path / name).write_text("x")
    staged = {p.resolve(): n for p, n in pages.sources(tmp_path).items()}
    assert sorted(staged.values()) == ["a.md", "b.md", "contributing.md", "guide.md"]
    text = ("[g](../README.md) [c](../AGENTS.md#rules) [b](b.md#x-y) [s](../setup.py) [w](https://e.org/a.md) "
            "[h](#here)\n```\n[k](../README.md)\n```\n")
    assert pages.rewrite_links(text, tmp_path / "docs" / "a.md", staged) == (
        "[g](guide.md) [c](contributing.md#rules) [b](b.md#x-y) s [w](https://e.org/a.md) [h](#here)\n"
        "```\n[k](../README.md)\n```\n")
    assert pages.rewrite_links("[a](docs/a.md)", tmp_path / "README.md", staged) == "[a](a.md)"


def test_release_ranges_are_runs_of_committed_releases() -> None:
    every = [Version(2, 15, 0), Version(2, 16, 0), Version(3, 0, 0), Version(3, 1, 0), Version(3, 5, 2)]
    assert reference.ranges(every, every) == "2.15.0 – 3.5.2"
    assert reference.ranges([every[0], every[2], every[3]], every) == "2.15.0, 3.0.0 – 3.1.0"
    assert reference.ranges([every[4]], every) == "3.5.2"


def test_reference_covers_every_function_of_the_committed_specs() -> None:
    """Each function of each committed spec that the typed API has is on a page, with exactly the releases whose
    specs declare it."""
    from miogen.spec import spec_io

    found, every = reference.entries()
    releases = Releases.of(reference.SPECS)
    assert every == releases.versions
    by_c = {e.c: e for e in found}
    for version, path in releases.paths.items():
        for f in spec_io.load(path).functions:
            if f.name in by_c:
                assert version in by_c[f.name].releases, (f.name, version)
    for e in found:
        assert e.releases and all(f"- name: {e.c}\n" in releases.paths[v].read_text() for v in e.releases)
    assert "miopenConvolutionForward" in by_c and len(by_c) > 250


# ---- the built site, in a real browser -------------------------------------------------------------------------


def _chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if path is None:
        if os.environ.get(REQUIRE_ENV):
            pytest.fail(f"{REQUIRE_ENV} is set but no chromium is on PATH (Debian: apt-get install chromium)")
        pytest.skip("no chromium on PATH (Debian: apt-get install chromium)")
    return path


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built from this checkout by `docs/site/build.py` (as `make docs` builds it)."""
    _chromium()
    out = tmp_path_factory.mktemp("site")
    r = subprocess.run([sys.executable, str(REPO / "docs" / "site" / "build.py"), "--out", str(out)],
                       capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stdout + r.stderr
    return out / "html"


@pytest.fixture(scope="module")
def server(site: Path) -> Iterator[str]:
    """The site served over HTTP on a free local port (as a user would browse it)."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def _browser(*args: str, tmp: Path) -> str:
    """Run headless Chromium (its own profile in `tmp`); returns its standard output. A DOM is dumped once the page's
    scripts had 15 s of virtual time (search runs then); a screenshot is taken without it (it would draw a blank)."""
    budget = [] if any(a.startswith("--screenshot") for a in args) else ["--virtual-time-budget=15000"]
    cmd = [_chromium(), "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
           f"--user-data-dir={tmp / 'profile'}", *budget, *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


class _Page(html.parser.HTMLParser):
    """The links, ids and text of one HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()
        self.text: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(str(a["id"]))
        if tag == "a" and a.get("name"):
            self.ids.add(str(a["name"]))
        for key in ("href", "src"):
            if a.get(key) and tag in ("a", "link", "script", "img"):
                self.links.append(str(a[key]))
        if tag in ("script", "style"):
            self._skip += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip and data.strip():
            self.text.append(data.strip())


def _parse(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    return page


#: the pages a reader reaches first, and the coverage tables (stage names; their HTML is <name>.html)
_PAGES = ("index", "guide", "reference/index", "reference/typed-convolutions", "reference/miopen-ops-conv",
          "real-miopen", "strided-views", "api-changes")


@pytest.mark.browser
@pytest.mark.parametrize("name", _PAGES)
def test_page_loads_in_the_browser(name: str, server: str, tmp_path: Path) -> None:
    """Each page loads in Chromium and renders a body with its title and text (the DOM after its scripts ran)."""
    dom = _parse(_browser("--dump-dom", server + name + ".html", tmp=tmp_path))
    words = " ".join(dom.text)
    assert len(words) > 500, words[:500]
    assert "404" not in words[:200]


@pytest.mark.browser
def test_search_finds_convolution_forward(server: str, tmp_path: Path) -> None:
    """The site's search (Sphinx's index, run by the page's JavaScript) lists `convolution_forward`'s entry first."""
    dom = _browser("--dump-dom", server + "search.html?q=convolution_forward", tmp=tmp_path)
    page = _parse(dom)
    results = [link for link in page.links if "#miopen." in link]
    assert results, " ".join(page.text)[-2000:]
    assert results[0].endswith("typed-convolutions.html#miopen.convolution_forward"), results[:5]


@pytest.mark.browser
def test_no_internal_link_is_broken(site: Path) -> None:
    """Every relative link of every page (href and src) names a file of the site, and its #anchor an id there."""
    parsed = {p: _parse(p.read_text(encoding="utf-8")) for p in site.rglob("*.html")}
    assert len(parsed) > 40
    broken = []
    for path, page in parsed.items():
        for link in page.links:
            url = urllib.parse.urlsplit(link)
            if url.scheme or url.netloc or link.startswith("mailto:"):
                continue
            target = (path.parent / urllib.parse.unquote(url.path)).resolve() if url.path else path
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                broken.append(f"{path.relative_to(site)}: {link}")
            elif url.fragment and target.suffix == ".html":
                other = parsed.get(target) or _parse(target.read_text(encoding="utf-8"))
                if urllib.parse.unquote(url.fragment) not in other.ids:
                    broken.append(f"{path.relative_to(site)}: {link} (no such anchor)")
    assert broken == []


@pytest.mark.browser
def test_each_typed_function_says_its_releases(site: Path) -> None:
    """Every function entry of the typed API's pages carries its releases line, and the coverage tables are pages."""
    found, every = reference.entries()
    text = "\n".join(p.read_text(encoding="utf-8") for p in (site / "reference").glob("typed-*.html"))
    for e in found:
        assert f'id="miopen.{e.py}"' in text, e.py
    assert text.count("Releases:") == len(found)
    assert "miopenConvolutionForward" in (site / "real-miopen.html").read_text(encoding="utf-8")
    assert "channels-last" in (site / "strided-views.html").read_text(encoding="utf-8")


def _png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and the unfiltered rows of an 8-bit RGB or RGBA PNG (the screenshot's format)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    height = depth = colour = 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", chunk[:10])
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    assert depth == 8 and colour in (2, 6), (depth, colour)
    bpp = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, rows


@pytest.mark.browser
def test_screenshot_has_a_body(server: str, tmp_path: Path) -> None:
    """A screenshot of the convolutions page is a real picture: a PNG of the window's size, tens of kilobytes,
    whose pixels are far from uniform (text on a background, not a blank page); kept as build/docs/screenshot.png."""
    shot = tmp_path / "page.png"
    _browser("--window-size=1280,1000", f"--screenshot={shot}",
             server + "reference/typed-convolutions.html#miopen.convolution_forward", tmp=tmp_path)
    data = shot.read_bytes()
    assert len(data) > 20_000, len(data)
    width, height, rows = _png_pixels(data)
    assert (width, height) == (1280, 1000)
    bpp = len(rows[0]) // width
    pixels = [row[i:i + 3] for row in rows[::4] for i in range(0, len(row), 4 * bpp)]
    background = max(set(pixels), key=pixels.count)
    assert len(set(pixels)) > 50
    assert 0.02 < sum(p != background for p in pixels) / len(pixels) < 0.9
    (REPO / "build" / "docs").mkdir(parents=True, exist_ok=True)
    (REPO / "build" / "docs" / "screenshot.png").write_bytes(data)  # kept for a look (build/ is git-ignored)


def test_every_page_is_in_the_navigation() -> None:
    """Each page the site stages (the README, AGENTS.md, every docs/*.md) is in a toctree of docs/site/index.md: a new
    page in docs/ cannot be built yet left out of the site's navigation."""
    text = (REPO / "docs" / "site" / "index.md").read_text()
    listed = {line.strip() for block in text.split("```{toctree}")[1:] for line in block.split("```")[0].splitlines()
              if line.strip() and not line.strip().startswith(":")}
    staged = {Path(name).stem for name in pages.sources().values()}
    assert staged - listed == set(), f"pages in no toctree of docs/site/index.md: {sorted(staged - listed)}"

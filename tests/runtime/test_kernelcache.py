"""The compile notice: one line, once per process, when the first pooled handle is made and MIOpen's kernel cache
holds no kernel database; silenced by MIOGEN_COMPILE_NOTICE=0 (a bad value is an error naming the variable)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from ..conftest import Libs


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A process that has not noticed yet, its kernel cache an empty folder of the test's own."""
    from miopen import kernelcache

    monkeypatch.setattr(kernelcache, "_done", [False])
    monkeypatch.delenv(kernelcache.NOTICE_ENV, raising=False)
    cache = tmp_path / "kernels"
    cache.mkdir()
    monkeypatch.setenv("MIOPEN_CUSTOM_CACHE_DIR", str(cache))
    return cache


@pytest.mark.parametrize("layout", ["missing", "empty", "other files", "too deep"])
def test_empty_caches(layout: str, tmp_path: Path) -> None:
    from miopen.kernelcache import is_empty

    root = tmp_path / "cache"
    if layout != "missing":
        root.mkdir()
    if layout == "other files":
        (root / "3.5.2").mkdir()
        (root / "3.5.2" / "notes.txt").write_text("x")
        (root / "a.kdb.tmp").write_text("x")
    if layout == "too deep":
        deep = root / "a" / "b" / "c"
        deep.mkdir(parents=True)
        (deep / "gfx90a.ukdb").write_text("x")
    assert is_empty(root)


@pytest.mark.parametrize("where", ["gfx90a.ukdb", "2.17.0.abc/gfx90a.kdb", "x/y/z.ukdb"])
def test_a_kernel_database_fills_the_cache(where: str, tmp_path: Path) -> None:
    from miopen.kernelcache import is_empty

    path = tmp_path / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"SQLite format 3\0")
    assert not is_empty(tmp_path)


def test_the_cache_folder_follows_miopen(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from miopen.kernelcache import cache_dir

    assert cache_dir({"MIOPEN_CUSTOM_CACHE_DIR": str(tmp_path)}) == tmp_path
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache_dir({}) == tmp_path / ".cache" / "miopen"


def test_the_first_pooled_handle_says_it_once(libs: Libs, fresh: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The first handle the pool makes logs the notice (naming the cache folder and the switch); later handles of
    the process, on other streams and threads, do not."""
    import threading

    from miopen import handles

    handles.handle_pool().close()
    with caplog.at_level(logging.WARNING, logger="miopen"):
        handles.inline_miopen_handle(stream=0x100)
        handles.inline_miopen_handle(stream=0x200)
        t = threading.Thread(target=handles.inline_miopen_handle)
        t.start()
        t.join()
    notes = [r for r in caplog.records if "kernel cache" in r.getMessage()]
    assert len(notes) == 1 and notes[0].levelno == logging.WARNING
    text = notes[0].getMessage()
    assert str(fresh) in text and "MIOGEN_COMPILE_NOTICE=0" in text and "\n" not in text


@pytest.mark.parametrize("value", ["0", "false", "NO"])
def test_the_switch_silences_it(libs: Libs, fresh: Path, value: str, monkeypatch: pytest.MonkeyPatch,
                                caplog: pytest.LogCaptureFixture) -> None:
    from miopen import handles, kernelcache

    monkeypatch.setenv(kernelcache.NOTICE_ENV, value)
    handles.handle_pool().close()
    with caplog.at_level(logging.WARNING, logger="miopen"):
        handles.inline_miopen_handle(stream=0x300)
    assert not [r for r in caplog.records if "kernel cache" in r.getMessage()]


def test_a_warm_cache_says_nothing(fresh: Path, caplog: pytest.LogCaptureFixture) -> None:
    from miopen import kernelcache

    (fresh / "2.17.0").mkdir()
    (fresh / "2.17.0" / "gfx1030.ukdb").write_bytes(b"")
    with caplog.at_level(logging.WARNING, logger="miopen"):
        assert kernelcache.notice_once("HIP") is False
    assert not caplog.records


def test_a_bad_switch_names_the_variable(fresh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from miopen import kernelcache
    from miopen.envflags import EnvFlagError

    monkeypatch.setenv(kernelcache.NOTICE_ENV, "maybe")
    with pytest.raises(EnvFlagError, match=kernelcache.NOTICE_ENV):
        kernelcache.notice_once("OpenCL")


def test_opencl_says_how_long_on_a_cpu(fresh: Path, caplog: pytest.LogCaptureFixture) -> None:
    from miopen import kernelcache

    with caplog.at_level(logging.WARNING, logger="miopen"):
        assert kernelcache.notice_once("OpenCL") is True
        assert kernelcache.notice_once("OpenCL") is False
    assert len(caplog.records) == 1 and "minutes" in caplog.records[0].getMessage()

"""Files miogen reads and writes.

Paths from the command line are checked (by `os.stat`, before anything opens them) with the argparse
types below: a FIFO or a device would block a read or never end it. Outputs are all or nothing: a file
is replaced in one step (`write_file`); a directory is built beside itself and swapped in (`write_tree`),
and a swap cut short by a crash is finished on the next run. While a command runs (`interrupts`),
SIGTERM and SIGHUP interrupt it like SIGINT, so a write in progress rolls back.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from types import FrameType

from .errors import CodegenError, shown

# --------------------------------------------------------------------------- command-line paths


def _what(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _mode(text: str) -> int | None:
    """The path's file type bits (symlinks followed); None when absent (the command reports that itself)."""
    try:
        return os.stat(text).st_mode
    except (OSError, ValueError):
        return None


def in_file(text: str) -> Path:
    """argparse type: a file to read. A directory, FIFO, device or socket is refused before it is opened."""
    mode = _mode(text)
    if mode is not None and not stat.S_ISREG(mode):
        raise argparse.ArgumentTypeError(f"{text}: {_what(mode)}, not a regular file; pass the path of a file")
    return Path(text)


def in_dir(text: str) -> Path:
    """argparse type: a directory to read."""
    mode = _mode(text)
    if mode is not None and not stat.S_ISDIR(mode):
        raise argparse.ArgumentTypeError(f"{text}: {_what(mode) if not stat.S_ISREG(mode) else 'a file'}, "
                                          f"not a directory; pass a directory")
    return Path(text)


def in_path(text: str) -> Path:
    """argparse type: a regular file or a directory."""
    mode = _mode(text)
    if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise argparse.ArgumentTypeError(f"{text}: {_what(mode)}; pass a regular file or a directory")
    return Path(text)


def out_file(text: str) -> str:
    """argparse type: a file to write, or a directory to write into (one that exists, or a path ending in
    /): see `into`. Kept as text, since Path drops the trailing slash."""
    mode = _mode(text)
    if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise argparse.ArgumentTypeError(f"{text}: {_what(mode)}; pass a regular file, or a directory to write into")
    return text


def out_dir(text: str) -> Path:
    """argparse type: a directory to write (created when absent)."""
    mode = _mode(text)
    if mode is not None and not stat.S_ISDIR(mode):
        raise argparse.ArgumentTypeError(f"{text}: exists and is not a directory "
                                          f"({'a file' if stat.S_ISREG(mode) else _what(mode)})")
    return Path(text)


#: every argparse type of a path: a path option names one of these (tests/codegen/test_cli.py holds every option to it)
PATH_TYPES = (in_file, in_dir, in_path, out_file, out_dir)


def into(output: str | Path, name: str) -> Path:
    """Where an `out_file` option writes: `output` itself, or `output/name` when it is an existing
    directory or ends in a slash (which then means "into this directory")."""
    text = os.fspath(output)
    if text.endswith(("/", os.sep)) or os.path.isdir(text):
        return Path(text) / name
    return Path(text)


def _same(a: str, b: str) -> bool:
    """Whether two paths name one file or directory: the same real path, or (hard links) the same inode."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def _within(inner: str, outer: str) -> bool:
    """Whether `inner` lies inside the directory `outer` (real paths)."""
    outer_real = os.path.realpath(outer)
    return os.path.realpath(inner).startswith(outer_real.rstrip(os.sep) + os.sep)


def not_an_input(output: str | Path, inputs: list[tuple[str, Path | None]], tree: bool = False) -> None:
    """Refuse to write `output` (a file, or a directory tree where `tree`) over one of the command's inputs (each
    named by its option): the same file or directory (a symlink or hard link to it too), an output directory that
    holds an input, or an output file that exists inside a directory read as a whole."""
    out = os.fspath(output)
    for option, given in inputs:
        if given is None:
            continue
        path = os.fspath(given)
        if not os.path.lexists(path):
            continue
        if _same(out, path) or (tree and _within(path, out)) or (
                not tree and os.path.isdir(path) and os.path.lexists(out) and _within(out, path)):
            what = ("is" if _same(out, path) else "holds" if tree else "lies inside")
            raise CodegenError(f"{shown(out)}: the output {what} {shown(path)} ({option}), an input of this command; "
                               f"refusing to write over an input: choose another output path")


# --------------------------------------------------------------------------- signals


class Interrupted(KeyboardInterrupt):
    """SIGINT, SIGTERM or SIGHUP; `output` is the file or directory whose write it rolled back."""

    def __init__(self, signum: int, output: Path | None = None) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.output = output


#: the signals that end a command early; each one rolls back what it was writing (exit status 128 + its number)
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _raise(signum: int, frame: FrameType | None) -> None:
    raise Interrupted(signum)


@contextlib.contextmanager
def interrupts() -> Iterator[None]:
    """While the block runs, SIGINT, SIGTERM and SIGHUP raise `Interrupted` (a KeyboardInterrupt), so
    every `finally` and rollback runs; the earlier handlers come back afterwards. Only the main thread
    can install handlers: elsewhere the block runs as is."""
    try:
        saved = {sig: signal.signal(sig, _raise) for sig in SIGNALS}
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def _held() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP wait until the block is over (it is never cut in half)."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _test_pause(index: int, name: str) -> None:
    """Test hook: with MIOGEN_TEST_PAUSE=K:FIFO, before its K-th output file a write tells FIFO the
    file's name and waits for a signal (tests interrupt a write at a chosen file without sleeping)."""
    hook = os.environ.get("MIOGEN_TEST_PAUSE")
    if hook:
        k, _, fifo = hook.partition(":")
        if k == str(index):
            with open(fifo, "w", encoding="utf-8") as fh:
                fh.write(name + "\n")
            while True:
                signal.pause()


def _umask() -> int:
    mask = os.umask(0o22)
    os.umask(mask)
    return mask


# --------------------------------------------------------------------------- filesystem steps
# Every change a write makes goes through these four (tests make each one fail in turn).


def _put(path: Path, data: bytes) -> None:
    with open(path, "xb") as fh:
        fh.write(data)


def _link(src: Path, dst: Path) -> None:
    """`dst` as a second name of `src` (a symlink stays a symlink), or a copy where links are refused."""
    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError:
        if src.is_symlink():
            os.symlink(os.readlink(src), dst)
        elif src.is_file():
            import shutil  # only here: see _rmtree

            shutil.copy2(src, dst)
        else:
            raise


def _rmtree(path: Path, ignore_errors: bool = False) -> None:
    """`shutil.rmtree`; shutil is imported by the directory-tree writes only (with bz2, lzma and zlib it costs a
    parse, which writes one file, a few milliseconds)."""
    import shutil

    shutil.rmtree(path, ignore_errors=ignore_errors)


def _mkdir(path: Path, mode: int | None) -> None:
    os.mkdir(path)
    if mode is not None:
        os.chmod(path, stat.S_IMODE(mode))


def _rename(src: Path, dst: Path) -> None:
    os.rename(src, dst)


def _failed(exc: OSError, path: Path, rest: str) -> CodegenError:
    return CodegenError(f"{path}: {exc.strerror or exc}; {rest}")


# --------------------------------------------------------------------------- one file


def write_file(path: Path, text: str) -> None:
    """Replace `path` (a symlink: the file it names) with `text` in one step; unchanged, it is left alone.
    A failure or an interrupt leaves it as it was, with no temp file beside it."""
    real = Path(os.path.realpath(path))
    mode = _mode(str(real))
    if mode is not None and not stat.S_ISREG(mode):
        raise CodegenError(f"{path}: {_what(mode)}, not a regular file; refusing to write there")
    data = text.encode("utf-8")
    if mode is not None and real.stat().st_size == len(data) and real.read_bytes() == data:
        return
    rest = f"{path} is as it was" if mode is not None else f"{path} was not written"
    # a name of its own beside the file (the pid and 48 random bits), created by `_put` only where none is
    tmp = real.parent / f".{real.name}.{os.getpid()}-{os.urandom(6).hex()}.miogen-tmp"
    try:
        real.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _failed(exc, path, rest) from None
    foreign = False
    try:
        _test_pause(1, str(path))
        try:
            _put(tmp, data)
        except FileExistsError:
            foreign = True  # another writer's file of that name: left alone
            raise
        os.chmod(tmp, stat.S_IMODE(real.stat().st_mode) if mode is not None else 0o666 & ~_umask())
        _rename(tmp, real)
    except OSError as exc:
        raise _failed(exc, path, rest) from None
    except KeyboardInterrupt as exc:
        raise Interrupted(getattr(exc, "signum", signal.SIGINT), path) from None
    finally:
        if not foreign:
            with _held():
                tmp.unlink(missing_ok=True)


# --------------------------------------------------------------------------- a directory tree

#: the file `write_tree` keeps in an output directory: one relative path per line, every file it wrote there
OUTPUT_MARKER = ".miogen-output"
_MARKER_HEAD = ("# Written by `miogen render`: the files below are its output in this directory.\n"
                "# A later render replaces them and deletes only those it no longer writes; it refuses a\n"
                "# non-empty directory without this file (unless everything in it is earlier miogen output).\n")
_MAX_MARKER_BYTES = 1 << 20

#: a plain name of an output path (compiled at its first use, re keeps it: a parse writes no output directory)
_SAFE_PART = r"[A-Za-z0-9_+-][A-Za-z0-9_.+-]*"
_BANNER_START = "# Generated by miogen "


def _relative(name: str) -> PurePosixPath:
    """`name` as a safe relative path inside an output directory (or a CodegenError)."""
    rel = PurePosixPath(name)
    if (not name or rel.is_absolute() or name != str(rel) or any(not re.fullmatch(_SAFE_PART, p, re.ASCII) for p in rel.parts)
            or name == OUTPUT_MARKER):
        raise CodegenError(f"refusing to write {name!r}: output files are relative paths of plain names "
                           f"(ASCII letters, digits and _.+-)")
    return rel


def _read_marker(marker: Path) -> list[PurePosixPath]:
    if marker.is_symlink() or not marker.is_file():
        raise CodegenError(f"{marker}: not a regular file; refusing to use this directory")
    with marker.open("rb") as fh:
        data = fh.read(_MAX_MARKER_BYTES + 1)
    try:
        text = data.decode("utf-8")
        if len(data) > _MAX_MARKER_BYTES:
            raise ValueError("too large")
        return [_relative(line) for line in text.splitlines() if line and not line.startswith("#")]
    except (ValueError, CodegenError):
        raise CodegenError(f"{marker}: damaged (not a list of files miogen wrote); refusing to touch this directory. "
                           f"Render into a new directory, or delete the marker once you know what the directory "
                           f"holds") from None


def _earlier_output(out_dir: Path) -> list[PurePosixPath] | None:
    """The files of a directory that holds nothing but files an earlier miogen wrote (banner first, or
    an empty py.typed), and __pycache__; None when anything else is there."""
    found: list[PurePosixPath] = []
    for entry in sorted(out_dir.iterdir()):
        if entry.name == "__pycache__" and entry.is_dir() and not entry.is_symlink():
            continue
        if entry.is_dir() and not entry.is_symlink() and re.fullmatch(_SAFE_PART, entry.name, re.ASCII):
            inner = _earlier_output(entry)  # a release's sub-package
            if inner is None:
                return None
            found += [PurePosixPath(entry.name) / p for p in inner]
            continue
        if entry.is_symlink() or not entry.is_file() or not re.fullmatch(_SAFE_PART, entry.name, re.ASCII):
            return None
        with entry.open("rb") as fh:
            head = fh.read(len(_BANNER_START))
        if not (head.decode("utf-8", "replace") == _BANNER_START or (entry.name == "py.typed" and not head)):
            return None
        found.append(PurePosixPath(entry.name))
    return found


def _owned(real: Path, shown: Path) -> list[PurePosixPath]:
    """The files of `real` an earlier render wrote; a refusal when it holds anything else and no marker."""
    if not real.is_dir():
        return []
    marker = real / OUTPUT_MARKER
    if marker.exists() or marker.is_symlink():
        return _read_marker(marker)
    if not any(True for _ in real.iterdir()):
        return []
    earlier = _earlier_output(real)
    if earlier is None:
        raise CodegenError(
            f"{shown}: not empty and not written by miogen render (no {OUTPUT_MARKER} in it); refusing to "
            f"write there, since a render replaces and deletes files. Choose a new or empty directory")
    return earlier


def unchanged(out_dir: Path, files: dict[str, bytes]) -> set[str]:
    """The names among `files` that an earlier render left in `out_dir` with exactly these bytes: listed in its
    marker, a regular file (not a symlink). None of them where the marker is missing or damaged."""
    marker = out_dir / OUTPUT_MARKER
    try:
        listed = {str(rel) for rel in _read_marker(marker)} if marker.is_file() else set()
    except (CodegenError, OSError):
        return set()
    same = set()
    for name in listed.intersection(files):
        path = out_dir / name
        try:
            st = path.lstat()
            if stat.S_ISREG(st.st_mode) and st.st_size == len(files[name]) and path.read_bytes() == files[name]:
                same.add(name)
        except OSError:
            continue
    return same


def _aside(real: Path) -> tuple[Path, Path]:
    """Where the next tree is built, and where the replaced one waits for removal (both beside `real`)."""
    return real.with_name(f".{real.name}.miogen-new"), real.with_name(f".{real.name}.miogen-old")


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """One writer at a time in `directory` (the lock goes with the process, a crash included)."""
    import fcntl  # only the tree writer locks

    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def recover(real: Path) -> None:
    """Finish what a write of `real` cut short by a crash left: the tree it built is dropped, and the
    one it had moved aside is put back (or, once the new tree was in place, removed)."""
    new, old = _aside(real)
    if os.path.lexists(old):
        if os.path.lexists(real):
            _rmtree(old)
        else:
            os.rename(old, real)
    if os.path.lexists(new):
        _rmtree(new)


class _Builder:
    """The next tree of `real`, built in `new`: what is not miogen's carried over (hard links), unchanged
    files of its own linked too (their times kept), the rest written."""

    def __init__(self, real: Path, new: Path, files: dict[PurePosixPath, bytes], owned: set[PurePosixPath]) -> None:
        self.real, self.new, self.files, self.owned = real, new, files, owned
        self.current = PurePosixPath(".")  # what is being written (named by an error)
        self.kept: set[PurePosixPath] = set()

    def build(self) -> None:
        self.current = PurePosixPath(".")
        _mkdir(self.new, self.real.stat().st_mode if self.real.is_dir() else None)
        if self.real.is_dir():
            self._carry(PurePosixPath("."))
        for index, (rel, data) in enumerate(self.files.items(), 1):
            self.current = rel
            _test_pause(index, str(rel))
            parent = self.new
            for part in rel.parts[:-1]:
                parent = parent / part
                if parent.is_symlink() or (os.path.lexists(parent) and not parent.is_dir()):
                    raise CodegenError(f"{self.real.name}/{rel.parent}: a symlink or a file where miogen needs a "
                                       f"directory; refusing")
                if not parent.exists():
                    _mkdir(parent, None)
            if rel not in self.kept:
                _put(self.new / rel, data)
        for stale in sorted(self.owned - set(self.files), reverse=True):  # directories emptied of our files go
            for parent in (self.new / p for p in stale.parents if str(p) != "."):
                if parent.is_dir() and not parent.is_symlink() and not any(parent.iterdir()):
                    parent.rmdir()
        self.current = PurePosixPath(OUTPUT_MARKER)
        _put(self.new / OUTPUT_MARKER, (_MARKER_HEAD + "".join(f"{n}\n" for n in sorted(self.files))).encode())

    def _carry(self, rel: PurePosixPath) -> None:
        for entry in sorted(os.scandir(self.real / rel), key=lambda e: e.name):
            sub = rel / entry.name
            self.current = sub
            src, dst = self.real / sub, self.new / sub
            if sub == PurePosixPath(OUTPUT_MARKER):
                continue
            if sub in self.files:
                if entry.is_symlink() or not entry.is_file():
                    raise CodegenError(f"{self.real.name}/{sub}: a symlink or not a regular file where miogen "
                                       f"writes its output; refusing to write through it")
                if entry.stat().st_size == len(self.files[sub]) and src.read_bytes() == self.files[sub]:
                    _link(src, dst)
                    self.kept.add(sub)
            elif entry.is_dir(follow_symlinks=False):
                _mkdir(dst, entry.stat(follow_symlinks=False).st_mode)
                self._carry(sub)
            elif sub in self.owned and entry.is_file(follow_symlinks=False):
                continue  # ours, and no longer written: dropped
            else:
                _link(src, dst)


def write_tree(files: dict[str, str], out_dir: Path) -> list[Path]:
    """Write `files` (relative path -> text) into `out_dir`, which must be new, empty, or written by
    an earlier render (it lists its files in `.miogen-output`); drop only files that list names and this
    render no longer writes. All or nothing: the new tree is built beside `out_dir` and swapped in, so a
    failure or an interrupt (see `interrupts`) leaves `out_dir` as it was. A refusal says why."""
    rels = {_relative(name): text.encode("utf-8") for name, text in files.items()}
    if os.path.lexists(out_dir) and not out_dir.is_dir():
        raise CodegenError(f"{out_dir}: exists and is not a directory")
    real = Path(os.path.realpath(out_dir))
    try:
        real.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _failed(exc, Path(exc.filename or real.parent), f"{out_dir} was not created") from None
    new, old = _aside(real)
    with _locked(real.parent):
        try:
            with _held():
                recover(real)
        except OSError as exc:
            raise _failed(exc, Path(exc.filename or real),
                          f"an earlier write of {out_dir} was cut short and cannot be undone; see what is in "
                          f"{real.parent} ({new.name}, {old.name})") from None
        existed = real.is_dir()
        rest = f"nothing was written: {out_dir} is as it was" if existed else f"{out_dir} was not created"
        builder = _Builder(real, new, rels, set(_owned(real, out_dir)))
        try:
            builder.build()
        except BaseException as exc:
            with _held():
                _rmtree(new, ignore_errors=True)
            if isinstance(exc, OSError):
                raise _failed(exc, out_dir / builder.current, rest) from None
            if isinstance(exc, KeyboardInterrupt):
                raise Interrupted(getattr(exc, "signum", signal.SIGINT), out_dir) from None
            raise
        _swap(new, old, real, out_dir, existed)
    return [out_dir / rel for rel in rels]


def _swap(new: Path, old: Path, real: Path, shown: Path, existed: bool) -> None:
    """`new` becomes `real` (the earlier `real` is removed): two renames, with no signal between them."""
    cwd = os.getcwd()
    with _held():
        try:
            if existed:
                _rename(real, old)
            try:
                _rename(new, real)
            except BaseException:
                if existed:
                    _rename(old, real)
                raise
        except BaseException as exc:
            _rmtree(new, ignore_errors=True)
            if os.path.lexists(old) and not os.path.lexists(real):
                raise CodegenError(f"{shown}: cannot be put back ({exc}); its earlier content is in {old}, and the "
                                   f"next render puts it back") from None
            if isinstance(exc, OSError):
                raise _failed(exc, shown, f"nothing was written: {shown} is as it was" if existed
                              else f"{shown} was not created") from None
            if isinstance(exc, KeyboardInterrupt):
                raise Interrupted(getattr(exc, "signum", signal.SIGINT), shown) from None
            raise
        _rmtree(old, ignore_errors=True)  # what is left of it (an I/O error): the next write removes it
        if cwd == str(real) or cwd.startswith(str(real) + os.sep):
            with contextlib.suppress(OSError):
                os.chdir(cwd)  # a process inside the directory is inside its new tree

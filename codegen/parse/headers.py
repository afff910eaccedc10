"""Reading a header for clang: the parse options, bounded reads, the include check, clang's arguments."""

from __future__ import annotations

import os
import re
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path

from ..base.record import record
from . import preamble
from ..base import cache
from .clang_env import find_builtin_include
from ..base.errors import HeaderError, shown
from ..spec.target import Target


@record
class ParseOptions:
    """How to run clang over a header."""

    includes: tuple[Path, ...] = ()
    defines: tuple[str, ...] = ()
    beta: bool = False
    language: str = "c++"
    shims: bool = True
    builtin_include: Path | None | bool = True  # True: find it; None/False: none; Path: this one
    preamble: bool = True  # the target's precompiled preamble, where it cannot change the result (codegen/parse/preamble.py)


#: the largest file a parse reads, the header or any file it includes (the largest real one is under 1 MiB)
MAX_HEADER_BYTES = 16 << 20
#: the most files the include graph of one parse may hold
MAX_INCLUDED_FILES = 4096
#: an include directive from its `#` (a pattern led by a literal is searched for fast; that only blanks precede the
#: `#` on its line is checked apart)
_INCLUDE = re.compile(rb'#[ \t]*(include_next|include|import)[ \t]*(<[^>\n]*>|"[^"\n]*")')
#: what the include check allows (its errors say it)
INCLUDE_RULE = "miogen reads only regular files of at most " + f"{MAX_HEADER_BYTES} bytes through #include"


def _read_bounded(path: Path, what: str) -> bytes:
    """The bytes of `path`, a regular file of at most MAX_HEADER_BYTES (checked before it is read: a FIFO or a
    device would block the read or never end it), else a HeaderError starting with `what`."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise HeaderError(f"{what}: {_kind(st.st_mode)}, not a regular file")
        if st.st_size > MAX_HEADER_BYTES:
            raise HeaderError(f"{what}: {st.st_size} bytes, larger than {MAX_HEADER_BYTES}")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced since the stat
                raise HeaderError(f"{what}: not a regular file")
            data = fh.read(MAX_HEADER_BYTES + 1)
    except OSError as exc:
        raise HeaderError(f"{what}: cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_HEADER_BYTES:
        raise HeaderError(f"{what}: larger than {MAX_HEADER_BYTES} bytes")
    return data


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _system_dirs() -> list[str]:
    """The folders clang searches where no option names them (the libclang wheel has no resource folder). The
    multiarch folder is the running Python's: CPython keeps it on `sys.implementation` (what sysconfig's MULTIARCH
    says, without loading sysconfig's build data: ~80 KB of bytecode a parse)."""
    multiarch = getattr(sys.implementation, "_multiarch", None)
    if multiarch is None:
        import sysconfig

        multiarch = sysconfig.get_config_var("MULTIARCH")
    multiarch = multiarch or ""
    dirs = ["/usr/local/include", *([f"/usr/include/{multiarch}"] if multiarch else []), "/usr/include"]
    return [d for d in dirs if os.path.isdir(d)]


def search_path(args: list[str]) -> tuple[list[str], list[str]]:
    """The folders clang's `#include "..."` (after the including file's own) and `#include <...>` search, in
    order, for these arguments: -iquote; then -I, -isystem, the system folders, -idirafter."""
    quote: list[str] = []
    angled: list[str] = []
    after: list[str] = []
    for i, a in enumerate(args[:-1]):
        d = os.path.abspath(args[i + 1])
        if a == "-iquote":
            quote.append(d)
        elif a in ("-I", "-isystem"):
            angled.append(d)
        elif a == "-idirafter":
            after.append(d)
    angled = [*angled, *_system_dirs(), *after]
    return [*quote, *angled], angled


def check_includes(header: Path, data: bytes, args: list[str]) -> None:
    """Refuse a header whose include graph reaches a file that is not a regular file of at most MAX_HEADER_BYTES
    (/dev/zero, a FIFO, a huge file, a symlink to one), or holds more than MAX_INCLUDED_FILES files, before clang
    opens any: each `#include` (active or not: this is a scan of the text, not a preprocessor) is resolved with
    the parse's own search path, as clang does. An include that names a macro, or that no folder holds, is left to
    clang (which reports a missing file itself). The error names the include chain, file:line:col."""
    quote, angled = search_path(args)
    scanned = len(_SCANNED_NEW)
    if not _SCANNED_LOADED:
        _load_scanned()
    seen: set[object] = {_identity(str(header), _stat(str(header)))}
    resolved: set[tuple[bytes, str, str]] = set()
    todo: list[tuple[str, list[_Directive], tuple[_Where, ...]]] = [(str(header), _directives(data), ())]
    while todo:
        path, directives, chain = todo.pop()
        here = os.path.dirname(path)
        for directive, spelled, line, col in directives:
            # what the search below depends on: an include resolved once resolves the same again
            key = (directive, spelled, here if spelled[0] == '"' or directive == b"include_next" else "")
            if key in resolved:
                continue
            resolved.add(key)
            name = spelled[1:-1]
            dirs = ([here] if spelled[0] == '"' else []) + (quote if spelled[0] == '"' else angled)
            if directive == b"include_next" and here in dirs:
                dirs = dirs[dirs.index(here) + 1:]
            found = None
            if os.path.isabs(name):
                found = name if os.path.lexists(name) else None
            else:
                found = next((p for d in dirs if os.path.lexists(p := os.path.join(d, name))), None)
            if found is None:
                continue
            st = _stat(found)
            ident = _identity(found, st)
            if ident in seen:
                continue
            seen.add(ident)
            where = (path, line, col)  # spelled out only for an error (`_where`)
            if len(seen) > MAX_INCLUDED_FILES:
                raise HeaderError(f"{_where(where)}: the include graph holds more than {MAX_INCLUDED_FILES} files; "
                                  f"refusing to parse it" + _chain(chain))

            def what(where: _Where = where, spelled: str = spelled, found: str = found) -> str:
                real = os.path.realpath(found)
                return f"{_where(where)}: #include {spelled} is {shown(found)}" + (
                    f" (-> {shown(real)})" if real != os.path.abspath(found) else "")

            try:
                included = _included(found, st, what)
            except HeaderError as exc:
                raise HeaderError(f"{exc}{_chain(chain)}") from None
            todo.append((found, included, (*chain, where)))
    if len(_SCANNED_NEW) != scanned:
        _store_scanned()


#: an include directive of a file: (directive, the name as spelled with its <> or "", line, column of the name)
_Directive = tuple[bytes, str, int, int]
#: where an include directive is: (the including file, line, column)
_Where = tuple[str, int, int]
#: the directives of each file a check read, by the path it was found at, with the stat they are of: what the next
#: check finds of a file whose stat is the same (the system headers of every parse), in this process and, through
#: the per-user cache, in the next
_SCANNED: dict[str, tuple[tuple[int, ...], list[_Directive]]] = {}
_SCANNED_MAX = 8192
#: the paths this process scanned (what `_store_scanned` adds to the per-user cache's entry)
_SCANNED_NEW: set[str] = set()
_SCANNED_LOADED: list[bool] = []
#: the per-user cache's folder and entry of the directives
_STORE = ("includes", "include directives")


def _load_scanned() -> None:
    """`_SCANNED` from the per-user cache (once a process; a missing or damaged entry is a miss)."""
    _SCANNED_LOADED.append(True)
    folder = cache.private_cache(_STORE[0])
    data = cache.read_entry(folder, _STORE[1]) if folder is not None else None
    if data is None:
        return
    try:
        kept = cache.unpickled(data)
    except Exception:  # noqa: BLE001 - what this generator wrote for this key, yet unreadable: scanned again
        return
    if type(kept) is dict and len(kept) <= _SCANNED_MAX:
        _SCANNED.update(kept)


def _store_scanned() -> None:
    """What this process scanned, added to the per-user cache's entry (the entry is rewritten whole)."""
    folder = cache.private_cache(_STORE[0])
    if folder is None:
        return
    kept = {path: _SCANNED[path] for path in _SCANNED_NEW if path in _SCANNED}
    data = cache.read_entry(folder, _STORE[1])
    try:
        earlier = cache.unpickled(data) if data is not None else {}
    except Exception:  # noqa: BLE001 - damaged: replaced by this process's
        earlier = {}
    if type(earlier) is dict and len(earlier) + len(kept) <= _SCANNED_MAX:
        kept = {**earlier, **kept}
    cache.write_entry(folder, _STORE[1], cache.pickled(kept), keep=1)


def _directives(text: bytes) -> list[_Directive]:
    """The include directives of `text`, in order."""
    out: list[_Directive] = []
    line, counted = 1, 0
    for m in _INCLUDE.finditer(text):
        line_start = text.rfind(b"\n", 0, m.start()) + 1
        if text[line_start:m.start()].strip(b" \t"):
            continue  # not a directive: text precedes the `#` on its line
        line += text.count(b"\n", counted, line_start)
        counted = line_start
        out.append((m.group(1), m.group(2).decode("utf-8", "replace"), line, m.start(2) - line_start + 1))
    return out


def _stat(path: str) -> os.stat_result | None:
    """The stat of the file `path` names (a link: its target's), or None (none there, a dangling link, no access)."""
    try:
        return os.stat(path)
    except OSError:
        return None


def _identity(path: str, st: os.stat_result | None) -> object:
    """What one file of the include graph is, however a path reaches it: its device and inode (from its stat
    `st`); the path itself where it has no stat."""
    return path if st is None else (st.st_dev, st.st_ino)


def _included(found: str, st: os.stat_result | None, what: Callable[[], str]) -> list[_Directive]:
    """The directives of the included file `found` (its stat `st`, None where it has none): read (`_read_bounded`,
    its errors start with `what()`) unless a check read it before (this process, or one that kept it in the per-user
    cache) and its stat is the same."""
    ident = None
    if st is not None and stat.S_ISREG(st.st_mode) and st.st_size <= MAX_HEADER_BYTES:
        ident = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        known = _SCANNED.get(found)
        if known is not None and known[0] == ident:
            return known[1]
    directives = _directives(_read_bounded(Path(found), what()))
    # a file changed just before it was read may change again within its filesystem's time resolution, the same
    # stat then vouching for other text: it is read again each time (as a preamble is rebuilt, `preamble.RACY_NS`)
    if ident is not None and max(ident[3], ident[4]) < time.time_ns() - preamble.RACY_NS:
        if len(_SCANNED) >= _SCANNED_MAX:
            _SCANNED.clear()
            _SCANNED_NEW.clear()
        _SCANNED[found] = (ident, directives)
        _SCANNED_NEW.add(found)
    return directives


def _where(where: _Where) -> str:
    """file:line:col of an include directive."""
    path, line, col = where
    return f"{shown(path)}:{line}:{col}"


def _chain(chain: tuple[_Where, ...]) -> str:
    return "".join(f"\n  included from {_where(w)}" for w in reversed(chain))


def read_header(path: Path, target: Target) -> tuple[bytes, str]:
    """The header's bytes and text, or a clear error for something that is not a header (checked before it is
    opened: a FIFO or a device would block the read; a file over MAX_HEADER_BYTES is refused). Each is made once:
    a header is a few hundred KB, and fresh memory is not free."""
    expected = f"expected {target.display_name}'s {target.header}"
    if not path.exists():
        raise HeaderError(f"{shown(path)}: no such file; {expected}")
    if not path.is_file():
        raise HeaderError(f"{shown(path)}: not a regular file; {expected} (pass the path of the file itself)")
    data = _read_bounded(path, f"{shown(path)}")
    if not data or data.isspace():
        raise HeaderError(f"{path}: the file is empty; {expected}")
    if b"\0" in data[:65536]:
        raise HeaderError(f"{path}: this is a binary file, not a C header; {expected}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise HeaderError(f"{path}:{line}:{col}: not UTF-8 text ({exc.reason}); {expected}") from None
    return data, text


def clang_args(opts: ParseOptions, target: Target, beta: bool) -> list[str]:
    lang = opts.language
    args = ["-x", "c++", "-std=c++17"] if lang == "c++" else ["-x", "c", "-std=c11"]
    for inc in opts.includes:
        args += ["-I", str(inc)]
    if opts.shims:
        args += ["-idirafter", str(target.shim_dir)]  # last of all: real headers anywhere win
    builtin = opts.builtin_include
    if builtin is True:
        builtin = find_builtin_include()
    if isinstance(builtin, Path):
        args += ["-isystem", str(builtin)]
    for d in (*target.default_defines, *opts.defines):
        args += ["-D", d]
    if beta:
        args += ["-D", target.beta_macro]
    return args

"""MIOpen's knobs as Python: `miopen.configure(**settings)`, checked, put into the process environment before the
library loads (the way `torch.backends` switches are applied before first use).

MIOpen reads its environment variables through its env.hpp, which keeps each value in a function-local static on
its first read (`IsEnabled`, `Value`, `GetStringEnv`; the `EnvVar` of 3.x likewise): each is read **once per
process**, at MIOpen's first use of it, and never again. Which call first reads which variable is MIOpen's business
and differs between releases, so every setting here is treated as read once the library is in the process: after
that (loaded by miopen, or mapped by another framework such as PyTorch) `configure()` refuses to change a value with
`SettingTooLateError`, naming the setting.

Defaults: MIOpen's own, except its log level. MIOpen's internal log goes to stderr ("MIOpen(HIP): Info [Handle]
..." when a handle is created, "MIOpen Error: ..." lines from solvers a Find tried and dropped on calls that
succeed); unless `MIOPEN_LOG_LEVEL` is set (in the environment or by `configure(log_level=...)`), miopen sets it to
1 (quiet) just before the library loads. `MIOPEN_LOG_LEVEL=0` or `configure(log_level="default")` gives MIOpen's own
default back. Failing calls still raise exceptions naming the function, status and arguments.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping

__all__ = ["SETTINGS", "Setting", "configure", "current", "apply_defaults", "set_default", "QUIET_LOG_LEVEL"]

#: what MIOPEN_LOG_LEVEL gets when nobody set it: 1, quiet
QUIET_LOG_LEVEL = "1"
_lock = threading.Lock()
#: environment variable -> (the value put there, by whom: "configure()", "miopen default", "the OpenCL backend")
_set_by: dict[str, tuple[str, str]] = {}


class Setting:
    """One knob: its Python name, MIOpen's variable, the values it takes (name -> what the variable gets; None:
    a folder or a switch), and what it does."""

    __slots__ = ("name", "env", "kind", "choices", "doc")

    def __init__(self, name: str, env: str, kind: str, doc: str, choices: Mapping[str, str] | None = None) -> None:
        self.name, self.env, self.kind, self.doc = name, env, kind, doc
        self.choices: dict[str, str] = dict(choices or {})

    def allowed(self) -> str:
        """The values it accepts, in words."""
        if self.kind == "switch":
            return "True or False"
        if self.kind == "folder":
            return "a folder path (str or os.PathLike) that is, or can be made, a writable directory"
        words = [f"{k!r}" + (f" ({v})" if v.isdigit() else "") for k, v in self.choices.items() if not k.isdigit()]
        numbers = [k for k in self.choices if k.isdigit()]
        return "one of " + ", ".join(words) + (f" (or {', '.join(numbers)})" if numbers else "")


def _levels() -> dict[str, str]:
    names = ("default", "quiet", "fatal", "error", "warning", "info", "info2", "trace")
    return {**{n: str(i) for i, n in enumerate(names)}, **{str(i): str(i) for i in range(len(names))}}


#: every knob, in the order `python -m miopen` shows them (MIOpen's docs: reference/env_variables, how-to/debug-log,
#: conceptual/finddb and find-and-immediate)
SETTINGS: dict[str, Setting] = {s.name: s for s in (
    Setting("find_mode", "MIOPEN_FIND_MODE", "choice",
            "how Find searches: normal (benchmark every solver), fast/hybrid (the find database first), "
            "dynamic_hybrid (MIOpen's default since 2.x)",
            {"normal": "NORMAL", "fast": "FAST", "hybrid": "HYBRID", "dynamic_hybrid": "DYNAMIC_HYBRID",
             "1": "1", "2": "2", "3": "3", "5": "5"}),
    Setting("find_enforce", "MIOPEN_FIND_ENFORCE", "choice",
            "what Find does with the databases: none, db_update, search (tune), search_db_update, db_clean",
            {"none": "NONE", "db_update": "DB_UPDATE", "search": "SEARCH", "search_db_update": "SEARCH_DB_UPDATE",
             "db_clean": "DB_CLEAN", "1": "1", "2": "2", "3": "3", "4": "4", "5": "5"}),
    Setting("user_db_path", "MIOPEN_USER_DB_PATH", "folder",
            "the user find and performance databases (default ~/.config/miopen): move it off a read-only or shared "
            "home"),
    Setting("cache_dir", "MIOPEN_CUSTOM_CACHE_DIR", "folder",
            "the compiled-kernel cache (default ~/.cache/miopen)"),
    Setting("log_level", "MIOPEN_LOG_LEVEL", "choice",
            "MIOpen's internal log on stderr: default (MIOpen's: 4, or 5 in debug builds), quiet, fatal, error, "
            "warning, info, info2, trace; miopen makes it quiet unless set", _levels()),
    Setting("logging", "MIOPEN_ENABLE_LOGGING", "switch", "log every API call with its arguments on stderr"),
    Setting("logging_cmd", "MIOPEN_ENABLE_LOGGING_CMD", "switch",
            "print the MIOpenDriver command line of each call on stderr"),
    Setting("deterministic", "MIOPEN_DEBUG_CONVOLUTION_DETERMINISTIC", "switch",
            "only deterministic convolution solvers (slower; the same result every run)"),
)}
_BY_ENV = {s.env: s for s in SETTINGS.values()}


def _err(setting: Setting, value: object, why: str) -> ValueError:
    from .errors import SettingError

    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
    return SettingError(f"miopen.configure({setting.name}={shown}): {why}; expected {setting.allowed()} "
                        f"(it sets ${setting.env})", setting.name)


def _folder(setting: Setting, value: object) -> str:
    if not isinstance(value, (str, os.PathLike)) or isinstance(value, bytes):
        raise _err(setting, value, f"a {type(value).__name__}")
    path = os.fspath(value)
    if not isinstance(path, str) or not path or "\0" in path:
        raise _err(setting, value, "an empty path, or one with a NUL character")
    path = os.path.abspath(os.path.expanduser(path))
    if os.path.exists(path) and not os.path.isdir(path):
        raise _err(setting, value, f"{path} exists and is no directory")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise _err(setting, value, f"{path} cannot be made ({exc.strerror or exc})") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise _err(setting, value, f"{path} is not writable (MIOpen writes there)")
    return path


def _env_value(setting: Setting, value: object) -> str:
    """What `value` puts into the variable, or a SettingError naming the setting and what it accepts."""
    if setting.kind == "switch":
        if not isinstance(value, bool):
            raise _err(setting, value, f"a {type(value).__name__}")
        return "1" if value else "0"
    if setting.kind == "folder":
        return _folder(setting, value)
    key = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
    if not isinstance(key, str) or key.lower() not in setting.choices:
        raise _err(setting, value, "not a known value")
    return setting.choices[key.lower()]


def _loaded_elsewhere() -> str | None:
    """The path of a MIOpen library mapped into this process by anyone (miopen or another framework), or None."""
    from ._generated import _state
    from ._generated._target import LIBRARY_NAMES

    if _state.lib is not None:
        return _state.lib_path or "<injected library>"
    stems = tuple(dict.fromkeys(n.split(".so")[0] + ".so" for n in LIBRARY_NAMES))
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            for line in f:
                path = line.rstrip("\n").partition("/")[2]
                if path and os.path.basename(path).startswith(stems):
                    return "/" + path
    except OSError:  # no /proc: only what miopen loaded counts
        pass
    return None


def configure(**settings: object) -> None:
    """Set MIOpen's knobs before the library loads: `miopen.configure(find_mode="normal", log_level="error",
    user_db_path="/scratch/me/miopen-db", deterministic=True)`.

    Each value is checked first (a `SettingError`, also a ValueError, names the setting and what it accepts; nothing
    is set unless all are good), then put into the process environment, where MIOpen reads it. `None` unsets a
    variable (MIOpen's own default). Once a MIOpen library is in the process, changing a value raises
    `SettingTooLateError` (MIOpen reads each once): call it before the first MIOpen call. Known settings:
    `miopen.settings.SETTINGS` (and `python -m miopen`)."""
    values: dict[str, str | None] = {}
    for name, value in settings.items():
        setting = SETTINGS.get(name)
        if setting is None:
            from .errors import SettingError

            raise SettingError(f"miopen.configure: unknown setting {name!r}; known: {', '.join(SETTINGS)}", name)
        values[setting.env] = None if value is None else _env_value(setting, value)
    with _lock:
        changed = [env for env, v in values.items() if os.environ.get(env) != v]
        if changed:
            loaded = _loaded_elsewhere()
            if loaded is not None:
                from .errors import SettingTooLateError

                names = ", ".join(f"{_BY_ENV[e].name} (${e})" for e in changed)
                raise SettingTooLateError(
                    f"miopen.configure: too late for {names}: MIOpen is already loaded in this process ({loaded}) "
                    f"and reads each of its variables once; call configure() before the first MIOpen call, or set "
                    f"the variable in the environment before Python starts", [_BY_ENV[e].name for e in changed])
        for env, v in values.items():
            if v is None:
                os.environ.pop(env, None)
                _set_by.pop(env, None)
            else:
                os.environ[env] = v
                _set_by[env] = (v, "configure()")


def set_default(env: str, value: str, by: str) -> None:
    """Put `value` into $`env` unless it is set, recording `by` as where it came from (the runtime's own defaults,
    e.g. the OpenCL backend's find mode)."""
    with _lock:
        if env not in os.environ:
            os.environ[env] = value
            _set_by[env] = (value, by)


def apply_defaults() -> None:
    """miopen's defaults, applied just before the library loads: MIOpen's log quiet unless someone set its level."""
    set_default("MIOPEN_LOG_LEVEL", QUIET_LOG_LEVEL, "miopen default")


def current() -> list[dict[str, str | None]]:
    """Every setting: its name, variable, value (None: unset, MIOpen's own default) and where the value came from
    ("default", "environment", "configure()", "miopen default", ...), with what it accepts and does."""
    rows: list[dict[str, str | None]] = []
    for s in SETTINGS.values():
        value = os.environ.get(s.env)
        recorded = _set_by.get(s.env)
        origin = ("default" if value is None else recorded[1] if recorded and recorded[0] == value else
                  "environment")
        rows.append({"name": s.name, "env": s.env, "value": value, "origin": origin, "allowed": s.allowed(),
                     "doc": s.doc})
    return rows

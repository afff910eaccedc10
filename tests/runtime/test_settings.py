"""`miopen.configure()` (runtime/settings.py): values checked with errors naming the setting, set into the
environment before the library loads, refused once a MIOpen is in the process; `python -m miopen` shows each value
and where it came from; miopen's quiet default for MIOpen's log, shown on the real 2.17.0. Every case that loads a
library runs in a process of its own (the session's stub is loaded in this one)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from typing import Any

import pytest

from miopen import settings
from miopen.errors import SettingError

from ..conftest import Libs
from ..helpers import REPO

_CLEARED = ("MIOPEN_LIBRARY", "ROCM_PATH", "CONDA_PREFIX", "CMAKE_PREFIX_PATH",
            *(s.env for s in settings.SETTINGS.values()))


def _env(**extra: str) -> dict[str, str]:
    # every MIOPEN_ variable the test process has (another test on this worker may have set some) is left out
    env = {k: v for k, v in os.environ.items() if k not in _CLEARED and not k.startswith("MIOPEN_")}
    env.update(extra)
    return env


def _py(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
    assert "Traceback" not in r.stderr, r.stderr
    return r


@pytest.fixture(scope="module")
def stub(runtime_libs: Libs) -> str:
    path: str = runtime_libs.miopen._name
    return path


BAD: dict[str, list[object]] = {
    "find_mode": ["fsat", 4, 0, True, None.__class__, 1.0, ""],
    "find_enforce": ["tune", 6, b"NONE", []],
    "log_level": ["loud", 8, -1, 5.0],
    "logging": ["yes", 1, "1", None.__class__],
    "logging_cmd": [0, "true"],
    "deterministic": ["on", 1],
    "user_db_path": ["", 3, b"/tmp/x", "/proc/self/status", "/proc/no/such/dir"],
    "cache_dir": [["/tmp"], "\0x"],
}


def test_every_setting_has_bad_values_here() -> None:
    assert set(BAD) == set(settings.SETTINGS)


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_value_names_the_setting_its_variable_and_what_it_takes(name: str) -> None:
    """Checked before anything is set (nothing changes in the environment); never a bare traceback's wording."""
    import miopen

    setting = settings.SETTINGS[name]
    before = dict(os.environ)
    for value in BAD[name]:
        with pytest.raises(SettingError) as e:
            miopen.configure(**{name: value})
        msg = str(e.value)
        assert msg.startswith(f"miopen.configure({name}=") and f"${setting.env}" in msg, msg
        assert setting.allowed() in msg and e.value.setting == name
        assert isinstance(e.value, ValueError)
    assert dict(os.environ) == before


def test_an_unknown_setting_lists_the_known_ones() -> None:
    import miopen

    with pytest.raises(SettingError, match="unknown setting 'find_mod'; known: find_mode, find_enforce") as e:
        miopen.configure(find_mod="fast")
    assert e.value.setting == "find_mod"


def test_values_reach_the_environment_before_the_library_loads(stub: str, tmp_path: Any) -> None:
    db, cache = tmp_path / "home-is-read-only" / "db", tmp_path / "cache"
    code = (f"import miopen, os, json\n"
            f"miopen.configure(find_mode='Normal', find_enforce=3, log_level='error', logging=False, "
            f"deterministic=True, user_db_path={str(db)!r}, cache_dir={str(cache)!r})\n"
            f"seen = {{k: v for k, v in os.environ.items() if k.startswith('MIOPEN_') and k != 'MIOPEN_LIBRARY'}}\n"
            f"miopen.load_library({stub!r})\n"
            f"miopen.configure(find_mode='normal')  # the same value: nothing to change, no error\n"
            f"try:\n    miopen.configure(find_mode='fast', deterministic=True)\n"
            f"except miopen.errors.SettingTooLateError as e:\n    print(json.dumps([seen, str(e), e.settings]))\n")
    r = _py(code, _env())
    seen, message, names = json.loads(r.stdout)
    assert seen == {"MIOPEN_FIND_MODE": "NORMAL", "MIOPEN_FIND_ENFORCE": "3", "MIOPEN_LOG_LEVEL": "3",
                    "MIOPEN_ENABLE_LOGGING": "0", "MIOPEN_DEBUG_CONVOLUTION_DETERMINISTIC": "1",
                    "MIOPEN_USER_DB_PATH": str(db), "MIOPEN_CUSTOM_CACHE_DIR": str(cache)}
    assert db.is_dir() and cache.is_dir()
    assert names == ["find_mode"]  # deterministic already had that value
    assert message.startswith("miopen.configure: too late for find_mode ($MIOPEN_FIND_MODE): MIOpen is already "
                              f"loaded in this process ({stub})"), message


def test_a_miopen_another_framework_loaded_is_too_late_too(stub: str, tmp_path: Any) -> None:
    """libMIOpen mapped by someone else (here plain ctypes, as PyTorch would): MIOpen may have read its variables."""
    lib = tmp_path / "libMIOpen.so.1"
    shutil.copy(stub, lib)
    code = (f"import ctypes, miopen\nmiopen.configure(log_level='info')  # not loaded yet: fine\n"
            f"ctypes.CDLL({str(lib)!r})\nmiopen.configure(log_level='info')  # the same value: fine\n"
            "try:\n    miopen.configure(log_level='trace')\nexcept miopen.errors.SettingTooLateError as e:\n"
            "    print(e)\n")
    r = _py(code, _env())
    assert r.stdout.startswith("miopen.configure: too late for log_level ($MIOPEN_LOG_LEVEL): MIOpen is already "
                               f"loaded in this process ({lib})"), r.stdout


def test_python_m_miopen_shows_each_value_and_its_origin(stub: str) -> None:
    code = ("import miopen, sys\nmiopen.configure(find_enforce='search')\n"
            "from miopen.__main__ import main\nsys.exit(main(['--json']))\n")
    r = _py(code, _env(MIOPEN_LIBRARY=stub, MIOPEN_FIND_MODE="FAST"))
    assert r.returncode == 0, r.stdout + r.stderr
    rows = {row["name"]: row for row in json.loads(r.stdout)["settings"]}
    assert list(rows) == list(settings.SETTINGS)
    assert (rows["find_mode"]["value"], rows["find_mode"]["origin"]) == ("FAST", "environment")
    assert (rows["find_enforce"]["value"], rows["find_enforce"]["origin"]) == ("SEARCH", "configure()")
    assert (rows["log_level"]["value"], rows["log_level"]["origin"]) == (settings.QUIET_LOG_LEVEL, "miopen default")
    assert (rows["deterministic"]["value"], rows["deterministic"]["origin"]) == (None, "default")
    text = subprocess.run([sys.executable, "-m", "miopen"], capture_output=True, text=True, cwd=REPO, timeout=300,
                          env=_env(MIOPEN_LIBRARY=stub, MIOPEN_LOG_LEVEL="5")).stdout
    assert "  log_level      $MIOPEN_LOG_LEVEL='5'  [environment]" in text, text
    assert "  cache_dir      $MIOPEN_CUSTOM_CACHE_DIR=unset (MIOpen's default)  [default]" in text


@pytest.mark.real_library
def test_the_log_is_quiet_by_default_on_the_real_2_17_0() -> None:
    """The real library prints "Info [Handle]" on stderr when a handle is created (a call that succeeds): not under
    miopen's default; with the level set (environment or configure()) MIOpen logs as asked."""
    from ..real_miopen import library_path

    path = str(library_path())
    code = ("import sys, miopen\n" + "{}" + f"miopen.load_library({path!r})\nh = miopen.create()\nprint('made')\n")
    quiet = _py(code.format(""), _env())
    assert quiet.stdout.strip() == "made" and "Info [Handle]" not in quiet.stderr, quiet.stderr
    loud = _py(code.format(""), _env(MIOPEN_LOG_LEVEL="5"))
    assert "Info [Handle]" in loud.stderr, loud.stderr
    asked = _py(code.format("miopen.configure(log_level='info')\n"), _env())
    assert "Info [Handle]" in asked.stderr, asked.stderr
    default = _py(code.format("miopen.configure(log_level='default')\n"), _env())  # MIOpen's own default back
    assert default.stdout.strip() == "made"

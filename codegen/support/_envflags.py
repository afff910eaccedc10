"""Environment switches, parsed strictly: the one parser of the package (`miopen.envflags` re-exports it).

A switch is on for `1`, `true` or `yes` and off for `0`, `false` or `no` (any case); unset or
empty means its default. Anything else raises `EnvFlagError` naming the variable and its value:
a typo such as `MIOPEN_SKIP_VERSION_CHECK=ture` must not silently mean "off" (or "on")."""

from __future__ import annotations

import os
from collections.abc import Mapping

TRUE_WORDS = frozenset({"1", "true", "yes"})
FALSE_WORDS = frozenset({"0", "false", "no"})


class EnvFlagError(ValueError):
    """An environment switch holds something other than 1/true/yes or 0/false/no."""

    def __init__(self, name: str, value: str) -> None:
        shown = value if len(value) <= 40 else value[:37] + "..."
        super().__init__(f"${name}={shown!r}: expected 1/true/yes or 0/false/no (on or off, in any case)")
        self.name = name
        self.value = value


def env_flag(name: str, default: bool = False, environ: Mapping[str, str] | None = None) -> bool:
    """The value of the switch `name` (`environ`: os.environ unless given)."""
    value = (os.environ if environ is None else environ).get(name)
    if value is None or value == "":
        return default
    word = value.lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise EnvFlagError(name, value)

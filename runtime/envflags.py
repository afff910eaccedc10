"""Environment switches, parsed strictly (`1`/`true`/`yes`, `0`/`false`/`no`, any case; anything else is an
error naming the variable): the generated package's one parser (`_generated._envflags`), under its public name."""

from __future__ import annotations

from ._generated._envflags import FALSE_WORDS, TRUE_WORDS, EnvFlagError, env_flag

__all__ = ["EnvFlagError", "env_flag", "TRUE_WORDS", "FALSE_WORDS"]

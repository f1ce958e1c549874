"""Regular expressions compiled at their first use.

``mpsgen check`` starts once per commit, and compiling a pattern costs ~50-450 us. The
patterns that only its child process runs (the yaml rows, the .cpp candidate lines, functor
structs, xfail sets, DECLARE_DISPATCH lines: :mod:`mpsgen.check.prefetch_jobs`), or only an
unusual input does, are declared with :func:`lazy`: the process that uses one compiles it,
the other never does (~2.5 ms of a ~90 ms run).
"""

from __future__ import annotations

import re


class LazyPattern:
    """A :class:`re.Pattern` compiled when one of its attributes is first asked for."""

    __slots__ = ("_args", "_compiled")

    def __init__(self, pattern: str | bytes, flags: int = 0):
        self._args = (pattern, flags)
        self._compiled: re.Pattern | None = None

    def __getattr__(self, name: str):  # every attribute but the two slots: the pattern's
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(*self._args)
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy({self._args[0]!r})"


def lazy(pattern: str | bytes, flags: int = 0) -> re.Pattern:
    """``re.compile(pattern, flags)``, done at first use."""
    return LazyPattern(pattern, flags)  # type: ignore[return-value]

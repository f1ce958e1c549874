"""The compiler's error lines, read once for the compile gate and ``try`` (functors and kernel
bodies): g++ and clang++ both write an error as ``file:line:col: error: message`` (``fatal
error`` when it stops the compile), and a caller wants the first one inside the lines of the
generated program that came from the user's text, to say where it is in that text. What each
caller writes of it (its wording, which file it trusts) stays with the caller.
"""

from __future__ import annotations

import re
from typing import NamedTuple

# (the file is everything before the line's first colon; notes and warnings are not errors)
ERROR_LINE = re.compile(r"^([^:\n]*):(\d+):(\d+): (fatal )?error: (.*)$", re.M)


class CompilerError(NamedTuple):
    """One error line of the compiler; ``message`` as the compiler wrote it (not stripped)."""

    file: str
    line: int
    col: int
    message: str
    fatal: bool = False

    def inside(self, first: int, last: int) -> bool:
        """Whether the error is on one of the lines ``first``..``last`` (1-based, inclusive)."""
        return first <= self.line <= last


def compiler_errors(stderr: str, file: str = "", fatal: bool = True) -> list[CompilerError]:
    """The error lines of ``stderr``, in the order the compiler wrote them: only those of a file
    whose name ends in ``file`` when one is given, and without ``fatal error`` lines when
    ``fatal`` is False."""
    errors = [
        CompilerError(m.group(1), int(m.group(2)), int(m.group(3)), m.group(5), bool(m.group(4)))
        for m in ERROR_LINE.finditer(stderr)
    ]
    return [e for e in errors if e.file.endswith(file) and (fatal or not e.fatal)]


def first_inside(errors: list[CompilerError], first: int, last: int) -> CompilerError | None:
    """The first of ``errors`` on the lines ``first``..``last``, or None."""
    return next((e for e in errors if e.inside(first, last)), None)


def last_said(stderr: str, default: str = "the compiler failed") -> str:
    """The last line the compiler wrote (what a message quotes when no error line was found),
    or ``default`` when it wrote nothing."""
    return (stderr.strip().splitlines() or [default])[-1]

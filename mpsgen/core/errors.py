"""Errors that carry a location and an exit code.

Every failure mpsgen reports to a user is one of these; the CLI turns them into a
one-paragraph message and an exit code, never a traceback.
"""

from __future__ import annotations

from typing import NamedTuple


class Location(NamedTuple):
    """A place in a file: ``path:line:col`` (1-based; col 0 means the whole line)."""

    path: str
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        if self.line and self.col:
            return f"{self.path}:{self.line}:{self.col}"
        if self.line:
            return f"{self.path}:{self.line}"
        return self.path


class MpsgenError(Exception):
    """Base class. ``exit_code`` follows the CLI contract: 1 refused, 2 bad input."""

    exit_code = 2

    def __init__(self, message: str, *, location: Location | None = None, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.location = location
        self.hint = hint

    def __str__(self) -> str:
        text = f"{self.location}: {self.message}" if self.location else self.message
        if self.hint:
            text = f"{text} {self.hint}"
        return text


class BadInput(MpsgenError):
    """Flags, spec or root are wrong: exit 2."""

    exit_code = 2


class Refused(MpsgenError):
    """The request is well-formed but cannot be carried out on this tree: exit 1."""

    exit_code = 1


class SpecErrors(BadInput):
    """Several problems found in one or more spec files; each keeps its location."""

    def __init__(self, problems: list[tuple[Location, str]]):
        self.problems = problems
        lines = [f"{loc}: {msg}" for loc, msg in problems]
        super().__init__("\n".join(lines))

    def __str__(self) -> str:
        return self.message


def blank_value(flag: str, values) -> BadInput | None:
    """The one rule for every option given a value on the command line (``values``: the value,
    or the values of a repeatable option): an empty or whitespace-only one is refused, never
    taken as the option left out."""
    for value in (values,) if isinstance(values, str) else values if isinstance(values, (list, tuple)) else ():
        if isinstance(value, str) and not value.strip():
            return BadInput(
                f"{flag} {value!r}: the value is empty or only white space; nothing written.",
                hint=f"Give {flag} a value, or leave {flag} out.",
            )
    return None


def caused_by_interrupt(exc: BaseException | None) -> bool:
    """Whether ``exc`` is a KeyboardInterrupt, or an error raised on account of one: the
    interpreter wraps one in a class body's ``__set_name__`` (a RuntimeError whose cause it
    is), and a library may re-raise one as its own error."""
    seen = 0
    while exc is not None and seen < 50:
        if isinstance(exc, KeyboardInterrupt):
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False

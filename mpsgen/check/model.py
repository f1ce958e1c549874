"""What ``mpsgen check``'s rules are made of: :class:`Finding`, :class:`Rule` and the
:func:`rule` decorator that describes one, plus the helpers findings are written with.
Nothing here registers: :mod:`mpsgen.check.registry` gathers the rules of every family."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple


ERROR = "error"
WARNING = "warning"


class Finding:
    """One problem at ``path:line:col`` (1-based; col 0 means the whole line).

    ``symbols`` are the identifiers it is about (a stub, a kernel function, a Metal kernel
    name, a yaml row); ``locations`` the other ``(path, line)`` places in the tree where those
    symbols are declared, defined, registered or used, or where the fix goes (the .mm paired
    with a .metal file, and back). ``check PATHS`` reports a finding when its own path or
    one of its locations is among PATHS: decided on these facts, never on words in a file.

    Immutable; two findings are equal (and order) by place, code, severity and message, not
    by their symbols or locations.
    """

    __slots__ = ("_locations", "code", "col", "line", "locate", "message", "path", "severity", "symbols")

    def __init__(
        self,
        path: str,
        line: int,
        col: int,
        code: str,
        severity: str,
        message: str,
        symbols: tuple[str, ...] = (),
        # the locations, worked out when first asked for (PATHS filtering, JSON): a whole-tree
        # text run never pays for finding every use of every symbol
        locate: Callable[[], Iterable[tuple[str, int]]] | None = None,
    ):
        setattr_ = object.__setattr__
        setattr_(self, "path", path)
        setattr_(self, "line", line)
        setattr_(self, "col", col)
        setattr_(self, "code", code)
        setattr_(self, "severity", severity)
        setattr_(self, "message", message)
        setattr_(self, "symbols", symbols)
        setattr_(self, "locate", locate)
        setattr_(self, "_locations", None)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Finding is immutable (cannot set {name})")

    def _key(self) -> tuple[str, int, int, str, str, str]:
        return (self.path, self.line, self.col, self.code, self.severity, self.message)

    def __eq__(self, other: object) -> bool:
        return self._key() == other._key() if isinstance(other, Finding) else NotImplemented

    def __lt__(self, other: Finding) -> bool:
        return self._key() < other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Finding({self.path!r}, {self.line}, {self.col}, {self.code!r}, {self.severity!r}, {self.message!r}, symbols={self.symbols!r})"

    @property
    def locations(self) -> tuple[tuple[str, int], ...]:
        found = self._locations
        if found is None:
            found = tuple(dict.fromkeys(self.locate())) if self.locate is not None else ()
            object.__setattr__(self, "_locations", found)
        return found

    def touches(self, paths: set[str] | frozenset[str]) -> bool:
        return self.path in paths or any(p in paths for p, _ in self.locations)


class Rule(NamedTuple):
    code: str
    name: str
    severity: str
    summary: str
    explanation: str  # why it matters and how to fix it
    run: Callable  # (Facts) -> Iterable[Finding]


def rule(code: str, name: str, severity: str, summary: str, explanation: str) -> Callable[[Callable], Rule]:
    """Make a rule function ``f(facts) -> Iterable[Finding]`` the :class:`Rule` ``code``
    (a family module's rules are what :mod:`mpsgen.check.registry` registers)."""

    def wrap(fn: Callable) -> Rule:
        return Rule(code, name, severity, summary, explanation.strip(), fn)

    return wrap


MAX_LISTED = 4


def listed(names: Iterable[str]) -> str:
    """At most :data:`MAX_LISTED` names of a message, and how many more."""
    names = list(names)
    more = len(names) - MAX_LISTED
    return ", ".join(names[:MAX_LISTED]) + (f" and {more} more" if more > 0 else "")


# -- the locations of findings (see Finding.locate), bound with partial: computed when asked --
def lines_of(path: str, lines: tuple[int, ...]) -> list[tuple[str, int]]:
    return [(path, n) for n in lines]

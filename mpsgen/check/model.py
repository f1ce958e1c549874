"""Findings and the rule registry of ``mpsgen check``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True, order=True)
class Finding:
    """One problem at ``path:line:col`` (1-based; col 0 means the whole line).

    ``symbols`` are the identifiers it is about (a stub, a kernel function, a Metal kernel
    name, a yaml row); ``locations`` the other ``(path, line)`` places in the tree where those
    symbols are declared, defined, registered or used, or where the fix goes (the .mm paired
    with a .metal file, and back). ``check PATHS`` reports a finding when its own path or
    one of its locations is among PATHS: decided on these facts, never on words in a file.
    """

    path: str
    line: int
    col: int
    code: str
    severity: str
    message: str
    symbols: tuple[str, ...] = field(default=(), compare=False)
    # the locations, worked out when first asked for (PATHS filtering, JSON): a whole-tree text
    # run never pays for finding every use of every symbol
    locate: Callable[[], Iterable[tuple[str, int]]] | None = field(default=None, compare=False, repr=False)

    @property
    def locations(self) -> tuple[tuple[str, int], ...]:
        found = self.__dict__.get("_locations")
        if found is None:
            found = tuple(dict.fromkeys(self.locate())) if self.locate is not None else ()
            object.__setattr__(self, "_locations", found)
        return found

    @property
    def rule(self) -> Rule:
        return RULES[self.code]

    def touches(self, paths: set[str] | frozenset[str]) -> bool:
        return self.path in paths or any(p in paths for p, _ in self.locations)


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    severity: str
    summary: str
    explanation: str  # why it matters and how to fix it
    run: Callable = field(compare=False, repr=False)  # (Index) -> Iterable[Finding]


RULES: dict[str, Rule] = {}


def rule(code: str, name: str, severity: str, summary: str, explanation: str):
    """Register a rule function ``f(index) -> Iterable[Finding]`` under ``code``."""

    def wrap(fn):
        if code in RULES:
            raise ValueError(f"rule code {code} registered twice")
        RULES[code] = Rule(code, name, severity, summary, explanation.strip(), fn)
        return fn

    return wrap

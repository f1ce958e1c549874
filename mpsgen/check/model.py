"""Findings and the rule registry of ``mpsgen check``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True, order=True)
class Finding:
    """One problem at ``path:line:col`` (1-based; col 0 means the whole line).

    ``check PATHS`` reports a finding when its own path or one of ``related`` is among
    PATHS, or when one of PATHS mentions a name of ``mentions`` (the op, stub or kernel
    whose edit can cause or fix it; ``foo`` also matches ``foo_functor``).
    """

    path: str
    line: int
    col: int
    code: str
    severity: str
    message: str
    related: tuple[str, ...] = field(default=(), compare=False)
    mentions: tuple[str, ...] = field(default=(), compare=False)

    @property
    def rule(self) -> Rule:
        return RULES[self.code]

    def touches(self, paths: set[str] | frozenset[str], mentioned: Callable[[str, str], bool] | None = None) -> bool:
        if self.path in paths or any(p in paths for p in self.related):
            return True
        return mentioned is not None and any(mentioned(p, n) for p in paths for n in self.mentions)


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

"""The registry of ``mpsgen check``'s rules: every rule by its code, in code order (the order of
``--explain``'s list of codes, of ``select``/``ignore`` and of docs/check-rules.md).

The rules are defined by family, one module each under :mod:`mpsgen.check.rules`, with
:func:`~mpsgen.check.model.rule`; the families are imported here and nowhere else, and a
family's rules are the :class:`~mpsgen.check.model.Rule` objects its module defines.

A new family (reductions, say) is one module and its name here: write
``mpsgen/check/rules/reductions.py`` with its ``@rule(...)`` functions (codes not yet taken),
then add ``reductions`` to the import below and to :data:`FAMILIES`; its rules take
their places by code, wherever the family stands. A code given twice stops the import with
an error (tests/check/test_registry.py checks the codes).
"""

from __future__ import annotations

from types import ModuleType

from mpsgen.check.model import Rule
from mpsgen.check.rules import (
    aoti_shim,
    dispatch,
    journal,
    kernels,
    numerics,
    pipelines,
    reductions,
    xfails,
)

FAMILIES: tuple[ModuleType, ...] = (aoti_shim, dispatch, journal, kernels, numerics, pipelines, reductions, xfails)


def gather(families: tuple[ModuleType, ...]) -> dict[str, Rule]:
    """The rules the ``families`` define, by code, in code order."""
    found: dict[str, Rule] = {}
    for family in families:
        for value in vars(family).values():
            if isinstance(value, Rule):
                if value.code in found:
                    raise ValueError(f"rule code {value.code} registered twice ({found[value.code].name}, {value.name})")
                found[value.code] = value
    return dict(sorted(found.items()))


RULES: dict[str, Rule] = gather(FAMILIES)

"""The rule registry (mpsgen/check/registry.py): every rule once, by code, gathered from the
family modules under mpsgen/check/rules/ that the registry alone imports."""

from __future__ import annotations

import ast
import types
from pathlib import Path

import pytest

from mpsgen.check import RULES
from mpsgen.check.model import ERROR, Rule, rule
from mpsgen.check.registry import FAMILIES, gather

PACKAGE = Path(__file__).resolve().parents[2] / "mpsgen"


def test_rule_codes_are_stable():
    assert list(RULES) == [f"MPS{i:03d}" for i in range(1, 20)]
    assert all(r.explanation and r.summary and r.name for r in RULES.values())


def test_every_family_module_is_registered_and_holds_rules():
    modules = sorted(p.stem for p in (PACKAGE / "check" / "rules").glob("*.py") if p.stem != "__init__")
    assert sorted(f.__name__.rpartition(".")[2] for f in FAMILIES) == modules
    for family in FAMILIES:
        assert any(isinstance(v, Rule) for v in vars(family).values()), family.__name__


def test_the_families_are_imported_by_the_registry_alone():
    """No rule is registered as a side effect of importing something else: the family modules
    are imported in mpsgen/check/registry.py and nowhere else in the package."""
    importers = set()
    for path in PACKAGE.rglob("*.py"):
        if "practice_tree" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            if any(n.startswith("mpsgen.check.rules.") for n in names):
                importers.add(path.relative_to(PACKAGE.parent).as_posix())
    assert importers == {"mpsgen/check/registry.py"}


def test_a_new_family_takes_its_place_by_code():
    family = types.ModuleType("mpsgen.check.rules.extra")

    @rule("MPS000", "first", ERROR, "a summary", "an explanation")
    def first(f):
        return []

    family.first = first
    got = gather((*FAMILIES, family))
    assert list(got)[0] == "MPS000" and list(got)[1:] == list(RULES)
    assert got["MPS000"].run is not None and got["MPS000"].explanation == "an explanation"


def test_a_code_given_twice_stops_the_registry():
    family = types.ModuleType("mpsgen.check.rules.extra")
    family.again = rule("MPS002", "again", ERROR, "s", "e")(lambda f: [])
    with pytest.raises(ValueError, match="MPS002 registered twice"):
        gather((*FAMILIES, family))


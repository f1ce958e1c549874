"""Every spec mpsgen ships passes `mpsgen try` against torch 2.13's CPU op, and the bare
commands take kind, dtypes and functor from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpsgen.resources import resource_dir
from mpsgen.spec import load_spec
from mpsgen.trial import run_trial
from tests.conftest import snapshot

SPECS = sorted(resource_dir("specs").glob("*.yaml"))


def test_the_library_has_specs():
    assert len(SPECS) >= 13


@pytest.mark.parametrize("path", SPECS, ids=[p.stem for p in SPECS])
def test_shipped_spec_matches_the_cpu_op(path: Path):
    result = run_trial(load_spec(path), samples=32)
    compared = [r for r in result.results if not r.skipped]
    assert compared, "no dtype compared"
    bad = [f"{r.metal_in}->{r.metal_out}: {r.mismatches} mismatches, e.g. {r.examples[:1]}" for r in result.results if not r.ok]
    assert not bad, bad


def test_bare_new_op_takes_everything_from_the_shipped_spec(real_tree: Path, run):
    before = snapshot(real_tree)
    res = run("new-op", "heaviside", "--dry-run", "--root", real_tree)
    assert res.exit_code == 0, res.output
    assert "REGISTER_INTEGER_BINARY_OP(heaviside)" in res.stdout  # the spec's integer group
    assert "static_assert" not in res.stdout  # no scaffold
    assert snapshot(real_tree) == before

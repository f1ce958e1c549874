"""Every case of tests/hostile_cases.py: the exit code, a message naming what is wrong, no
traceback, no raw control character printed, nothing written (or, for an ``applied`` case,
exactly a clean apply's tree, said so). In-process (on each release's practice tree) where a
case can be; as real processes (`python -m mpsgen`) for the cases that redirect or close a
stream or limit file sizes, and for a sample, where start-up and the last-resort handlers of
``main`` are exercised. The kill family runs a few SIGKILLs here (benchmarks/hostile_trial.py
runs more)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mpsgen.report.practice import build_practice_tree
from tests.conftest import REAL
from tests.hostile_cases import (
    CASES,
    FAMILIES,
    MUST_BE_ZERO,
    TRIALS,
    REFERENCE_ARGS,
    Ran,
    Unavailable,
    judge,
    kill_trial,
    reference_apply,
    run_process,
    scratch_state,
    tree_state,
    undo,
)


@pytest.fixture(scope="module")
def base_tree(release_template: Path) -> Path:
    return release_template


@pytest.fixture(scope="module")
def reference(base_tree: Path, tmp_path_factory) -> dict[str, bytes]:
    """The release's tree after a clean apply of REFERENCE_ARGS (in-process)."""
    from typer.testing import CliRunner

    from mpsgen.cli.app import app

    root = _fresh(base_tree, tmp_path_factory.mktemp("reference"))
    res = CliRunner().invoke(app, [*REFERENCE_ARGS, "--root", str(root)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return tree_state(root)


@pytest.fixture(scope="module")
def process_tree(tmp_path_factory) -> Path:
    """The installed release's practice tree, for the cases run as processes (once: they cost)."""
    root, _ = build_practice_tree(tmp_path_factory.mktemp("hostile") / "pytorch", sources=REAL)
    return root


@pytest.fixture(scope="module")
def process_reference(process_tree: Path, tmp_path_factory) -> tuple[dict[str, bytes], float]:
    return reference_apply(process_tree, tmp_path_factory.mktemp("process-reference"))


def _fresh(base: Path, tmp: Path) -> Path:
    root = tmp / "pytorch"
    shutil.copytree(base, root, symlinks=True)
    return root


def _assert_as_expected(case, ran: Ran, problems: list[str]) -> None:
    assert not problems, f"{problems}: exit {ran.code}: {ran.text[-3000:]}"


def test_every_family_has_its_cases():
    assert set(FAMILIES) == {
        "malformed input", "escapes", "config", "outcome", "side files", "partial edits", "new-kernel", "check output",
        "kill", "runaway compile", "concurrent writer", "signal timing",
    }
    for family in FAMILIES[: -len(TRIALS)]:
        assert any(c.family == family for c in CASES), family
    assert len({c.id for c in CASES}) == len(CASES)


IN_PROCESS = [c for c in CASES if not c.needs_process]


@pytest.mark.parametrize("case", IN_PROCESS, ids=[c.id for c in IN_PROCESS])
def test_hostile_input(case, base_tree: Path, tmp_path: Path, run, monkeypatch, request):
    ref = request.getfixturevalue("reference") if case.outcome == "applied" else None
    root = _fresh(base_tree, tmp_path)
    try:
        try:
            args = case.prepare(root, tmp_path)
        except Unavailable as exc:
            pytest.skip(str(exc))
        monkeypatch.chdir(tmp_path / case.cwd)
        before, scratch_before = tree_state(root), scratch_state(tmp_path, root)
        res = run(*args)  # catch_exceptions=False: a traceback fails the test
        after, scratch_after = tree_state(root), scratch_state(tmp_path, root)
    finally:
        monkeypatch.chdir(tmp_path)
        undo(root, tmp_path)
    ran = Ran(res.exit_code, res.stdout.encode(), res.stderr.encode())
    _counts, problems = judge(
        case, ran, before=before, after=after, reference=ref, scratch_before=scratch_before, scratch_after=scratch_after
    )
    _assert_as_expected(case, ran, problems)


SAMPLE = (
    "root of 300 characters", "NUL in a spec", "spec nested 5,000 deep", "common_mps.py with mixed tabs",
    "folders 1,200 deep under aten/src/ATen/native", "ESC in a .mm kernel name, check text",
    "ESC in a REGISTER_* argument, check github", "ESC in --root", "pyproject.toml baseline = ../outside/x.json",
    "xfail by subscript assignment",
)
AS_PROCESSES = [c for c in CASES if c.needs_process or c.id in SAMPLE]


@pytest.mark.parametrize("case", AS_PROCESSES, ids=lambda c: c.id)
def test_hostile_input_as_a_process(case, process_tree: Path, process_reference, tmp_path: Path):
    root = _fresh(process_tree, tmp_path)
    try:
        try:
            args = case.prepare(root, tmp_path)
        except Unavailable as exc:
            pytest.skip(str(exc))
        before, scratch_before = tree_state(root), scratch_state(tmp_path, root)
        ran = run_process(case, args, tmp_path, timeout=120)
        after, scratch_after = tree_state(root), scratch_state(tmp_path, root)
    finally:
        undo(root, tmp_path)
    _counts, problems = judge(
        case, ran, before=before, after=after, reference=process_reference[0],
        scratch_before=scratch_before, scratch_after=scratch_after,
    )
    _assert_as_expected(case, ran, problems)


def test_a_kill_at_random_moments_is_found_and_recovered(process_tree: Path, process_reference, tmp_path: Path):
    """SIGKILL a new-op while staging, among its renames and at a random moment: a journal left
    is reported by plain check and the next new-op, and recover ends with a whole tree (the
    untouched or the applied one) and no temporary file. The trial script runs 20."""
    reference, runtime = process_reference
    counts, failures = kill_trial(process_tree, tmp_path, runs=4, seed=20261126, reference=reference, runtime=runtime)
    assert not failures, failures
    assert counts["tries"] == 4 and not any(counts.get(k) for k in MUST_BE_ZERO), counts
    assert counts["half states seen"] == counts["half states reported"]

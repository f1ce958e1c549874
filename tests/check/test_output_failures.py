"""``mpsgen check`` when its output fails (a full disk, a closed stream), as a real process:
after --fix or --baseline wrote, exit 3 with a true message where one can still be printed;
before anything is written, exit 2 and "nothing written" (as new-op and migrate); never a
traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mpsgen.tree import COMMON_MPS

from .conftest import UNARY_OPS_MM
from .test_options import faults


def _check(root: Path, *args: str, stdout: str = "pipe", stderr: str = "pipe") -> tuple[int, str]:
    """(exit status, what could be read of its output) of `python -m mpsgen check ARGS --root ROOT`."""

    def closing() -> None:
        if stdout == "closed":
            os.close(1)
        if stderr == "closed":
            os.close(2)

    with open("/dev/full", "wb") as full:
        pick = {"pipe": subprocess.PIPE, "full": full, "closed": subprocess.DEVNULL}
        proc = subprocess.run(
            [sys.executable, "-m", "mpsgen", "check", *args, "--root", str(root)], stdout=pick[stdout], stderr=pick[stderr],
            stdin=subprocess.DEVNULL, preexec_fn=closing, timeout=300,
        )
    return proc.returncode, (proc.stdout or b"").decode() + (proc.stderr or b"").decode()


@pytest.mark.parametrize("stdout, stderr", [("full", "pipe"), ("closed", "pipe"), ("pipe", "full"), ("pipe", "closed")])
def test_fix_then_a_failing_output_exits_3_saying_the_fixes_are_applied(check_tree: Path, stdout: str, stderr: str):
    faults(check_tree)
    code, text = _check(check_tree, "--fix", stdout=stdout, stderr=stderr)
    assert code == 3, text
    assert "Traceback" not in text and "nothing written" not in text, text
    if stderr == "pipe":
        lost = "writing to standard output failed (No space left on device)" if stdout == "full" else "standard output is closed"
        assert f"error: the fixes are applied (2 file(s) in {check_tree}); then {lost}, so the report is incomplete." in text
    assert "TORCH_IMPL_FUNC(sign_out_mps)" not in (check_tree / UNARY_OPS_MM).read_text()
    assert '"hypot": None' not in (check_tree / COMMON_MPS).read_text()


@pytest.mark.parametrize("stderr", ["full", "closed"])
def test_a_recorded_baseline_then_a_failing_stderr_exits_3(check_tree: Path, tmp_path: Path, stderr: str):
    baseline = tmp_path / "baseline.json"
    code, text = _check(check_tree, "--baseline", str(baseline), stderr=stderr)
    assert code == 3 and "Traceback" not in text, text
    assert baseline.is_file() and baseline.read_text().startswith("{")


@pytest.mark.parametrize("fmt", ["text", "json", "lintrunner", "github"])
@pytest.mark.parametrize("stdout", ["full", "closed"])
def test_plain_check_with_a_failing_stdout_exits_2_nothing_written(check_tree: Path, fmt: str, stdout: str):
    faults(check_tree)
    before = (check_tree / COMMON_MPS).read_bytes()
    code, text = _check(check_tree, "--format", fmt, stdout=stdout)
    said = "writing to standard output failed (No space left on device)" if stdout == "full" else "standard output is closed"
    assert code == 2 and f"error: {said}; nothing written." in text and "Traceback" not in text, text
    assert (check_tree / COMMON_MPS).read_bytes() == before

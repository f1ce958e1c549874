"""check's fast reading of its command line agrees with argparse's on every argv it accepts,
and hands every other one to argparse (same result or same error)."""

from __future__ import annotations

import argparse
import contextlib
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpsgen.cli_check import OPTIONS, parser, read_args

WORDS = [*OPTIONS, "--sel", "--roo", "-h", "--help", "--", "-", "--unknown", "--fix=1", "--root=", "--format=json",
         "--format=xml", "--select=MPS0", "text", "json", "lintrunner", "github", "xml", "a.mm", "dir/b.metal",
         "@paths.txt", "", "MPS001,MPS002", "-x", "--strict", "x=y"]


def _argparse(argv: list[str]) -> dict | None:
    p = parser()
    p.exit_on_error = False
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            return vars(p.parse_args(argv))
    except (argparse.ArgumentError, SystemExit):
        return None


@settings(max_examples=600, deadline=None)
@given(argv=st.lists(st.sampled_from(WORDS), max_size=7))
def test_read_args_agrees_with_argparse_or_hands_over(argv):
    fast = read_args(argv)
    if fast is None:
        return  # argparse reads it (its result, its message)
    assert vars(fast) == _argparse(argv), argv


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--root", "/t"],
        ["--root=/t", "--format", "lintrunner", "a.mm", "b.metal"],
        ["--fix", "--select", "MPS007", "--select=MPS009", "--ignore", "MPS008", "x.mm"],
        ["--strict", "--baseline", "base.json", "--explain", "MPS002"],
        ["--diff", "--fix", "--format=github", "@files"],
    ],
)
def test_hook_command_lines_are_read_without_argparse(argv):
    fast = read_args(argv)
    assert fast is not None
    assert vars(fast) == _argparse(argv)


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["--sel", "MPS0"], ["--format", "xml"], ["a.mm", "--fix"], ["--root"], ["--root", "-x"], ["--", "a.mm"], ["--fix=yes"]],
)
def test_anything_else_goes_to_argparse(argv):
    assert read_args(argv) is None

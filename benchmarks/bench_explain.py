"""`mpsgen explain` and `mpsgen coverage` on a practice tree of torch 2.13's real files
(native_functions.yaml, common_mps.py, the 1.4 MB common_methods_invocations.py, OpInfo
definitions, headers). Target (issue 25): whole process <= 0.5 s median each, with the
functor compile cache warm (explain plans the op's next step, coverage every candidate it
calls ready). Prints whole-process medians beside in-process ones.

    python benchmarks/bench_explain.py [--repeat N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.timing import installed_cli, median_ms, real_practice_tree, time_it, verdict  # noqa: E402
from mpsgen.report.explain import coverage, explain_op  # noqa: E402
from mpsgen.tree import PytorchTree  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    opts = ap.parse_args()
    with real_practice_tree() as root, installed_cli() as run:
        explain_op(PytorchTree(root), "heaviside")  # warm the page cache
        for op in ("heaviside", "acosh"):
            in_process = time_it(lambda: explain_op(PytorchTree(root), op), opts.repeat)
            verdict(f"explain {op}", run(["explain", op, "--root", root], opts.repeat), 500, in_process)
        in_process = time_it(lambda: coverage(PytorchTree(root)), opts.repeat)
        verdict("coverage", run(["coverage", "--root", root], opts.repeat), 500, in_process)
        print(f"coverage --format json{'':<17} whole process {median_ms(run(['coverage', '--format', 'json', '--root', root], opts.repeat))}")


if __name__ == "__main__":
    main()

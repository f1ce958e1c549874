"""`mpsgen explain` and `mpsgen coverage` on a practice tree of torch 2.13's real files
(native_functions.yaml, common_mps.py, the 1.4 MB common_methods_invocations.py, OpInfo
definitions, headers). Target: <= 0.5 s median each. Prints in-process and whole-process
medians.

    python benchmarks/bench_explain.py [--repeat N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.timing import median_ms, real_practice_tree, time_cli, time_it  # noqa: E402
from mpsgen.explain import coverage, explain_op  # noqa: E402
from mpsgen.tree import PytorchTree  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    opts = ap.parse_args()
    with real_practice_tree() as root:
        explain_op(PytorchTree(root), "heaviside")  # warm the page cache
        for op in ("heaviside", "acosh"):
            print(f"explain {op:<10} in-process {median_ms(time_it(lambda: explain_op(PytorchTree(root), op), opts.repeat))}")
            print(f"explain {op:<10} process    {median_ms(time_cli(['explain', op, '--root', str(root)], opts.repeat))}")
        print(f"coverage           in-process {median_ms(time_it(lambda: coverage(PytorchTree(root)), opts.repeat))}")
        print(f"coverage           process    {median_ms(time_cli(['coverage', '--root', str(root)], opts.repeat))}")
        print(f"coverage --json    process    {median_ms(time_cli(['coverage', '--format', 'json', '--root', str(root)], opts.repeat))}")


if __name__ == "__main__":
    main()

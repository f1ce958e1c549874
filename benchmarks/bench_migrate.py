"""Median wall time of `migrate-from-mpsgraph` dry runs and of `--list`, on the real torch 2.13
files plus mpsgen's practice sources (the MPSGraph .mm fixtures).

    python benchmarks/bench_migrate.py [--repeat N]

Targets: a migrate dry run (planning every edit, OpInfo and xfail lists included, and rendering
the diff) <= 1 s median; `--list` <= 0.5 s median. Each sample uses a fresh PytorchTree, so the
files are read anew. Not a timed test: it prints, it does not assert.
"""

from __future__ import annotations

import argparse
import statistics

from mpsgen.migrate import format_table, list_candidates, plan_migrate
from timing import median_ms, real_practice_tree, time_cli, time_it
from mpsgen.spec import FunctorSource, OpSpec
from mpsgen.tree import PytorchTree

CASES = [
    OpSpec("acosh", "unary", FunctorSource(expr="::metal::precise::acosh(x)"), ("int2float",)),
    OpSpec("sigmoid_backward", "binary", FunctorSource(expr="a * (T(1) - b) * b")),
    OpSpec("sub", "binary_alpha", FunctorSource(expr="a - alpha * b"), ("integer_no_bool",)),
]



def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    with real_practice_tree() as root:
        for spec in CASES:
            def dry_run(spec=spec):
                changeset = plan_migrate(PytorchTree(root), spec, allow_dtype_loss=True)
                assert changeset.diff()

            samples = time_it(dry_run, args.repeat)
            print(f"migrate-from-mpsgraph {spec.name} --dry-run: median {statistics.median(samples) * 1000:.0f} ms "
                  f"(n={len(samples)}; target <= 1000 ms)")

        def listing():
            assert format_table(list_candidates(PytorchTree(root)))

        samples = time_it(listing, args.repeat)
        print(f"migrate-from-mpsgraph --list: median {statistics.median(samples) * 1000:.0f} ms "
              f"(n={len(samples)}; target <= 500 ms)")

        # through the console script: interpreter start-up and imports included
        samples = time_cli(["migrate-from-mpsgraph", "acosh", "--allow-dtype-loss", "--dry-run", "--root", str(root)], args.repeat)
        print(f"`mpsgen migrate-from-mpsgraph acosh --dry-run` wall clock: {median_ms(samples)}")
        samples = time_cli(["migrate-from-mpsgraph", "--list", "--root", str(root)], args.repeat)
        print(f"`mpsgen migrate-from-mpsgraph --list` wall clock: {median_ms(samples)}")


if __name__ == "__main__":
    main()

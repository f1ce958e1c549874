"""Median wall time of `migrate-from-mpsgraph` dry runs and of `--list`, on the real torch 2.13
files plus mpsgen's practice sources (the MPSGraph .mm fixtures).

    python benchmarks/bench_migrate.py [--repeat N]

Targets: `mpsgen migrate-from-mpsgraph acosh --dry-run` (the shipped spec; planning every
edit, OpInfo and xfail lists included, and rendering the diff), whole process with the functor
compile cache warm, <= 0.5 s median (issue 25); `--list` <= 0.5 s median. In-process figures
use a fresh PytorchTree per sample, so the files are read anew.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.timing import installed_cli, median_ms, real_practice_tree, time_it, verdict  # noqa: E402
from mpsgen.plan.migrate import format_table, list_candidates, plan_migrate  # noqa: E402
from mpsgen.core.resources import resource_dir  # noqa: E402
from mpsgen.spec.op import FunctorSource, OpSpec, load_spec  # noqa: E402
from mpsgen.tree import PytorchTree  # noqa: E402

CASES = [
    OpSpec("acosh", "unary", FunctorSource(expr="::metal::precise::acosh(x)"), ("int2float",)),
    OpSpec("sigmoid_backward", "binary", FunctorSource(expr="a * (T(1) - b) * b")),
    # 2.13's sub_out calls add_stub: the command refuses until --stub names the stub (specs/sub.yaml)
    OpSpec("sub", "binary_alpha", FunctorSource(expr="a - alpha * b"), ("integer_no_bool",), stub="sub_stub"),
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

        # the commands a user runs: interpreter start-up and imports included
        shipped = load_spec(resource_dir("specs") / "acosh.yaml")
        in_process = time_it(lambda: plan_migrate(PytorchTree(root), shipped).diff(), args.repeat)
        with installed_cli() as run:
            samples = run(["migrate-from-mpsgraph", "acosh", "--dry-run", "--root", root], args.repeat)
            verdict("migrate-from-mpsgraph acosh --dry-run", samples, 500, in_process)
            samples = run(["migrate-from-mpsgraph", "--list", "--root", root], args.repeat)
            print(f"`mpsgen migrate-from-mpsgraph --list` whole process: {median_ms(samples)}")


if __name__ == "__main__":
    main()

"""Median wall time of `new-kernel` dry runs and of `try` on a kernel spec, on the real torch
2.13 files (the practice tree with the installed wheel's files).

    python benchmarks/bench_new_kernel.py [--repeat N]

Targets (issue 23), whole process, the body's compile cache warm:
- `mpsgen new-kernel _pdist_forward --dry-run` <= 1.5 s: _pdist_forward is an AOTI fallback op,
  so the plan includes regenerating c_shim_mps.h with the tree's own torchgen in a child
  process (its share is printed: the in-process plan without it);
- `mpsgen try _pdist_forward` (276 cases, float, the driver cached) <= 2.0 s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.timing import installed_cli, real_practice_tree, time_it, verdict  # noqa: E402
from mpsgen.spec.kernel import load_kernel_spec  # noqa: E402
from mpsgen.plan.newkernel import plan_new_kernel  # noqa: E402
from mpsgen.core.resources import resource_dir  # noqa: E402
from mpsgen.tree import PytorchTree  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    spec = load_kernel_spec(resource_dir("specs") / "kernels" / "_pdist_forward.yaml")
    with real_practice_tree() as root:
        in_process = time_it(lambda: plan_new_kernel(PytorchTree(root), spec).diff(), args.repeat)
        import mpsgen.plan.aoti as aoti

        real = aoti.sync_c_shim
        aoti.sync_c_shim = lambda changeset: None  # the plan without the torchgen child
        try:
            without = time_it(lambda: plan_new_kernel(PytorchTree(root), spec).diff(), args.repeat)
        finally:
            aoti.sync_c_shim = real
        print(f"new-kernel _pdist_forward planned in-process: median {statistics.median(in_process) * 1000:.0f} ms, "
              f"{statistics.median(without) * 1000:.0f} ms of it without the AOTI shim's torchgen child")
        with installed_cli() as run:
            samples = run(["new-kernel", "_pdist_forward", "--dry-run", "--root", root], args.repeat)
            ok = verdict("new-kernel _pdist_forward --dry-run", samples, 1500, in_process)
            tries = run(["try", "_pdist_forward"], args.repeat)
            ok = verdict("try _pdist_forward (cached driver)", tries, 2000) and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

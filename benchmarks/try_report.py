"""`mpsgen try` over the whole shipped spec library, as Markdown: one row per spec (kind, dtype
groups, per compared input->output dtype pair its sample count and largest abs / rel error,
skipped pairs as footnotes, pass or not), then per input dtype the largest errors over the
library and the spec each came from. Exit 1 when a spec mismatches (or cannot be tried).
Builds go to mpsgen's cache, as with `mpsgen try` (cold: every spec compiles with g++).

    python benchmarks/try_report.py [--samples N] [--jobs N]
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mpsgen.core.errors import MpsgenError  # noqa: E402
from mpsgen.core.resources import resource_dir  # noqa: E402
from mpsgen.spec.op import load_spec  # noqa: E402
from mpsgen.shim.trial import run_trial  # noqa: E402

INPUTS = ("float", "half", "bfloat", "long", "int", "short", "char", "uchar", "bool", "float2", "half2")


def num(x: float) -> str:
    """Compact: 0, 1, 255, 0.5, 9.8e-4, 4.3e9."""
    if x.is_integer() and x < 1e6:
        return str(int(x))
    if 0.01 <= x < 100:
        return f"{x:.2g}"
    mantissa, exponent = f"{x:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def trial(path: Path, samples: int):
    """The spec and its TrialResult, or the spec (None if it does not load) and the error."""
    spec = None
    try:
        spec = load_spec(path)
        return spec, run_trial(spec, samples=samples)
    except MpsgenError as exc:
        return spec, exc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=64, help="random values per dtype, beside the edge values (mpsgen try's default)")
    ap.add_argument("--jobs", type=int, default=2, help="specs tried in parallel")
    opts = ap.parse_args()
    if not (1 <= opts.samples <= 100_000 and opts.jobs >= 1):
        ap.error("--samples must be between 1 and 100000 (as for mpsgen try), --jobs at least 1")
    paths = sorted(resource_dir("specs").glob("*.yaml"))
    # threads suffice: each trial's time is g++ and the functor's runs (subprocesses) and torch
    # ops (which release the GIL); every spec builds into its own cache file (name-hash)
    with ThreadPoolExecutor(max_workers=opts.jobs) as pool:
        outcomes = list(pool.map(lambda path: trial(path, opts.samples), paths))

    notes: dict[str, int] = {}  # skip reason -> footnote number
    worst: dict[str, list] = {}  # input dtype -> [pairs, max abs, its spec, max rel, its spec]
    failed = 0
    print("| spec | kind | dtype groups | compared: n: max abs / max rel | skipped | pass |")
    print("|---|---|---|---|---|---|")
    for path, (spec, result) in zip(paths, outcomes):
        name = spec.name if spec else path.stem
        head = f"| {name} | {spec.kind if spec else '?'} | {', '.join(spec.dtypes) if spec else '?'} |"
        if isinstance(result, MpsgenError):
            failed += 1
            print(f"{head} error: {str(result).splitlines()[0].replace('|', '/')} | | **no** |")
            continue
        compared, skipped = [], []
        for r in result.results:
            pair = f"{r.metal_in}→{r.metal_out}"
            if r.skipped:
                skipped.append(f"{pair} [{notes.setdefault(r.skipped, len(notes) + 1)}]")
                continue
            compared.append(f"{pair} {r.samples}: {num(r.max_abs)} / {num(r.max_rel)}" + (f" ({r.mismatches} mismatches)" if r.mismatches else ""))
            w = worst.setdefault(r.metal_in, [0, 0.0, "—", 0.0, "—"])
            w[0] += 1
            if r.max_abs > w[1]:
                w[1:3] = [r.max_abs, name]
            if r.max_rel > w[3]:
                w[3:5] = [r.max_rel, name]
        failed += not result.ok
        print(f"{head} {'<br>'.join(compared)} | {', '.join(skipped)} | {'yes' if result.ok else '**no**'} |")
    print("".join(f"\n- [{number}] {reason}" for reason, number in notes.items()))
    print(f"\n{len(paths) - failed} of {len(paths)} specs pass ({opts.samples} random samples per dtype beside the edge values).")
    print("Max abs and max rel are each the largest over all samples; a sample passes when |diff| <= atol + rtol * |expected|")
    print("(torch.testing's defaults), so a large abs error next to float's max, or rel next to zero, can pass.\n")

    print("| input | pairs compared | max abs err (spec) | max rel err (spec) |")
    print("|---|---|---|---|")
    for dtype in INPUTS:
        if dtype not in worst:
            print(f"| {dtype} | 0 | — | — |")
            continue
        pairs, abs_err, abs_spec, rel_err, rel_spec = worst[dtype]
        print(f"| {dtype} | {pairs} | {num(abs_err)} ({abs_spec}) | {num(rel_err)} ({rel_spec}) |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

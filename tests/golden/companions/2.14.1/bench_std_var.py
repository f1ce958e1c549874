"""Benchmark var, std, var_mean and std_mean before and after the change: std_var_stub moves from MPSGraph to the
std_var_reduction_general Metal kernel. Each op is timed on reduce-inner (the reduced dim
contiguous), reduce-outer (the reduced dim strided, the kept one contiguous) and full
reductions, over (rows, columns) inputs of 1,024 to 33,554,432 elements and LLM-like shapes
(one token, a 2048-token prefill, vocabulary logits), for every input dtype the ops take,
with warm-up and torch.mps.synchronize(). It prints a markdown table (before, after, speed-up;
times in µs) for the PR description.

Written by `mpsgen migrate-from-mpsgraph var --with-bench`; it needs only PyTorch. Keep it, and the
JSON files it writes, outside the PyTorch checkout so they stay when you switch commits.

Run it on the Mac twice, each time with PyTorch built from that commit:

    # PyTorch built from the base commit (before the change: MPSGraph):
    python bench_std_var.py --label before
    # PyTorch built from your branch (the change applied: the Metal kernel):
    python bench_std_var.py --label after
    python bench_std_var.py --compare bench_std_var_before.json bench_std_var_after.json

The last command prints the table; paste it into the PR description. --quick runs a small size
set (a check that the script works, not a benchmark); --device cpu times the CPU op; --ops,
--dtypes, --reductions and --sizes narrow the run. Close other GPU work and keep the Mac on
power while it runs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time

import torch

OP = "std_var"  # what the result files time: the ops of std_var_stub
# the ops reaching std_var_stub, each with the keyword arguments it is called with
OPS = [
    ("var", {'correction': 1}),
    ("std", {'correction': 0}),
    ("var_mean", {'correction': 2}),
    ("std_mean", {'correction': 1}),
]
DTYPES = ["float32", "float16", "bfloat16"]  # the input dtypes the ops take (each reaches the kernel, cast or not)
SIZES = [1024, 65536, 1048576, 33554432]
QUICK_SIZES = [256, 4096]
# (rows, columns): one token's activations, a 2048-token prefill, vocabulary logits
LLM_SHAPES = [[1, 4096], [2048, 4096], [32, 32000]]
REDUCTIONS = ["inner", "outer", "full"]
LEGEND = {
    "inner": "op(x, dim=1) of a contiguous (rows, columns) x: the reduced dim contiguous",
    "outer": "op(x, dim=0): the reduced dim strided, the kept one contiguous",
    "full": "op(x): every element into one",
}


def _shape(n: int) -> tuple[int, int]:
    """(rows, columns) of about equal length holding n elements (n a power of two or not)."""
    rows = 1 << (max(n.bit_length() - 1, 0) // 2)
    while n % rows:
        rows //= 2
    return rows, n // rows


def _input(dtype: torch.dtype, shape: tuple[int, int], device: str, gen: torch.Generator) -> torch.Tensor:
    """Values near 1 (a long product neither overflows nor vanishes at once), made on the CPU, seeded."""
    if dtype == torch.bool:
        return (torch.rand(shape, generator=gen) < 0.99).to(device)
    if dtype.is_floating_point:
        return (1 + 0.01 * torch.randn(shape, generator=gen)).to(dtype).to(device)
    return torch.randint(1, 3, shape, generator=gen).to(dtype).to(device)


def _call(op: str, kwargs: dict, reduction: str):
    fn = getattr(torch, op)
    if reduction == "full":
        return lambda x: fn(x, **kwargs)
    dim = 1 if reduction == "inner" else 0
    return lambda x: fn(x, dim, **kwargs)


def _time(call, sync, min_time: float, repeats: int, warmup: int) -> float:
    """Seconds per call: the median of ``repeats`` timings of as many calls as fill ``min_time``."""
    for _ in range(warmup):
        call()
    sync()
    calls = 1
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            call()
        sync()
        elapsed = time.perf_counter() - start
        if elapsed >= min_time or calls >= 1 << 16:
            break
        calls = min(1 << 16, max(calls * 2, int(calls * min_time / max(elapsed, 1e-9) * 1.2)))
    samples = [elapsed / calls]
    for _ in range(repeats - 1):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        sync()
        samples.append((time.perf_counter() - start) / calls)
    return statistics.median(samples)


def _machine() -> str:
    if sys.platform == "darwin":
        try:
            chip = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True, timeout=5).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            chip = ""
        return ", ".join(part for part in (chip, f"macOS {platform.mac_ver()[0]}") if part)
    return f"{platform.system()} {platform.machine()}"


def _first_line(exc: BaseException) -> str:
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return text if len(text) <= 100 else text[:99] + "..."



def run(args: argparse.Namespace) -> int:
    device = args.device
    if device == "mps" and not (hasattr(torch.backends, "mps") and torch.backends.mps.is_available()):
        print("error: MPS is not available here (torch.backends.mps.is_available() is False); run it on a Mac "
              "with Apple silicon, or pass --device cpu to time the CPU op.", file=sys.stderr)
        return 2
    if device == "mps" and os.environ.get("PYTORCH_ENABLE_MPS_FALLBACK", "0") not in ("", "0"):
        print("warning: PYTORCH_ENABLE_MPS_FALLBACK is set: an op this PyTorch lacks on MPS is timed on the CPU.", file=sys.stderr)
    sync = torch.mps.synchronize if device == "mps" else (lambda: None)
    if args.sizes:
        shapes = [_shape(n) for n in args.sizes]
    elif args.quick:
        shapes = [_shape(n) for n in QUICK_SIZES]
    else:
        shapes = [_shape(n) for n in SIZES] + [tuple(s) for s in LLM_SHAPES]
    min_time, repeats, warmup = (0.002, 3, 1) if args.quick else (0.05, 5, 3)
    ops = [o for o in OPS if not args.ops or o[0] in args.ops]
    dtypes = [d for d in DTYPES if not args.dtypes or d in args.dtypes]
    reductions = [r for r in REDUCTIONS if not args.reductions or r in args.reductions]
    results = []
    for name in dtypes:
        dtype = getattr(torch, name)
        for shape in shapes:
            gen = torch.Generator().manual_seed(shape[0] * 131 + shape[1])
            try:
                x = _input(dtype, shape, device, gen)
                why = None
            except (RuntimeError, TypeError, NotImplementedError) as exc:
                x, why = None, f"no {name} inputs on {device}: {_first_line(exc)}"
            for op, kwargs in ops:
                print(f"{op} {name} {shape[0]}x{shape[1]} on {device}...", file=sys.stderr, flush=True)
                for reduction in reductions:
                    row = {"op": op, "dtype": name, "reduction": reduction, "shape": f"{shape[0]}x{shape[1]}",
                           "seconds": None, "error": why}
                    if x is not None:
                        call = _call(op, kwargs, reduction)
                        try:
                            row["seconds"] = _time(lambda: call(x), sync, min_time, repeats, warmup)
                        except (RuntimeError, TypeError, NotImplementedError) as exc:
                            row["error"] = _first_line(exc)
                    results.append(row)
            x = None  # (free this shape's tensor before the next one's)
            if device == "mps":
                torch.mps.empty_cache()
    out = args.out or f"bench_{OP}_{args.label}.json"
    record = {
        "op": OP, "label": args.label, "device": device, "torch": torch.__version__,
        "git": (getattr(torch.version, "git_version", "") or "")[:12], "machine": _machine(),
        "quick": bool(args.quick), "results": results,
    }
    tmp = f"{out}.tmp{os.getpid()}"
    with open(tmp, "w") as fh:
        json.dump(record, fh, indent=1)
    os.replace(tmp, out)
    timed = sum(r["seconds"] is not None for r in results)
    print(f"wrote {out}: {timed} of {len(results)} cases timed on {device} (torch {torch.__version__}).", file=sys.stderr)
    for message in dict.fromkeys(f"{r['op']} {r['dtype']}: {r['error']}" for r in results if r["error"]):
        print(f"  not timed: {message}", file=sys.stderr)
    return 0 if timed or not results else 1


def _micros(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    us = seconds * 1e6
    return f"{us:.2f}" if us < 10 else f"{us:.1f}" if us < 1000 else f"{us:,.0f}"


def _load(path: str) -> dict:
    try:
        with open(path) as fh:
            record = json.load(fh)
        record["results"] = [r for r in record["results"] if isinstance(r, dict)]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"error: {path}: not a result file of this script ({_first_line(exc)}).", file=sys.stderr)
        sys.exit(2)
    if record.get("op") != OP:
        print(f"error: {path} times {record.get('op')!r}, not {OP}.", file=sys.stderr)
        sys.exit(2)
    return record



def compare(before_path: str, after_path: str) -> int:
    before, after = _load(before_path), _load(after_path)
    key = lambda r: (r.get("op"), r.get("dtype"), r.get("reduction"), r.get("shape"))  # noqa: E731
    times_b = {key(r): r.get("seconds") for r in before["results"]}
    times_a = {key(r): r.get("seconds") for r in after["results"]}
    keys = list(dict.fromkeys(list(times_b) + list(times_a)))
    lb, la = before.get("label", "before"), after.get("label", "after")
    db, da = before.get("device", "?"), after.get("device", "?")

    def build(record: dict) -> str:
        return f"torch {record.get('torch', '?')}" + (f" ({record['git']})" if record.get("git") else "")

    lines = [
        f"{', '.join(f'`{o[0]}`' for o in OPS)}, median time per call in µs; {lb}: {build(before)} on {db}, {la}: {build(after)} on {da}; {after.get('machine') or before.get('machine') or ''}".rstrip("; "),
        "",
        f"| op | dtype | reduction | shape | {lb} ({db}) | {la} ({da}) | speed-up |",
        "|:--|:--|:--|--:|--:|--:|--:|",
    ]
    ratios = []
    for k in keys:
        tb, ta = times_b.get(k), times_a.get(k)
        if tb and ta:
            ratio = tb / ta
            ratios.append(ratio)
            speed = f"**{ratio:.2f}x**" if ratio < 0.95 else f"{ratio:.2f}x"
        else:
            speed = "n/a"
        op, dtype, reduction, shape = k
        lines.append(f"| {op} | {dtype} | {reduction} | {shape} | {_micros(tb)} | {_micros(ta)} | {speed} |")
    lines.append("")
    if ratios:
        mean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        slower = sum(r < 0.95 for r in ratios)
        lines.append(
            f"Speed-up ({lb} / {la}): geometric mean {mean:.2f}x over {len(ratios)} cases, "
            f"{min(ratios):.2f}x to {max(ratios):.2f}x" + (f"; {slower} more than 5% slower (in bold)." if slower else ".")
        )
    used = [r for r in REDUCTIONS if any(k[2] == r for k in keys)]
    lines.append("Reductions: " + "; ".join(f"{r} = {LEGEND[r]}" for r in used) + ".")
    for label, record in ((lb, before), (la, after)):
        for message in dict.fromkeys(f"{r.get('op')} {r.get('dtype')} ({r.get('error')})" for r in record["results"] if r.get("error")):
            lines.append(f"Not timed in {label}: {message}.")
    if before.get("quick") or after.get("quick"):
        lines.append("(--quick: a check that the script runs, not a benchmark.)")
    print("\n".join(lines))
    return 0


def _csv(kind):
    def parse(text: str) -> list:
        try:
            return [kind(part) for part in text.split(",") if part.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: a comma-separated list expected") from None

    return parse



def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--label", help="name of this run (before, after): the results go to bench_%s_LABEL.json" % OP)
    parser.add_argument("--device", choices=("mps", "cpu"), default="mps", help="where the ops run (default mps)")
    parser.add_argument("--quick", action="store_true", help="a small size set and short timings: checks that the script runs")
    parser.add_argument("--ops", type=_csv(str), help="only these ops, e.g. %s" % OPS[0][0])
    parser.add_argument("--dtypes", type=_csv(str), help="only these dtypes, e.g. float32,float16")
    parser.add_argument("--reductions", type=_csv(str), help="only these of inner,outer,full")
    parser.add_argument("--sizes", type=_csv(int), help="element counts to time, e.g. 1024,16777217 (no LLM shapes then)")
    parser.add_argument("--out", help="the result file (default bench_%s_LABEL.json here)" % OP)
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="print the markdown table of two result files")
    args = parser.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    if not args.label or not all(ch.isalnum() or ch in "-_." for ch in args.label):
        parser.error("give --label NAME (letters, digits, - _ .), e.g. --label before; or --compare BEFORE.json AFTER.json")
    for flag, given, known in (("--ops", args.ops, [o[0] for o in OPS]), ("--dtypes", args.dtypes, DTYPES),
                               ("--reductions", args.reductions, REDUCTIONS)):
        unknown = sorted(set(given or ()) - set(known))
        if unknown:
            parser.error(f"{flag} {','.join(unknown)}: one of {', '.join(known)}")
    if args.sizes and min(args.sizes) < 1:
        parser.error("--sizes: element counts are 1 or more")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())

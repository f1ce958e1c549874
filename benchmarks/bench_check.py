"""How fast is ``mpsgen check`` on a tree the size of PyTorch's?

Builds, in a temporary folder, a tree with the real native_functions.yaml of the installed
torch wheel (~600 KB), its ATen headers, and ~70 ``.mm`` / ~120 ``.metal`` files generated
from mpsgen's own practice-tree sources (ops renamed per copy, so names stay unique), sized
like upstream's (``--mm-kb``, ``--metal-kb`` per file). Then prints, from the same run:

* the median wall time of ``check`` on the whole tree (target: <= 150 ms),
* the median wall time of torchgen's ``parse_native_yaml`` on the same yaml
  (check must be >= 10x faster),
* the median of ``check`` on the tree doubled (twice the files, yaml twice as long).

Run: ``python benchmarks/bench_check.py [--runs 9]``. Needs torch==2.13.0 (the test extra).
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mpsgen.check import run_check
from mpsgen.practice import PRACTICE_TREE, build_practice_tree, real_file_sources
from mpsgen.tree import KERNELS_DIR, NATIVE_FUNCTIONS, OPERATIONS_DIR, PytorchTree

TARGET_MS = 150.0
SPEEDUP = 10.0

_FUNCTOR = re.compile(r"^struct (\w+)_functor", re.M)


def _templates(suffix: str) -> list[str]:
    folder = PRACTICE_TREE / (OPERATIONS_DIR if suffix == ".mm" else KERNELS_DIR)
    return [p.read_text() for p in sorted(folder.glob("*" + suffix))]


def _renamer():
    ops = sorted({op for t in _templates(".metal") for op in _FUNCTOR.findall(t)} | {"acosh", "asinh", "atanh", "frac", "sign", "sgn", "xlogy", "pow", "sigmoid_backward", "tanh_backward", "threshold"}, key=len, reverse=True)
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, ops)) + r")(?=_|\b)")
    return lambda text, tag: pattern.sub(lambda m: f"{m.group(1)}{tag}", text)


def _generate(templates: list[str], count: int, kb: float, prefix: str, suffix: str, start: int = 0) -> dict[str, str]:
    """``count`` files of about ``kb`` KB each: template bodies repeated with renamed ops."""
    rename = _renamer()
    files = {}
    for i in range(start, start + count):
        template = templates[i % len(templates)]
        parts, size, k = [], 0, 0
        while size < kb * 1024:
            part = rename(template, f"_g{i}x{k}")
            if k:  # one preamble per file: drop includes of repeated copies
                part = "\n".join(ln for ln in part.split("\n") if not ln.startswith("#include"))
            parts.append(part)
            size += len(part)
            k += 1
        files[f"{prefix}/Gen{i:03d}{suffix}"] = "\n".join(parts)
    return files


def _doubled_yaml(text: str) -> str:
    copy = re.sub(r"^- func: (\w+)", r"- func: \1_dup", text, flags=re.M)
    copy = re.sub(r"^(    [A-Za-z0-9_, ]+:\s*)(\w+)", r"\1\2_dup", copy, flags=re.M)
    return text + "\n" + copy


def build_tree(dest: Path, mm: int, metal: int, mm_kb: float, metal_kb: float, double: bool = False) -> Path:
    root, used_real = build_practice_tree(dest, real=True)
    if not used_real:
        sys.exit("torch==2.13.0 must be installed (pip install -e '.[test]'): the benchmark uses its native_functions.yaml")
    factor = 2 if double else 1
    for rel, text in _generate(_templates(".mm"), mm * factor, mm_kb, OPERATIONS_DIR, ".mm").items():
        (root / rel).write_text(text)
    for rel, text in _generate(_templates(".metal"), metal * factor, metal_kb, KERNELS_DIR, ".metal").items():
        (root / rel).write_text(text)
    if double:
        yaml = root / NATIVE_FUNCTIONS
        yaml.write_text(_doubled_yaml(yaml.read_text()))
    return root


def tree_size(root: Path) -> str:
    mm = list((root / OPERATIONS_DIR).glob("*.mm"))
    metal = list((root / KERNELS_DIR).glob("*.metal"))
    kb = lambda files: sum(f.stat().st_size for f in files) / 1024  # noqa: E731
    yaml_kb = (root / NATIVE_FUNCTIONS).stat().st_size / 1024
    return f"{len(mm)} .mm ({kb(mm):.0f} KB), {len(metal)} .metal ({kb(metal):.0f} KB), yaml {yaml_kb:.0f} KB"


def time_check(root: Path, runs: int) -> tuple[float, int]:
    times, n = [], 0
    for _ in range(runs):
        start = time.perf_counter()
        result = run_check(PytorchTree(root))  # a fresh tree each run: nothing cached
        times.append(time.perf_counter() - start)
        n = len(result.findings)
    return statistics.median(times) * 1000, n


def time_torchgen(yaml_path: Path, runs: int) -> float:
    import torchgen.gen as gen

    tags = Path(gen.__file__).parent / "packaged/ATen/native/tags.yaml"
    times = []
    for _ in range(runs):
        gen._GLOBAL_PARSE_NATIVE_YAML_CACHE.clear()
        gen._GLOBAL_PARSE_TAGS_YAML_CACHE.clear()
        start = time.perf_counter()
        gen.parse_native_yaml(str(yaml_path), str(tags))
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=9, help="check runs per tree (median)")
    ap.add_argument("--torchgen-runs", type=int, default=3)
    ap.add_argument("--mm", type=int, default=70)
    ap.add_argument("--metal", type=int, default=120)
    ap.add_argument("--mm-kb", type=float, default=20.0, help="size of each generated .mm (upstream's average is ~20 KB)")
    ap.add_argument("--metal-kb", type=float, default=6.0, help="size of each generated .metal")
    args = ap.parse_args()
    if real_file_sources() is None:
        sys.exit("torch==2.13.0 must be installed (pip install -e '.[test]')")

    tmp = Path(tempfile.mkdtemp(prefix="mpsgen-bench-"))
    try:
        base = build_tree(tmp / "base", args.mm, args.metal, args.mm_kb, args.metal_kb)
        doubled = build_tree(tmp / "double", args.mm, args.metal, args.mm_kb, args.metal_kb, double=True)
        run_check(PytorchTree(base))  # warm imports and the page cache
        print(f"tree:          {tree_size(base)}")
        check_ms, n = time_check(base, args.runs)
        print(f"check:         median {check_ms:7.1f} ms over {args.runs} runs ({n} findings)  target <= {TARGET_MS:.0f} ms: {'ok' if check_ms <= TARGET_MS else 'MISSED'}")
        tg_ms = time_torchgen(base / NATIVE_FUNCTIONS, args.torchgen_runs)
        ratio = tg_ms / check_ms
        print(f"torchgen:      median {tg_ms:7.1f} ms over {args.torchgen_runs} runs of parse_native_yaml on the same yaml")
        print(f"speed-up:      check is {ratio:.1f}x faster than parse_native_yaml  (needs >= {SPEEDUP:.0f}x: {'ok' if ratio >= SPEEDUP else 'MISSED'})")
        print(f"doubled tree:  {tree_size(doubled)}")
        double_ms, n2 = time_check(doubled, args.runs)
        print(f"check doubled: median {double_ms:7.1f} ms over {args.runs} runs ({n2} findings), {double_ms / check_ms:.2f}x the base tree")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

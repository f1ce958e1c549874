"""The row -> stub resolver on a checkout-sized set of native .cpp files.

A real PyTorch checkout has ~10 MB of aten/src/ATen/native/**/*.cpp; the wheel ships none,
so this script writes a synthetic set of that size (TORCH_IMPL_FUNC blocks, macro instances,
plain out= functions, comments and string literals around them) next to the real torch 2.13
yaml and headers, then resolves every row with a CPU/CUDA kernel, as `check` does.
Prints medians: the first resolution (index built) and a whole `mpsgen check` process.

    python benchmarks/bench_resolver.py [--repeat N] [--mb SIZE]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.timing import median_ms, real_practice_tree, time_it  # noqa: E402
from mpsgen.tree import NATIVE_FUNCTIONS, PytorchTree  # noqa: E402
from mpsgen.tree.native_yaml import scan_native_functions  # noqa: E402
from mpsgen.tree.resolver import StubResolver, host_kernel  # noqa: E402

FILLER = """
// A helper with a comment {{ that has braces }} and a "string with ( parens" inside.
static inline int64_t helper_{i}(int64_t a, int64_t b) {{
  if (a > b) {{
    return a - b;  // "quoted"
  }}
  return b - a;
}}
"""


def write_cpp(root: Path, rows, megabytes: float) -> int:
    native = root / "aten/src/ATen/native"
    kernels = [(e, host_kernel(e)) for e in rows if host_kernel(e)]
    per_file = max(1, len(kernels) // 150)
    size = 0
    files = 0
    for n in range(0, len(kernels), per_file):
        chunk = kernels[n : n + per_file]
        parts = ["#include <ATen/native/DispatchStub.h>\n\nnamespace at::native {\n"]
        for j, (e, k) in enumerate(chunk):
            if j % 3 == 0:
                parts.append(f"TORCH_IMPL_FUNC({k})(const Tensor& self, const Tensor& out) {{\n  {e.base}_stub(device_type(), *this);\n}}\n")
            elif j % 3 == 1:
                parts.append(f"Tensor& {k}(const Tensor& self, Tensor& out) {{\n  auto iter = TensorIterator::unary_op(out, self);\n  {e.base}_stub(iter.device_type(), iter);\n  return out;\n}}\n")
            else:
                parts.append(f"#define IMPL_{files}_{j}(K, S) TORCH_IMPL_FUNC(K)(const Tensor& self, const Tensor& out) {{ S(device_type(), *this); }}\nIMPL_{files}_{j}({k}, {e.base}_stub)\n")
        body = "".join(parts)
        fill_target = int(megabytes * 1e6 / 150)
        i = 0
        while len(body) < fill_target:
            body += FILLER.format(i=i)
            i += 1
        body += "} // namespace at::native\n"
        (native / f"Synthetic{files}.cpp").write_text(body)
        size += len(body)
        files += 1
    return size


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--mb", type=float, default=10.0)
    args = ap.parse_args()
    with real_practice_tree() as root:
        tree = PytorchTree(root)
        table = scan_native_functions(tree.read(NATIVE_FUNCTIONS).text)
        size = write_cpp(root, table.entries, args.mb)
        rows = [e for e in table.entries if host_kernel(e)]

        def resolve_all():
            resolver = StubResolver.for_tree(PytorchTree(root))
            return [resolver.resolve(e) for e in rows]

        results = resolve_all()
        by_rule: dict[str, int] = {}
        for r in results:
            by_rule[r.rule or "none"] = by_rule.get(r.rule or "none", 0) + 1
        print(f"tree: {size / 1e6:.1f} MB of synthetic native .cpp, {len(rows)} rows with a CPU/CUDA kernel")
        print(f"rules: {by_rule}")
        one = time_it(lambda: StubResolver.for_tree(PytorchTree(root)).resolve(rows[0]), args.repeat)
        print(f"in-process, resolver built + first row:  {median_ms(one)}")
        full = time_it(resolve_all, args.repeat)
        print(f"in-process, every row:                   {median_ms(full)}")
        # not timing.time_cli: check exits 1 on this tree's findings
        cli = time_it(
            lambda: subprocess.run([sys.executable, "-m", "mpsgen", "check", "--root", str(root)], capture_output=True),
            args.repeat,
        )
        print(f"whole process, mpsgen check:             {median_ms(cli)}")


if __name__ == "__main__":
    main()

"""How fast is ``mpsgen check`` on a tree the size of PyTorch's?

Builds, in a temporary folder, a tree with the real native_functions.yaml of the installed
torch wheel (~600 KB), its ATen headers, ~70 ``.mm`` (~1.5 MB) / ~120 ``.metal`` (~1.1 MB)
files generated from mpsgen's own practice-tree sources (ops renamed per copy, so names stay
unique), and native ``.cpp`` sources of upstream's size, which check's row -> stub resolver
reads: 182 files, 2.5 MB, of real C++ (the wheel's own ATen headers, read at run time), and a
3.7 MB generated table of numbers standing for SobolEngineOpsUtils.cpp (sizes counted in
pytorch/pytorch: 131 current native/*.cpp of 2.14 MB besides that table, 51 files and 0.37 MB
in the sub-folders the resolver enters). Then prints, from the same run:

* the median wall time of ``check`` on the whole tree, in-process and as whole processes,
* the median wall time of torchgen's ``parse_native_yaml`` on the same yaml (whole
  processes: check must be >= 3x faster),
* the median of ``check`` on the tree doubled (twice the files, yaml twice as long): linear
  cost, at most 2.2x the base tree's.

Two shapes of tree, the same size in bytes and files:

* realistic (default), shaped like upstream: one UnaryKernel- and one BinaryKernel-like
  .metal file registering a few hundred (op, dtype) kernels each (~260 and ~320), and ~118
  other kernel files of ~8.5 KB that register a handful (4) each and otherwise hold
  templated kernels instantiated through their own ``INSTANTIATE_*`` macros, as
  Indexing.metal or Bucketization.metal do: ~1,200 registrations in all. On the host side,
  one UnaryKernel.mm and one BinaryKernel.mm call exec_*_kernel with the names the .metal
  files register; the other ~68 .mm are MPSGraph code (TORCH_IMPL_FUNC blocks, *_mps
  functions) whose kernels are the ones the real yaml's ``MPS:`` lines name, as upstream's
  are. A mostly clean tree then: ~140 findings, from yaml rows the practice sources do not
  back (MPS002).
* ``--dense``: the original generator, every file a repetition of the practice sources:
  ~14,600 registrations (~29,000 in the doubled tree; every .metal is all REGISTER_* lines,
  ~12x upstream's density), 40% of the .mm files kernel-dispatch code whose exec_*_kernel
  names mostly match nothing, and renamed MPSGraph kernels no yaml row names: ~4,900
  findings (3,450 MPS003, ~990 MPS007). A stress test; its numbers follow the realistic
  ones with ``--dense``.

How the realistic tree compares with upstream's files (counted in 12 of pytorch/pytorch's
operations/*.mm, 443 K chars, and 4 of its kernels/*.metal, 65 K chars): per 1,000 characters
of .mm it holds 5x the TORCH_IMPL_FUNCs (1.2 vs 0.22) and 9x the ``#define`` lines (0.38 vs
0.04), but a sixth of the ``mps(`` (0.06 vs 0.33) and almost none of the block comments
(0.003 vs 0.15); its .metal files hold a third of upstream's REGISTER_ lines per character
(0.59 vs 1.7) and of its functor structs (0.18 vs 0.52). Neither clearly lighter nor heavier.

Whole-process times are given twice: with this installation's interpreter, whose ``.pth``
start-up hooks may import packages (here ~25 ms of it), and in a fresh virtual environment
of the same Python through pip's ``mpsgen`` launcher (no hooks: a contributor's venv, and the
command a hook's ``entry: mpsgen check`` runs; check needs only the standard library). Check
reads everything in one process. (It used to fork a child that read part of the tree
meanwhile: on this tree, in a fresh venv, that saved 22 ms of a 114 ms run, 19%, under the
20% a piece of machinery must save to stay; it was removed with the shared-memory plumbing.)

``check`` does the same work on both: it scans every file in full and expands (op, dtype)
registrations only where MPS004/MPS006/MPS009 need them. The dense tree costs more because
it has ~5x the registration statements, ~40x the exec_*_kernel calls and ~30x the findings
to build.

Run: ``python benchmarks/bench_check.py [--runs 9] [--dense]``. Needs torch==2.13.0 (the
test extra).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.timing import clean_venv, compiled_install, console_script, time_cli, time_process  # noqa: E402
from mpsgen.check import run_check  # noqa: E402
from mpsgen.tree.index import Index
from mpsgen.report.practice import PRACTICE_TREE, build_practice_tree, real_file_sources
from mpsgen.tree.resolver import native_cpp_files
from mpsgen.tree import KERNELS_DIR, NATIVE_DIR, NATIVE_FUNCTIONS, OPERATIONS_DIR, PytorchTree

LINEAR = 2.2  # twice the tree may cost at most this many times the time: linear, with some noise

_FUNCTOR = re.compile(r"^struct (\w+)_functor", re.M)


def _templates(suffix: str) -> list[str]:
    folder = PRACTICE_TREE / (OPERATIONS_DIR if suffix == ".mm" else KERNELS_DIR)
    return [p.read_text() for p in sorted(folder.glob("*" + suffix))]


def _renamer():
    ops = sorted({op for t in _templates(".metal") for op in _FUNCTOR.findall(t)} | {"acosh", "asinh", "atanh", "frac", "sign", "sgn", "xlogy", "pow", "sigmoid_backward", "tanh_backward", "threshold"}, key=len, reverse=True)
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, ops)) + r")(?=_|\b)")
    return lambda text, tag: pattern.sub(lambda m: f"{m.group(1)}{tag}", text)


def _generate(templates: list[str], count: int, kb: float, prefix: str, suffix: str, start: int = 0) -> dict[str, str]:
    """``count`` files of about ``kb`` KB each: template bodies repeated with renamed ops, and
    renamed macros: as in upstream's files, each macro of a file is its own (the copies of one
    macro would be expanded once, making the file several times cheaper to scan per KB)."""
    rename = _renamer()
    files = {}
    for i in range(start, start + count):
        template = templates[i % len(templates)]
        macros = re.findall(r"^#[ \t]*define[ \t]+(\w+)\(", template, re.M)
        own_macro = re.compile(r"\b(" + "|".join(map(re.escape, macros)) + r")\b") if macros else None
        parts, size, k = [], 0, 0
        while size < kb * 1024:
            part = rename(template, f"_g{i}x{k}")
            if own_macro is not None:
                part = own_macro.sub(lambda m, k=k: f"{m.group(1)}_C{k}", part)
            if k:  # one preamble per file: drop includes of repeated copies
                part = "\n".join(ln for ln in part.split("\n") if not ln.startswith("#include"))
            parts.append(part)
            size += len(part)
            k += 1
        files[f"{prefix}/Gen{i:03d}{suffix}"] = "\n".join(parts)
    return files


def _kernel_file(i: int, kb: float) -> str:
    """A kernel file as most of upstream's: one functor registered for a handful of dtypes,
    then templated kernels instantiated for many dtypes through the file's own macros."""
    op = f"gen{i}_op"
    parts = [
        "#include <c10/metal/indexing.h>\n#include <c10/metal/utils.h>\n#include <metal_stdlib>\n"
        "using namespace metal;\nusing namespace c10::metal;\n",
        f"struct {op}_functor {{\n  template <typename T>\n  inline T operator()(const T x) {{\n"
        f"    return static_cast<T>(x * x + T({i % 7}));\n  }}\n}};\n",
        "\n".join(f"REGISTER_UNARY_OP({op}, {t}, {t});" for t in ("float", "half", "bfloat", "int")) + "\n",
    ]
    size, k = sum(map(len, parts)), 0
    while size < kb * 1024:
        name = f"gen{i}_kernel{k}"
        macro = f"INSTANTIATE_GEN{i}_KERNEL{k}"
        part = (
            f"// {name}: one thread per output element; strides in elements.\n"
            f"template <typename T, typename index_t>\n"
            f"kernel void {name}(\n"
            f"    constant T* input [[buffer(0)]],\n"
            f"    device T* output [[buffer(1)]],\n"
            f"    constant index_t* sizes [[buffer(2)]],\n"
            f"    constant index_t* strides [[buffer(3)]],\n"
            f"    constant uint& ndim [[buffer(4)]],\n"
            f"    uint index [[thread_position_in_grid]]) {{\n"
            f"  index_t offset = 0;\n"
            f"  for (uint dim = 0; dim < ndim; ++dim) {{\n"
            f"    offset += (index % sizes[dim]) * strides[dim];\n"
            f"    index /= sizes[dim];\n"
            f"  }}\n"
            f"  output[index] = static_cast<T>(input[offset] + T({k}));\n"
            f"}}\n\n"
            f"#define {macro}(DTYPE, IDX)                                        \\\n"
            f"  template [[host_name(\"{name}_\" #DTYPE \"_\" #IDX)]] kernel void \\\n"
            f"  {name}<DTYPE, IDX>(                                               \\\n"
            f"      constant DTYPE * input [[buffer(0)]],                          \\\n"
            f"      device DTYPE * output [[buffer(1)]],                           \\\n"
            f"      constant IDX * sizes [[buffer(2)]],                            \\\n"
            f"      constant IDX * strides [[buffer(3)]],                          \\\n"
            f"      constant uint & ndim [[buffer(4)]],                            \\\n"
            f"      uint index [[thread_position_in_grid]])\n\n"
            + "".join(f"{macro}({t}, {x});\n" for t in ("float", "half", "bfloat", "int", "long", "short", "char", "uchar") for x in ("int", "long"))
        )
        parts.append(part)
        size += len(part)
        k += 1
    return "\n".join(parts)


_MPS_WORD = re.compile(r"\b\w+_mps\b")


def _yaml_mps_kernels() -> list[str]:
    """The kernels the real yaml's MPS-only lines name (``MPS: foo_out_mps``)."""
    from mpsgen.tree.native_yaml import scan_native_functions

    text = real_file_sources()[NATIVE_FUNCTIONS].read_text()
    names = [d.kernel.split("::")[-1] for e in scan_native_functions(text).entries for d in e.dispatch if d.has_mps and all(k.endswith("MPS") for k in d.keys)]
    return sorted({n for n in names if "mps" in n})


def _realistic(count: int, kb: float, suffix: str, prefix: str, copies: tuple[int, int], factor: int) -> dict[str, str]:
    """Per unit of ``count`` files: files 0 and 1 the Unary/Binary kernel files (``copies``
    copies of their practice source, tags shared with the .mm of the same index so that
    exec_*_kernel names match), the rest kernel files (.metal) or MPSGraph code (.mm) whose
    ``*_mps`` functions take, in turn, the names of the kernels the real yaml dispatches MPS
    to (as upstream's do: its MPSGraph code is what those rows run)."""
    rename = _renamer()
    kernels = _yaml_mps_kernels()
    turn = iter(range(10**9))
    templates = {p.name: p.read_text() for p in sorted((PRACTICE_TREE / (OPERATIONS_DIR if suffix == ".mm" else KERNELS_DIR)).glob("*" + suffix))}
    # the MPSGraph sources (not the elementwise kernel files, nor a custom kernel's host code)
    graph = [t for n, t in templates.items() if "Kernel" not in n and "getPipelineStateForFunc" not in t]
    files = {}
    for unit in range(factor):
        for j in range(count):
            i = unit * count + j
            if j < 2:
                template = templates[("UnaryKernel" if j == 0 else "BinaryKernel") + suffix]
                parts = []
                for k in range(copies[j]):
                    part = rename(template, f"_g{unit * 1000 + j}x{k}")  # the same in the .mm and the .metal
                    if k:  # one preamble; bulk macros listing ops get a name per copy
                        part = "\n".join(ln for ln in part.split("\n") if not ln.startswith("#include"))
                        part = part.replace("INSTANTIATE_UNARY_KERNELS", f"INSTANTIATE_C{k}_UNARY_KERNELS")
                    parts.append(part)
                files[f"{prefix}/Gen{i:03d}{suffix}"] = "\n".join(parts)
            elif suffix == ".metal":
                files[f"{prefix}/Gen{i:03d}{suffix}"] = _kernel_file(i, kb)
            else:
                dup = "_dup" * unit  # the doubled yaml's copies of the rows name <kernel>_dup
                for rel, text in _generate(graph, 1, kb, prefix, suffix, start=i).items():
                    names: dict[str, str] = {}

                    def real_name(m: re.Match, names: dict[str, str] = names, dup: str = dup) -> str:
                        return names.setdefault(m.group(), kernels[next(turn) % len(kernels)] + dup)

                    files[rel] = _MPS_WORD.sub(real_name, text)
    return files


def _doubled_yaml(text: str) -> str:
    copy = re.sub(r"^- func: (\w+)", r"- func: \1_dup", text, flags=re.M)
    copy = re.sub(r"^(    [A-Za-z0-9_, ]+:\s*)(\w+)", r"\1\2_dup", copy, flags=re.M)
    return text + "\n" + copy


# upstream's native .cpp sources, which the row -> stub resolver reads (counted in
# pytorch/pytorch: the 131 current files of aten/src/ATen/native/ hold 2.14 MB of code besides
# SobolEngineOpsUtils.cpp's 3.73 MB table of numbers; the sub-folders the resolver enters,
# transformers/, xnnpack/, mkl/ and the like, 51 files and 0.37 MB)
NATIVE_CPP = ((131, 2140.0, ""), (51, 370.0, "transformers/"))
NATIVE_TABLE_KB = 3730.0


def _native_cpp(count: int, kb: float, folder: str, start: int) -> dict[str, str]:
    """``count`` .cpp files of ``kb`` KB in all, of real C++ (the installed torch wheel's ATen
    headers, inline definitions and templates, read at run time: none of it is stored here),
    cut at line ends."""
    import torch

    include = Path(torch.__file__).parent / "include" / "ATen"
    sources = sorted(include.glob("native/**/*.h")) + sorted(include.glob("*.h"))
    code = "\n".join(p.read_text(errors="replace") for p in sources)
    files, each, pos = {}, int(kb * 1024 / count), (start % 7) * 100_000
    for i in range(start, start + count):
        end = code.find("\n", pos + each)
        if end < 0:
            pos, end = 0, code.find("\n", each)
        files[f"{NATIVE_DIR}/{folder}Ref{i:03d}.cpp"] = code[pos : end + 1]
        pos = end + 1
    return files


def _number_table(kb: float) -> str:
    """A generated table of numbers, as SobolEngineOpsUtils.cpp holds."""
    rows, size, k = ["namespace at::native::sobol_utils {", "const int64_t table[][18] = {"], 0, 0
    while size < kb * 1024:
        row = "  {" + ", ".join(str((k * 2654435761 + j * 40503) % 2**31) for j in range(18)) + "},"
        rows.append(row)
        size += len(row) + 1
        k += 1
    return "\n".join(rows + ["};", "} // namespace at::native::sobol_utils", ""])


def build_tree(dest: Path, mm: int, metal: int, mm_kb: float, metal_kb: float, double: bool = False, dense: bool = False) -> Path:
    """The benchmark tree: ``dense`` repeats the practice sources in every file (``mm_kb``,
    ``metal_kb`` per file); otherwise upstream's shape (see the module docstring), the
    other files ``mm_kb`` / ``metal_kb`` each. Both hold native .cpp sources of upstream's
    size (:data:`NATIVE_CPP`)."""
    root, used_real = build_practice_tree(dest, real=True)
    if not used_real:
        sys.exit("torch==2.13.0 must be installed (pip install -e '.[test]'): the benchmark uses its native_functions.yaml")
    factor = 2 if double else 1
    if dense:
        mm_files = _generate(_templates(".mm"), mm * factor, mm_kb, OPERATIONS_DIR, ".mm")
        metal_files = _generate(_templates(".metal"), metal * factor, metal_kb, KERNELS_DIR, ".metal")
    else:
        mm_files = _realistic(mm, mm_kb, ".mm", OPERATIONS_DIR, (3, 4), factor)
        metal_files = _realistic(metal, metal_kb, ".metal", KERNELS_DIR, (3, 4), factor)
    cpp_files: dict[str, str] = {}
    for unit in range(factor):
        for n, (count, kb, folder) in enumerate(NATIVE_CPP):
            cpp_files.update(_native_cpp(count, kb, folder, start=unit * 1000 + n * 500))
        cpp_files[f"{NATIVE_DIR}/SobolTable{unit}.cpp"] = _number_table(NATIVE_TABLE_KB)
    for rel, text in {**mm_files, **metal_files, **cpp_files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    if double:
        yaml = root / NATIVE_FUNCTIONS
        yaml.write_text(_doubled_yaml(yaml.read_text()))
    return root


def tree_size(root: Path) -> str:
    mm = list((root / OPERATIONS_DIR).glob("*.mm"))
    metal = list((root / KERNELS_DIR).glob("*.metal"))
    cpp = [p for rel, p in native_cpp_files(root)]
    kb = lambda files: sum(Path(f).stat().st_size for f in files) / 1024  # noqa: E731
    yaml_kb = (root / NATIVE_FUNCTIONS).stat().st_size / 1024
    index = Index(PytorchTree(root))
    regs = sum(len(f.registrations) for f in index.metal_files)
    uses = sum(len(h.uses) for h in index.host_files)
    return (
        f"{len(mm)} .mm ({kb(mm):.0f} KB, {uses} exec_*_kernel calls), {len(metal)} .metal ({kb(metal):.0f} KB, "
        f"{regs} (op, dtype) registrations), yaml {yaml_kb:.0f} KB, {len(cpp)} native .cpp ({kb(cpp):.0f} KB)"
    )


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


_READ_ONLY = """
import os
found = 0
for folder in ("aten/src/ATen/native/mps/operations", "aten/src/ATen/native/mps/kernels", "aten/src/ATen/native", "aten/src/ATen/native/transformers"):
    for entry in os.scandir(os.path.join({root!r}, folder)):
        if not entry.is_file():
            continue
        with open(entry.path, "rb") as f:
            text = f.read().decode()
        found += text.count("REGISTER_") + text.count("TORCH_IMPL_FUNC") + text.count("#define")
with open(os.path.join({root!r}, "aten/src/ATen/native/native_functions.yaml"), "rb") as f:
    found += f.read().decode().count("\\n- func:")
"""


def processes(root: Path, runs: int) -> None:
    """Whole processes, as pre-commit and lintrunner pay them: start-up and imports included,
    beside a bare interpreter of the same installation (its .pth files included). mpsgen runs
    as installed (bytecode compiled) and as this editable checkout."""
    import torchgen.gen as gen

    tags = Path(gen.__file__).parent / "packaged/ATen/native/tags.yaml"
    installed = compiled_install(root.parent / f"{root.name}-install")
    py = sys.executable
    bare = statistics.median(time_process([py, "-c", "pass"], runs)) * 1000
    # (run from outside the repository: `python -m` puts the working folder first on sys.path)
    check = statistics.median(time_process([py, "-m", "mpsgen", "check", "--root", str(root)], runs, (0, 1), installed, cwd=str(root.parent))) * 1000
    # the same in a fresh virtual environment: an interpreter that runs no other package's
    # start-up hooks (.pth files), as a contributor's venv; check needs only the stdlib
    venv = clean_venv(root.parent / f"{root.name}-venv")
    script = console_script(venv)  # pip's launcher: what a hook's `entry: mpsgen check` runs
    venv_bare = statistics.median(time_process([venv, "-c", "pass"], runs)) * 1000
    venv_times = time_process([script, "check", "--root", str(root)], runs, (0, 1), installed)
    venv_check, venv_min = statistics.median(venv_times) * 1000, min(venv_times) * 1000
    helps = statistics.median(time_process([py, "-m", "mpsgen", "--help"], runs, (0,), installed, cwd=str(root.parent))) * 1000
    # --help goes through the typer app: in the venv, typer and its dependencies come from this
    # installation's site-packages on PYTHONPATH (a path entry: its .pth hooks do not run)
    import site

    with_deps = dict(installed, PYTHONPATH=os.pathsep.join([installed["PYTHONPATH"], *site.getsitepackages()]))
    venv_helps = statistics.median(time_process([script, "--help"], runs, (0,), with_deps)) * 1000
    check_src = statistics.median(time_cli(["check", "--root", str(root)], runs, ok=(0, 1))) * 1000
    # the least any Python scanner of this tree pays: read every file check reads and count a
    # few literals in each (no parsing, no rules)
    floor_cmd = [py, "-c", _READ_ONLY.format(root=str(root))]
    read_only = statistics.median(time_process(floor_cmd, runs)) * 1000
    tg_cmd = [py, "-c", f"import torchgen.gen as g; g.parse_native_yaml({str(root / NATIVE_FUNCTIONS)!r}, {str(tags)!r})"]
    tg = statistics.median(time_process(tg_cmd, max(3, runs // 3))) * 1000
    print(f"process:       bare `python -c pass`      {bare:6.1f} ms (this machine's floor for any Python tool)")
    print(f"process:       `mpsgen check`             {check:6.1f} ms whole ({check - bare:5.1f} ms over the floor)")
    print(f"process:       bare venv `python -c pass` {venv_bare:6.1f} ms (a fresh venv: {bare - venv_bare:4.1f} ms less than this installation's, whose .pth hooks import packages at start-up)")
    print(f"process:       `mpsgen check` in the venv {venv_check:6.1f} ms whole ({venv_check - venv_bare:5.1f} ms over its floor; fastest run {venv_min:.1f})")
    print(f"process:       read files, count words  {read_only:6.1f} ms whole ({read_only - bare:5.1f} ms over the floor: the least a Python scanner of this tree pays)")
    print(f"process:       `mpsgen --help`            {helps:6.1f} ms whole ({helps - bare:5.1f} ms over the floor)")
    print(f"process:       `mpsgen --help` in the venv {venv_helps:6.1f} ms whole ({venv_helps - venv_bare:5.1f} ms over its floor)")
    print(f"process:       `mpsgen check` (editable, no bytecode) {check_src:6.1f} ms whole")
    print(f"process:       torchgen parse_native_yaml {tg:6.1f} ms whole ({tg - bare:5.1f} ms over the floor)")
    print(f"process:       check is {tg / check:.1f}x faster whole than a torchgen parse_native_yaml process  target >= 3x: {'ok' if tg / check >= 3 else 'MISSED'}")


def bench(tmp: Path, args: argparse.Namespace, dense: bool, tg_ms: float | None) -> float:
    """Prints the numbers of one shape of tree; returns torchgen's median (measured once)."""
    shape = "dense" if dense else "realistic"
    mm_kb = args.mm_kb if args.mm_kb is not None else (20.0 if dense else 21.0)
    metal_kb = args.metal_kb if args.metal_kb is not None else (6.0 if dense else 8.5)
    base = build_tree(tmp / f"{shape}-base", args.mm, args.metal, mm_kb, metal_kb, dense=dense)
    doubled = build_tree(tmp / f"{shape}-double", args.mm, args.metal, mm_kb, metal_kb, double=True, dense=dense)
    run_check(PytorchTree(base))  # warm imports and the page cache
    print(f"[{shape}]")
    print(f"tree:          {tree_size(base)}")
    check_ms, n = time_check(base, args.runs)
    print(f"check:         median {check_ms:7.1f} ms over {args.runs} runs ({n} findings), in-process")
    if tg_ms is None:
        tg_ms = time_torchgen(base / NATIVE_FUNCTIONS, args.torchgen_runs)
    ratio = tg_ms / check_ms
    print(f"torchgen:      median {tg_ms:7.1f} ms over {args.torchgen_runs} runs of parse_native_yaml on the same yaml")
    print(f"speed-up:      check is {ratio:.1f}x faster than parse_native_yaml, in-process")
    processes(base, args.runs)
    print(f"doubled tree:  {tree_size(doubled)}")
    double_ms, n2 = time_check(doubled, args.runs)
    grow = double_ms / check_ms
    print(f"check doubled: median {double_ms:7.1f} ms over {args.runs} runs ({n2} findings), {grow:.2f}x the base tree  target <= {LINEAR:.1f}x (linear): {'ok' if grow <= LINEAR else 'MISSED'}")
    return tg_ms


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=9, help="check runs per tree (median)")
    ap.add_argument("--torchgen-runs", type=int, default=3)
    ap.add_argument("--mm", type=int, default=70)
    ap.add_argument("--metal", type=int, default=120)
    ap.add_argument("--mm-kb", type=float, default=None, help="size of each generated .mm (default 20 KB dense, 21 KB for the MPSGraph files of the realistic tree: upstream's total is ~1.5 MB)")
    ap.add_argument("--metal-kb", type=float, default=None, help="size of each generated .metal (default 6 KB dense, 8.5 KB for the kernel files of the realistic tree: upstream's total is ~1.1 MB)")
    ap.add_argument("--dense", action="store_true", help="also time the dense tree (every file a repetition of the practice sources)")
    args = ap.parse_args()
    if real_file_sources() is None:
        sys.exit("torch==2.13.0 must be installed (pip install -e '.[test]')")

    tmp = Path(tempfile.mkdtemp(prefix="mpsgen-bench-"))
    try:
        tg_ms = bench(tmp, args, dense=False, tg_ms=None)
        if args.dense:
            print()
            bench(tmp, args, dense=True, tg_ms=tg_ms)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

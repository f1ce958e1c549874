"""What a change command writes beside the change on request: a standalone shader test of the
functor (``--with-test``), a benchmark script of the op before and after the change
(``--with-bench``) and a PR title and body in PyTorch's style (``--pr-description``).
All are returned as text; the CLI writes or prints them."""

from __future__ import annotations

import json
import math

from mpsgen.codegen.functor import render_functor
from mpsgen.patch.changeset import Changeset
from mpsgen.core.errors import Refused
from mpsgen.plan.pr_text import LEGACY_DEFINITION as _LEGACY_DEFINITION
from mpsgen.plan.pr_text import file_changes as _file_changes
from mpsgen.plan.pr_text import names as _names
from mpsgen.plan.testlists import UNXFAILED
from mpsgen.shim.trial import alpha_metal_type, default_alphas, default_try_params
from mpsgen.spec.registrations import COMPLEX, FLOATS, TORCH_DTYPES, input_dtypes
from mpsgen.core.render import render
from mpsgen.spec.op import OPERANDS, OpSpec
from mpsgen.tree import COMMON_METHODS, COMMON_MPS, NATIVE_FUNCTIONS, OPINFO_DEFINITIONS


def shader_test(spec: OpSpec, command: str) -> tuple[str, str]:
    """(file name, text) of ``test_<op>_shader.py`` for the spec's functor."""
    if spec.selector is not None:
        raise Refused(f"--with-test covers ops of one kernel; {spec.name} picks one of {len(spec.selector.cases)} by its "
                      f"{spec.selector.argument} (`mpsgen try {spec.name}` checks each against the CPU op).")
    if spec.functor.is_scaffold:
        raise Refused(
            f"--with-test: {spec.name}_functor is a scaffold (no --expr, --functor-file or spec functor): there is nothing to test yet.",
            hint="Give the functor, then ask for the test.",
        )
    if spec.kind not in ("unary", "binary"):
        raise Refused(f"--with-test covers unary and binary ops; {spec.name} is {spec.kind}.")
    pairs = input_dtypes(spec)
    dtypes = [(i, o, TORCH_DTYPES[i], TORCH_DTYPES[o]) for i, o in pairs if i in TORCH_DTYPES and o in TORCH_DTYPES]
    filename = f"test_{spec.name}_shader.py"
    text = render(
        "tests/shader_test.py.j2", op=spec.name, functor=render_functor(spec), dtypes=dtypes, arity=spec.arity,
        command=command, filename=filename,
    )
    return filename, text + "\n"


# the element counts the benchmark times: small to over 2^24 (and a quick set that only checks it runs)
BENCH_SIZES = (1 << 10, 1 << 16, 1 << 20, 1 << 25)
BENCH_QUICK_SIZES = (1 << 8, 1 << 12)
BENCH_LAYOUTS = ("contiguous", "transposed", "strided", "offset")  # and "broadcast" for two tensors or more
BENCH_RANGE = (-10.0, 10.0)  # the inputs' values, within the spec's try_domain
# what a command's "before" is: the base commit's MPS kernel, or the CPU op where MPS has none
BENCH_BASELINES = {"new-op": "cpu", "migrate-from-mpsgraph": "base", "new-kernel": "base"}


def bench_files(op: str) -> tuple[str, str, str]:
    """The benchmark script's name and its two result files (``--label before`` / ``after``)."""
    return f"bench_{op}.py", f"bench_{op}_before.json", f"bench_{op}_after.json"


def bench_script(spec: OpSpec, command: str, baseline: str | None = None) -> tuple[str, str]:
    """(file name, text) of ``bench_<op>.py``: times ``torch.ops.aten.<op>`` over the dtypes the
    change registers x sizes x layouts, with the Scalar or params values ``mpsgen try`` passes
    first. ``baseline`` is what "before" runs: ``"base"`` (the MPS kernel of the base commit)
    or ``"cpu"`` (the CPU op, when MPS has no kernel before the change); by default the
    command's (:data:`BENCH_BASELINES`)."""
    baseline = baseline or BENCH_BASELINES.get(command, "base")
    if baseline not in ("base", "cpu"):
        raise ValueError(baseline)
    if spec.has_params and not spec.params:
        raise Refused(
            f"--with-bench: the spec of {spec.name} gives no `params:`, so the benchmark would not know the "
            "arguments to pass after the tensors.",
            hint="Add `params:` (name: type, in the stub's order) to the spec, or leave out --with-bench.",
        )
    dtypes = []
    for m_in in dict.fromkeys(i for i, _o in input_dtypes(spec) if i in TORCH_DTYPES):
        alpha = None
        if spec.has_alpha:
            floating = m_in in FLOATS + COMPLEX or alpha_metal_type(spec, m_in) in FLOATS
            alpha = default_alphas(spec, floating)[0]
        dtypes.append((TORCH_DTYPES[m_in].removeprefix("torch."), _literal(alpha)))
    names = OPERANDS[spec.kind]
    if spec.operands:  # the schema's tensors, each once; values every operand's domain allows
        tensors = len(dict.fromkeys(spec.operands))
        ranges = [_bench_range([spec.try_domain[n] for n in names if n in spec.try_domain])] * tensors
    else:
        tensors = spec.arity
        ranges = [_bench_range([spec.try_domain[n]] if n in spec.try_domain else []) for n in names]
    params = {}
    if spec.has_params:
        first = default_try_params(spec)[0]
        params = {p.name: first.get(p.name) for p in spec.params if p.name not in spec.fixed}
    filename, before, after = bench_files(spec.name)
    layouts = BENCH_LAYOUTS + (("broadcast",) if tensors > 1 else ())
    text = render(
        "bench/bench_op.py.j2", op=spec.name, command=command, filename=filename, baseline=baseline,
        json_name={"before": before, "after": after}.get, dtypes=dtypes, tensors=tensors,
        ranges="[" + ", ".join(f"({_literal(lo)}, {_literal(hi)})" for lo, hi in ranges) + "]",
        params="{" + ", ".join(f"{json.dumps(name)}: {_literal(v)}" for name, v in params.items()) + "}",
        sizes=json.dumps(BENCH_SIZES), quick_sizes=json.dumps(BENCH_QUICK_SIZES), layouts=json.dumps(layouts),
        size_range=f"{BENCH_SIZES[0]:,} to {BENCH_SIZES[-1]:,}",
    )
    return filename, text + "\n"


def bench_placeholder(op: str, command: str) -> list[str]:
    """The PR description's marked place for the benchmark table, saying which command fills it."""
    script, before, after = bench_files(op)
    if BENCH_BASELINES.get(command, "base") == "cpu":
        runs = f"`python {script} --label before --device cpu` and `--label after` with this branch built"
    else:
        runs = f"`python {script} --label before` with the base commit built and `--label after` with this branch built"
    return [
        "Benchmark:",
        "",
        f"<!-- benchmark table: run {runs}, then replace this comment with what "
        f"`python {script} --compare {before} {after}` prints. -->",
    ]


def _bench_range(domains: list[tuple[float, float]]) -> tuple[float, float]:
    """The inputs' value range: :data:`BENCH_RANGE` within every domain given (or near it
    when a domain lies outside)."""
    lo = max([d[0] for d in domains], default=-math.inf)
    hi = min([d[1] for d in domains], default=math.inf)
    low, high = max(lo, BENCH_RANGE[0]), min(hi, BENCH_RANGE[1])
    if low > high:  # the domain lies outside BENCH_RANGE: 20 wide at its finite end
        low, high = (lo, min(hi, lo + 20.0)) if math.isfinite(lo) else (max(lo, hi - 20.0), hi)
    return float(low), float(high)


def _literal(value: object) -> str:
    """``value`` (None, a bool or a number) as Python source."""
    if isinstance(value, float) and not math.isfinite(value):
        return f'float("{value}")'
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    raise TypeError(f"not a scalar: {value!r}")


def pr_description(spec: OpSpec, changeset: Changeset, command: str, bench: bool = False) -> str:
    """A PR title and body as PyTorch's MPS PRs write them: what the change does in each file,
    the dtypes, the tests it stops expecting to fail and how to test it, and with ``bench`` a
    marked place for the benchmark table. Built from the change itself, never from mpsgen's
    notes (how it found things is no reviewer's business)."""
    verb = "Migrate {op} to Metal" if command == "migrate-from-mpsgraph" else "Add Metal kernel for {op}"
    title = f"[MPS] {verb.format(op=spec.name)}"
    dtypes = ", ".join(dict.fromkeys(TORCH_DTYPES.get(i, i).replace("torch.", "") for i, _o in input_dtypes(spec)))
    lines = [title, ""]
    if command == "migrate-from-mpsgraph":
        lines.append(f"Moves `{spec.name}` from its MPSGraph implementation to a Metal kernel dispatched through its stub, as other elementwise ops already are.")
    else:
        lines.append(f"Adds a Metal kernel for `{spec.name}`, dispatched through its stub, so the op no longer falls back or fails on MPS.")
    lines.append("")
    lines += [f"- `{rel}`: {_what_changed(rel, added, removed, spec)}" for rel, added, removed in _file_changes(changeset)]
    lines += ["", f"Dtypes: {dtypes}."]
    lines += testing_lines(changeset.next_steps)
    if bench:
        lines += [""] + bench_placeholder(spec.name, command)
    return "\n".join(lines) + "\n"

def testing_lines(next_steps: list[str]) -> list[str]:
    """A PR body's lines on testing, from the change's next steps: the tests it un-xfails and
    its test commands."""
    tests = [s.split("test:", 1)[1].strip().split("   (")[0] for s in next_steps if s.startswith("test:")]
    listed = " ".join(" ".join(s.split()) for s in next_steps if s.strip().startswith(UNXFAILED))
    unblocked = [f"`{name}`" for name in listed[len(UNXFAILED) :].rstrip(".").split(", ") if name]
    lines = ["", "No longer expected to fail on MPS: " + ", ".join(unblocked) + "."] if unblocked else []
    return lines + (["", "Test plan:", "```", *tests, "```"] if tests else [])


def _what_changed(rel: str, added: list[str], removed: list[str], spec: OpSpec) -> str:
    """One sentence a reviewer reads for the change of one file."""
    op = spec.name
    if rel == NATIVE_FUNCTIONS:
        kernels = _names(r"(?m)^\s*[\w, ]*\bMPS\b[\w, ]*:\s*(\w+)", added)
        replaced = _names(r"(?m)^\s*MPS:\s*(\w+)", removed)
        text = f"MPS runs the structured kernel CPU and CUDA share ({kernels or op})"
        return text + (f", in place of {replaced}." if replaced else ".")
    if rel.endswith(".metal"):
        functors = _names(r"struct\s+(\w+_functor)\b", added)
        return (f"adds {functors} and registers" if functors else "registers") + f" the `{spec.kernel}` kernel for the dtypes below."
    if rel.endswith(".mm"):
        parts = []
        stubs = _names(r"REGISTER_DISPATCH\(\s*(\w+)", added)
        macros = _names(r"\b(REGISTER_\w+_DISPATCH\(\s*\w+\s*\))", added)
        if stubs:
            parts.append(f"dispatches {stubs} to the Metal kernel")
        elif macros:
            parts.append(f"dispatches `{op}` to the Metal kernel ({macros})")
        legacy = _names(_LEGACY_DEFINITION, removed)
        if legacy:
            parts.append(f"removes the MPSGraph implementation it replaces ({legacy})")
        return ("; ".join(parts) or "updated") + "."
    if rel == COMMON_MPS:
        if any(line.strip() for line in added):
            return f"narrows the MPS xfail/skip entries of `{op}` to the dtypes the kernel does not cover."
        return f"removes the MPS xfail/skip entries of `{op}`, which now has a kernel."
    if rel == COMMON_METHODS or rel.startswith(OPINFO_DEFINITIONS):
        return f"removes the MPS expected failures (`DecorateInfo`) of the `{op}` OpInfo that its new kernel fixes."
    return f"{len(added)} line(s) added, {len(removed)} removed."

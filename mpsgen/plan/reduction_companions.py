"""What ``migrate-from-mpsgraph`` of a reduction (prod; var, std, var_mean, std_mean) writes
beside the change on request: ``--with-test``, a ``torch.mps.compile_shader`` test of the
reduction kernel dispatched as the host dispatches it (one threadgroup per output element)
against torch's CPU op, plus the ops themselves on MPS; ``--with-bench``, a script timing
reduce-inner, reduce-outer and full reductions before and after; ``--pr-description``, the
PR text. All are built from the change (and the tree it was planned on) and returned as
text; the CLI writes or prints them."""

from __future__ import annotations

import json
import re

from mpsgen.patch.changeset import Changeset
from mpsgen.plan.companions import BENCH_QUICK_SIZES, BENCH_SIZES, bench_files
from mpsgen.core.errors import Refused
from mpsgen.tree.op_facts import opinfo_keys
from mpsgen.plan.pr_text import LEGACY_DEFINITION, file_changes, names
from mpsgen.spec.reduction import REDUCTION_DTYPES, ReductionSpec
from mpsgen.codegen.reduction import host_function_name, threadgroup_size
from mpsgen.plan.reduction import (
    FLOATS,
    REDUCE_OPS_CPP,
    metal_parts,
    new_metal_text,
    routed_spec,
)
from mpsgen.core.render import render
from mpsgen.codegen.shader_source import STRUCT_CODES, py_literal, with_params_inlined
from mpsgen.codegen.reduction_dispatch import op_struct_name
from mpsgen.tree import COMMON_MPS, KERNELS_DIR, NATIVE_FUNCTIONS, OPERATIONS_DIR, PytorchTree
from mpsgen.tree.codeowners import owners_of
from mpsgen.tree.native_yaml import read_native_functions, scan_native_functions

MAX_THREADS = threadgroup_size(1 << 31)  # the host's threadgroup size limit
# (rows, columns) the benchmark adds to its sizes: one token's activations (hidden 4096), a
# 2048-token prefill, a batch of vocabulary logits
LLM_SHAPES = ((1, 4096), (2048, 4096), (32, 32000))


def _paths(spec: ReductionSpec) -> tuple[str, str, str]:
    return f"{KERNELS_DIR}/{spec.file}.h", f"{KERNELS_DIR}/{spec.file}.metal", f"{OPERATIONS_DIR}/{spec.file}.mm"


def _new_text(changeset: Changeset, rel: str) -> str | None:
    return next((e.new_text for e in changeset.changed if e.relpath == rel), None)


def _ops_shown(ops: tuple[str, ...] | list[str]) -> str:
    shown = [f"{o}" for o in ops]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


def test_file(spec: ReductionSpec) -> str:
    return f"test_{spec.kernel}_reduction_shader.py"


def shader_source(tree: PytorchTree, spec: ReductionSpec, changeset: Changeset) -> tuple[ReductionSpec, str]:
    """(the spec cut to the pairs the tree routes, what compile_shader compiles): the kernel and
    its registrations exactly as the change writes them, in the file the change creates for
    them (its params struct inlined). Refused when the change does not hold that text."""
    cut, _routed = routed_spec(tree, spec)
    kernel, struct = metal_parts(tree, cut)
    header_rel, metal_rel, _mm = _paths(spec)
    metal, header = _new_text(changeset, metal_rel), _new_text(changeset, header_rel)
    if metal is not None and kernel not in metal and re.search(rf'\b{re.escape(op_struct_name(cut))}\b', metal):
        raise Refused(
            f"--with-test: {cut.stub} runs through this tree's own reduction dispatcher here ({metal_rel} gets "
            f"{op_struct_name(cut)} for the tree's value kernels), not a kernel of mpsgen's own; the compile_shader test "
            "mpsgen writes dispatches its own kernel, which this change does not write; nothing written.",
            hint="Run without --with-test; on a Mac the ops' tests in test/test_mps.py and the OpInfo tests run the dispatcher's kernels.",
        )
    if metal is None or kernel not in metal or header is None or struct not in header:
        raise Refused(f"--with-test: the change does not write {cut.kernel_function} into {metal_rel} and "
                      f"{cut.params_struct} into {header_rel} as mpsgen would test them; nothing written.")
    return cut, with_params_inlined(new_metal_text(spec.file, kernel), header_rel[len("aten/src/") :], struct)


def reduction_shader_test(tree: PytorchTree, spec: ReductionSpec, changeset: Changeset, written_by: str) -> tuple[str, str]:
    """(file name, text) of ``test_<kernel>_reduction_shader.py``."""
    cut, source = shader_source(tree, spec, changeset)
    if not spec.try_calls:
        raise Refused(f"--with-test: {spec.source} gives no `try:` calls, the torch calls the test compares the kernel with.")
    calls = [
        [c.call, dict(c.kwargs), {p.name: c.params.get(p.name, 0) for p in spec.params}, c.dims] for c in spec.try_calls
    ]
    filename = test_file(spec)
    integers = any(to not in FLOATS for _ti, to in cut.dtypes)
    text = render(
        "tests/reduction_shader_test.py.j2", kernel_function=cut.kernel_function, stub=spec.stub, stem=spec.file,
        host_function=host_function_name(cut), ops_shown=_ops_shown(spec.ops), written_by=written_by, filename=filename,
        source=source, pairs=py_literal([list(p) for p in cut.dtypes]), max_dims=spec.max_dims, outputs=len(spec.outputs),
        params=py_literal([[p.name, STRUCT_CODES[p.metal_type]] for p in spec.params]), max_threads=MAX_THREADS,
        empty=py_literal(float(spec.empty) if spec.empty in ("nan", "inf", "-inf") else int(spec.empty)),
        calls=py_literal(calls), integers=integers, op_dtypes=py_literal(list(dict.fromkeys(ti for ti, _to in spec.dtypes))),
    )
    return filename, text + "\n"


def reduction_bench_script(spec: ReductionSpec, written_by: str) -> tuple[str, str]:
    """(file name, text) of ``bench_<kernel>.py``: every op of the stub (with its first ``try``
    call's arguments) x the input dtypes the spec takes x sizes and LLM shapes x inner, outer
    and full reductions, MPSGraph (the base commit) before, the kernel after."""
    filename, before, after = bench_files(spec.kernel)
    kwargs = {c.call: dict(c.kwargs) for c in reversed(spec.try_calls)}
    dtypes = list(dict.fromkeys(REDUCTION_DTYPES[ti] for ti, _to in spec.dtypes))
    text = render(
        "bench/bench_reduction.py.j2", name=spec.kernel, stub=spec.stub, kernel_function=spec.kernel_function,
        ops_shown=_ops_shown(spec.ops), written_by=written_by, filename=filename, before=before, after=after,
        ops=[(op, py_literal(kwargs.get(op, {}))) for op in spec.ops], dtypes=json.dumps(dtypes),
        sizes=json.dumps(BENCH_SIZES), quick_sizes=json.dumps(BENCH_QUICK_SIZES), llm_shapes=json.dumps(LLM_SHAPES),
        size_range=f"{BENCH_SIZES[0]:,} to {BENCH_SIZES[-1]:,}",
    )
    return filename, text + "\n"


def _moved_rows(changeset: Changeset) -> tuple[list[tuple[str, str]], list[str]]:
    """([(row, the MPS kernel it had)] that now run the shared kernel, [rows that had no MPS
    kernel and now run it]), read from native_functions.yaml before and after the change."""
    edit = next((e for e in changeset.changed if e.relpath == NATIVE_FUNCTIONS), None)
    if edit is None:
        return [], []
    old = {e.name: e for e in scan_native_functions(edit.source.text).entries}
    moved, joined = [], []
    for e in scan_native_functions(edit.new_text).entries:
        before = old.get(e.name)
        shared = e.shared_entry
        if before is None or shared is None or "MPS" not in shared.keys or (before.shared_entry and "MPS" in before.shared_entry.keys):
            continue
        if before.mps_entries:
            moved.append((e.name, before.mps_entries[0].kernel))
        else:
            joined.append(e.name)
    return moved, joined


def _tested(tree: PytorchTree, spec: ReductionSpec) -> list[str]:
    """The OpInfo test names (formatted) of the stub's ops."""
    table = read_native_functions(tree)[1]
    tested = []
    for op in spec.ops:
        keys = opinfo_keys(tree, op, table)
        tested += [keys.test_names[k] for k in sorted(keys.found)]
    return list(dict.fromkeys(tested))


def _losses(changeset: Changeset, spec: ReductionSpec, cut: ReductionSpec, routed: set[tuple[str, str]], op: str) -> list[str]:
    """What MPSGraph served that the Metal kernel does not, as a reviewer reads it."""
    losses = []
    for o in spec.ops:
        edit = next((e for e in changeset.changed if e.relpath == COMMON_MPS), None)
        if edit is not None and re.search(rf"SUPPORTED_COMPLEX_OPS\s*=\s*\{{[^}}]*[\"']{re.escape(o)}[\"']", edit.source.text) \
                and not re.search(rf"SUPPORTED_COMPLEX_OPS\s*=\s*\{{[^}}]*[\"']{re.escape(o)}[\"']", edit.new_text):
            losses.append(f"complex `{o}` (MPSGraph took it; the kernel registers no complex type, so `{o}` leaves "
                          f"`SUPPORTED_COMPLEX_OPS` in `{COMMON_MPS}` and its complex tests are expected to fail)")
    edit = next((e for e in changeset.changed if e.relpath == NATIVE_FUNCTIONS), None)
    takes_dtype = edit is not None and any(
        "ScalarType? dtype" in e.func for o in spec.ops for e in scan_native_functions(edit.source.text).of_op(o)
    )
    unserved = sorted(p for p in routed if p[0] == p[1] and p not in spec.dtypes) if takes_dtype else []
    if unserved:
        types = ", ".join(REDUCTION_DTYPES[a] for a, _b in unserved)
        losses.append(f"`{op}` of {types} asked to keep its dtype (`dtype=`): the kernel is registered for their "
                      f"int64 result only, so these calls raise on MPS")
    return losses


def reduction_pr_description(
    tree: PytorchTree, spec: ReductionSpec, op: str, changeset: Changeset, *, test: str | None = None, bench: bool = False
) -> str:
    """A PR title and body as PyTorch's MPS PRs write them: what moves off MPSGraph and how the
    kernel reduces, each file's change, the rows, the dtypes, what MPS no longer serves, the
    test plan, the benchmark table's place and the reviewers the tree's CODEOWNERS names for
    the changed files. Built from the change, never from mpsgen's notes."""
    cut, routed = routed_spec(tree, spec)
    header_rel, metal_rel, mm_rel = _paths(spec)
    metal_after = _new_text(changeset, metal_rel) or ""
    # the tree's own reduction dispatcher runs the op (2.14's reduction_dispatch_mps): no kernel of mpsgen's own
    dispatched = cut.kernel_function not in metal_after and bool(re.search(rf"\b{re.escape(op_struct_name(cut))}\b", metal_after))
    ops = [f"`{o}`" for o in dict.fromkeys((op, *spec.ops))]
    shown = ops[0] if len(ops) == 1 else ", ".join(ops[:-1]) + " and " + ops[-1]
    title = f"[MPS] Migrate {_ops_shown(list(dict.fromkeys((op, *spec.ops))))} to Metal"
    how = ("folding Welford partials (mean, m2, count) in float, combined across the SIMD-group and the threadgroup "
           "with `c10::metal::welford_combine`") if spec.welford else (
           f"each folding its share with the op's identity in the lanes past the end, reduced across the SIMD-group "
           f"and the threadgroup ({'`' + spec.op_struct + '`' if isinstance(spec.reduce, str) else '`c10::metal::' + spec.reduce.simd + '`'})")
    lines = [title, ""]
    lines.append(
        f"Moves {shown} off MPSGraph, which compiles and caches a graph per input shape: `{spec.stub}` gets a Metal "
        f"kernel, so {'this op runs' if len(ops) == 1 else 'these ops run'} the structured kernels CPU and CUDA share. "
        + (f"It runs through the tree's own reduction dispatcher: its value kernels (the shape the host picks) take "
           f"`{op_struct_name(cut)}`, whose threadgroup reduction pads the lanes past the last partial with the identity."
           if dispatched else
           f"`{cut.kernel_function}` runs one threadgroup per output element; its threads stride over the reduced "
           f"elements, {how}.")
    )
    lines.append("")
    moved, joined = _moved_rows(changeset)
    for rel, added, removed in file_changes(changeset):
        if rel == NATIVE_FUNCTIONS:
            said = "MPS joins the shared kernel line of " + ", ".join(f"`{r}`" for r, _k in moved)
            replaced = list(dict.fromkeys(k for _r, k in moved))
            said += f" (in place of {', '.join(f'`{k}`' for k in replaced)})" if replaced else ""
            if joined:
                said += "; " + ", ".join(f"`{r}`" for r in joined) + " had no MPS kernel and now run" + ("s" if len(joined) == 1 else "") + " it too"
            said += "."
        elif rel == REDUCE_OPS_CPP:
            said = f"the shared kernels accept MPS in the device check before `{spec.stub}`."
        elif rel == header_rel:
            said = f"`{cut.params_struct}`: the sizes and strides (32-bit){' and the stub' + chr(39) + 's arguments' if spec.params else ''} the host passes the kernel."
        elif rel == metal_rel and dispatched:
            said = (f"`{op_struct_name(cut)}` (identity, combine, SIMD and threadgroup reduction), registered for the value "
                    "kernels the host's reduction dispatcher runs.")
        elif rel == metal_rel:
            pairs = ", ".join(f"{a}->{b}" for a, b in cut.dtypes)
            said = f"`{cut.kernel_function}`, registered for {pairs}."
        elif rel == mm_rel:
            said = (f"`{host_function_name(cut)}` runs `{spec.stub}` through the file's reduction dispatcher" if dispatched
                    else f"`{host_function_name(cut)}` dispatches the kernel for `{spec.stub}`")
            gone = "\n".join(removed)
            kernels = {k for _r, k in moved} | {n.strip("`") for n in names(LEGACY_DEFINITION, removed).split(", ") if n}
            legacy = [k for k in dict.fromkeys(k for _r, k in moved) if re.search(rf"\b{k}\b", gone)]
            legacy += [k for k in sorted(kernels - set(legacy)) if re.search(rf"\b{k}\b", gone)]
            if legacy:
                said += f"; removes the MPSGraph implementation{'s' if len(legacy) > 1 else ''} it replaces ({', '.join(f'`{k}`' for k in legacy)})"
            # the functions defined in the removed lines that are no kernel: what only the MPSGraph code used
            defined = re.findall(r"(?m)^(?:static\s+|inline\s+)*[A-Za-z_][\w:<>, ]*?[\s*&]+(\w+)\s*\(", gone)
            helpers = [h for h in dict.fromkeys(defined) if h not in kernels and h not in ("if", "for", "while", "return")]
            if helpers:
                said += f" and what only {'they' if len(legacy) > 1 else 'it'} used ({', '.join(f'`{h}`' for h in helpers)})"
            said += "."
        elif rel == COMMON_MPS:
            left = names(r"(?m)^\s*[\"'](\w[\w.]*)[\"'],", removed)
            said = (f"{left} leave{'s' if left.count('`') == 2 else ''} `SUPPORTED_COMPLEX_OPS`: the kernel serves no complex type (below)."
                    if left and not added else "the MPS test lists follow the kernel's dtypes (below).")
        else:
            said = f"{len(added)} line(s) added, {len(removed)} removed."
        lines.append(f"- `{rel}`: {said}")
    dtypes = ", ".join(f"{REDUCTION_DTYPES[a]} -> {REDUCTION_DTYPES[b]}" for a, b in cut.dtypes)
    lines += ["", f"Dtypes (input -> output): {dtypes}."]
    facts = []
    if any(a in ("half", "bfloat") for a, _b in cut.dtypes):
        facts.append("half and bfloat accumulate in float")
    empty = {"nan": "NaN", "inf": "inf", "-inf": "-inf"}.get(spec.empty, spec.empty)
    facts.append(f"a reduction over no element gives {empty} as on CPU (the shared kernel fills it before the stub)")
    facts.append("NaN propagates")
    facts.append("inputs of 2^32 elements or more are refused with an error (32-bit indexing)")
    lines.append(facts[0][:1].upper() + facts[0][1:] + "; " + "; ".join(facts[1:]) + ".")
    losses = _losses(changeset, spec, cut, routed, op)
    if losses:
        lines += ["", "No longer served on MPS: " + "; ".join(losses) + "."]
    common = _new_text(changeset, COMMON_MPS)
    if common is None:
        lines += ["", f"No MPS xfail or skip entry changes: {'it' if len(ops) == 1 else 'these ops'} passed on MPSGraph "
                      "and pass on the kernel."]
    tests = [f'python -m pytest test/test_mps.py -v -k "{" or ".join(f"test_output_match_{n}_mps" for n in _tested(tree, spec))}"']
    if test:
        tests.append(f"python -m pytest {test} -v")
    lines += ["", "Test plan:", "```", *tests, "```"]
    if bench:
        script, before, after = bench_files(spec.kernel)
        lines += [
            "", "Benchmark:", "",
            f"<!-- benchmark table: run `python {script} --label before` with the base commit built and `--label after` "
            f"with this branch built, then replace this comment with what `python {script} --compare {before} {after}` prints. -->",
        ]
    owners = owners_of(tree, [e.relpath for e in changeset.changed])
    if owners:
        lines += ["", "cc " + " ".join(owners)]
    return "\n".join(lines) + "\n"


def companion_files(
    tree: PytorchTree, spec: ReductionSpec, changeset: Changeset, command: str, *, with_test: bool, with_bench: bool
) -> list[tuple[str, str, str, str]]:
    """(flag, file name, text, what to say once written) of each side file asked for."""
    files = []
    if with_test:
        name, text = reduction_shader_test(tree, spec, changeset, f"{command} --with-test")
        files.append(("--with-test", name, text, f"on a Mac, `python -m pytest {name} -v` checks the kernel before you build"))
    if with_bench:
        name, text = reduction_bench_script(spec, f"{command} --with-bench")
        _script, before, after = bench_files(spec.kernel)
        files.append(("--with-bench", name, text, f"run it on a Mac before and after the change (`python {name} --help` "
                      f"says how); `python {name} --compare {before} {after}` prints the table for the PR"))
    return files

"""Plan ``migrate-from-mpsgraph`` for an op served by a reduction spec (``prod`` through
``specs/reductions/prod.yaml``): MPS joins the shared CPU/CUDA line of every row with an MPS
kernel of its own, the MPSGraph implementations (and what only they used) leave the ``.mm``,
and the stub gets a Metal kernel: the params struct in ``kernels/<file>.h``, the kernel and
its ``host_name`` registrations in ``kernels/<file>.metal``, the host function and
``REGISTER_DISPATCH`` in ``operations/<file>.mm``.

The registrations are cut to the (input, output) pairs the tree's host routes: the reduction
iterator of ``make_reduction_from_out_ty`` (``ATen/native/ReduceOpsUtils.h``) casts the input
to the output type, except on the devices its clauses name (2.14.1: half/bfloat beside a float
output, integers beside a long output, on MPS). What MPSGraph served and the Metal kernel does
not (complex, which the spec does not register; a same-type integer product asked for with
``dtype=``) is a loss of dtypes: refused unless ``--allow-dtype-loss``.
"""

from __future__ import annotations

import dataclasses
import re

from mpsgen.changeset import Changeset
from mpsgen.edits import add_include
from mpsgen.edits import mpsgraph as mpsgraph_edit
from mpsgen.edits import native_functions as yaml_edit
from mpsgen.edits.params_header import add_struct, new_header
from mpsgen.errors import Refused
from mpsgen.migrate import find_impls, legacy_rows, mm_files
from mpsgen.newkernel import _append_metal, cmake_note, library_block
from mpsgen.newop import rows_of_op
from mpsgen.reduction import ReductionSpec
from mpsgen.reduction_kernel import (
    REDUCTION_UTILS,
    host_function_name,
    host_text,
    kernel_source,
    params_header,
    read_helpers,
    registrations,
)
from mpsgen.tree import COMMON_MPS, KERNELS_DIR, NATIVE_DIR, NATIVE_FUNCTIONS, OPERATIONS_DIR, PytorchTree
from mpsgen.tree.native_yaml import read_native_functions
from mpsgen.tree.source import mask_c_comments_and_strings, match_close

REDUCE_OPS_UTILS = f"{NATIVE_DIR}/ReduceOpsUtils.h"
FLOATS = ("float", "half", "bfloat")
INTEGERS = ("long", "int", "short", "char", "uchar", "bool")


def routed_pairs(utils_text: str | None, where: str = REDUCE_OPS_UTILS) -> set[tuple[str, str]]:
    """(input, output) Metal type pairs a reduction stub's iterator hands the MPS host, read from
    ``make_reduction_from_out_ty``: the input cast to the output type (every same-type pair),
    plus what its MPS clauses keep beside a wider output."""
    if utils_text is None:
        raise Refused(f"this tree has no {where}: mpsgen reads which input/output dtypes a reduction stub gets from its make_reduction_from_out_ty.")
    masked = mask_c_comments_and_strings(utils_text)
    m = re.search(r"\bmake_reduction_from_out_ty\s*\(", masked)
    brace = masked.find("{", m.end()) if m else -1
    end = match_close(masked, brace) if brace >= 0 else -1
    if end < 0:
        raise Refused(f"{where} defines no make_reduction_from_out_ty; mpsgen cannot tell which dtypes a reduction stub gets on MPS.")
    body = masked[brace:end]
    pairs = {(t, t) for t in FLOATS + INTEGERS}
    # each `const bool name = (...);` clause: which devices it names, and what it keeps
    for clause in re.finditer(r"const\s+bool\s+\w+\s*=([^;]*);", body):
        text = clause.group(1)
        if "is_mps()" not in text:
            continue
        if "kHalf" in text and "kFloat" in text:
            pairs |= {("half", "float"), ("bfloat", "float")}
        if "kLong" in text and "isIntegralType" in text:
            pairs |= {(t, "long") for t in INTEGERS}
    return pairs


def _reduce_ops_cpp_problem(tree: PytorchTree, spec: ReductionSpec) -> str | None:
    """Why the shared CPU path would not reach the stub on MPS (a device check before it), or None."""
    src = tree.read_optional(f"{NATIVE_DIR}/ReduceOps.cpp")
    if src is None:
        return None
    lines = src.text.split("\n")
    for i, line in enumerate(lines):
        if re.search(rf"\b{re.escape(spec.stub)}\s*\(", line):
            window = "\n".join(lines[max(0, i - 40) : i])
            checks = re.findall(r"TORCH_CHECK\s*\(([^;]*is_cpu\(\)[^;]*)\);", window, re.S)
            if checks and not any("is_mps()" in c for c in checks):
                return (
                    f"{NATIVE_DIR}/ReduceOps.cpp checks the device before calling {spec.stub} (line {i + 1}) "
                    "and does not name MPS: the shared kernel would refuse MPS tensors"
                )
    return None


def plan_reduction_migration(tree: PytorchTree, spec: ReductionSpec, op: str, *, allow_dtype_loss: bool = False) -> Changeset:
    yaml_src, table = read_native_functions(tree)
    of_op = rows_of_op(table, op)
    legacy = legacy_rows(of_op)
    if not legacy:
        raise Refused(
            f"{op} has no row with an MPS kernel of its own in {NATIVE_FUNCTIONS}: nothing to migrate.",
            hint=f"`mpsgen explain {op}` shows how it runs on MPS.",
        )
    blocked = [r for r in legacy if not r.migratable]
    if blocked:
        raise Refused(
            f"{len(blocked)} row(s) of {op} cannot join a shared kernel line: "
            + "; ".join(f"{r.name}: {r.problem}" for r in blocked) + ".",
            hint="Fix them by hand and run again.",
        )
    if why := _reduce_ops_cpp_problem(tree, spec):
        raise Refused(f"{why}.", hint=f"Add `|| self.device().is_mps()` to that check by hand, then run again.")
    kernels = {r.mps.kernel for r in legacy}
    found = find_impls(tree, kernels)
    missing = sorted(kernels - set(found))
    if missing:
        raise Refused(
            f"cannot find the MPSGraph implementation of {', '.join(missing)} in {', '.join(mm_files(tree)) or OPERATIONS_DIR}.",
            hint="Point --root at the right checkout, or remove the MPS line and its code by hand.",
        )

    # -- which pairs the host routes, and what MPSGraph served that the kernel will not ------
    utils = tree.read_optional(REDUCE_OPS_UTILS)
    routed = routed_pairs(utils.text if utils is not None else None)
    kept = tuple(p for p in spec.dtypes if p in routed)
    dropped = [p for p in spec.dtypes if p not in routed]
    unserved = sorted(p for p in routed if p[0] == p[1] and p not in spec.dtypes)
    common = tree.read_optional(COMMON_MPS)
    complex_listed = common is not None and re.search(
        rf"SUPPORTED_COMPLEX_OPS\s*=\s*\{{[^}}]*[\"']{re.escape(op)}[\"']", common.text, re.S
    ) is not None
    losses = []
    if complex_listed:
        losses.append(f"complex (MPSGraph's {op} takes it and {COMMON_MPS} lists {op} in SUPPORTED_COMPLEX_OPS; the spec registers no complex pair)")
    if unserved:
        shown = ", ".join(f"{a}->{b}" for a, b in unserved)
        losses.append(f"the same-type pairs {shown} the host routes when dtype= asks for them (the spec registers none)")
    if losses and not allow_dtype_loss:
        raise Refused(
            f"the Metal kernel of {spec.source} would serve fewer dtypes than {op}'s MPSGraph code: " + "; ".join(losses) + ".",
            hint="Add the pairs to the spec (and run `mpsgen try` on it), or pass --allow-dtype-loss to migrate anyway.",
        )
    cut = dataclasses.replace(spec, dtypes=kept)

    changeset = Changeset(tree)
    # -- native_functions.yaml -------------------------------------------------------------
    rows = [r.name for r in legacy]
    changeset.add(yaml_src, yaml_edit.migrate_rows(yaml_src.text, rows, table))
    changeset.notes.append(f"{NATIVE_FUNCTIONS}: MPS joins the shared kernel line of {', '.join(rows)}; its own MPS line is gone")

    # -- the MPSGraph code -----------------------------------------------------------------
    op_names = {op} | {e.base for e in of_op}
    by_file: dict[str, list] = {}
    for fs in found.values():
        for f in fs:
            by_file.setdefault(f.path, []).append(f.impl)
    for rel in sorted(by_file):
        src = tree.read(rel)
        try:
            new_text, removal = mpsgraph_edit.remove_impls(src.text, sorted(by_file[rel], key=lambda i: i.start_line), op_names)
        except mpsgraph_edit.StillUsed as exc:
            raise Refused(
                f"{rel}:{exc.line} still calls {exc.name}, the MPSGraph kernel this migration removes.",
                hint="Make that code call the op (at::...) instead, then run again.",
            ) from None
        changeset.add(src, new_text)
        changeset.notes.append(removal.describe(rel))

    # -- the Metal kernel, its params struct and the host function --------------------------
    header_rel = f"{KERNELS_DIR}/{spec.file}.h"
    metal_rel = f"{KERNELS_DIR}/{spec.file}.metal"
    mm_rel = f"{OPERATIONS_DIR}/{spec.file}.mm"
    helpers_src = tree.read_optional(REDUCTION_UTILS)
    if helpers_src is None:
        raise Refused(f"this tree has no {REDUCTION_UTILS}, whose reduction helpers the kernel calls.")
    kernel = kernel_source(cut, read_helpers(helpers_src.text)).rstrip("\n") + "\n\n" + registrations(cut).rstrip("\n")
    struct = params_header(cut).rstrip("\n")
    header = tree.read_optional(header_rel)
    if header is None:
        changeset.create(header_rel, new_header("#include <c10/metal/common.h>\n\n" + struct))
    else:
        text = add_struct(header.text, struct, cut.params_struct, header_rel)
        if "c10/metal/common.h" not in text:
            text = add_include(text, "c10/metal/common.h")
        changeset.add(header, text)
    metal = tree.read_optional(metal_rel)
    if metal is None:
        from mpsgen.render import render

        body = render("kernel/new_metal.metal.j2", stem=spec.file, kernels=kernel).rstrip("\n") + "\n"
        changeset.create(metal_rel, add_include(body, "c10/metal/reduction_utils.h"))
    else:
        if re.search(rf"\b{re.escape(cut.kernel_function)}\b", metal.text):
            raise Refused(f"{metal_rel} already has a kernel {cut.kernel_function}; the stub may have a Metal kernel already.")
        changeset.add(metal, add_include(_append_metal(metal.text, header_rel, kernel), "c10/metal/reduction_utils.h"))
    mm = tree.read(mm_rel) if tree.exists(mm_rel) else None
    if mm is None:
        raise Refused(f"this tree has no {mm_rel}; mpsgen puts the host function of {spec.stub} there.")
    function = host_text(cut, f"{spec.file}.metal").rstrip("\n")
    changeset.add(mm, _place_host(changeset.current_text(mm), mm_rel, header_rel, function, library_block(tree, spec.file), spec))

    pairs = ", ".join(f"{a}->{b}" for a, b in kept)
    changeset.notes.append(
        f"{header_rel}: {cut.params_struct}; {metal_rel}: {cut.kernel_function} registered for {pairs}; "
        f"{mm_rel}: {host_function_name(cut)} and REGISTER_DISPATCH({spec.stub}, ...)"
    )
    if dropped:
        changeset.notes.append(
            f"not registered (this tree's {REDUCE_OPS_UTILS} casts the input to the output type first): "
            + ", ".join(f"{a}->{b}" for a, b in dropped)
        )
    if metal is None:
        changeset.notes.append(cmake_note(tree))
    for loss in losses:
        changeset.warnings.append(f"--allow-dtype-loss: {op} on MPS loses {loss}.")

    # -- the test lists: complex tests of the op fail now -----------------------------------
    if complex_listed and common is not None:
        changeset.add(common, _drop_from_complex_set(changeset.current_text(common), op))
        changeset.notes.append(f"{COMMON_MPS}: {op} leaves SUPPORTED_COMPLEX_OPS (its complex tests are xfailed by that rule)")
    return changeset


def _drop_from_complex_set(text: str, op: str) -> str:
    m = re.search(r"SUPPORTED_COMPLEX_OPS\s*=\s*\{", text)
    assert m is not None
    end = text.find("}", m.end())
    inner = text[m.end() : end]
    inner = re.sub(rf"\n[ \t]*[\"']{re.escape(op)}[\"'],[ \t]*(?=\n)", "", inner, count=1)
    return text[: m.end()] + inner + text[end:]


_NAMESPACE_END = re.compile(r"^\}\s*//\s*namespace at::native\s*$", re.M)


def _place_host(text: str, rel: str, header_rel: str, function: str, library: str, spec: ReductionSpec) -> str:
    """The host function and its REGISTER_DISPATCH before ``} // namespace at::native``, with the
    includes it needs and the shader library where the file has none."""
    ends = list(_NAMESPACE_END.finditer(text))
    if not ends:
        raise Refused(f"{rel} has no `}} // namespace at::native` line; mpsgen puts {host_function_name(spec)} before it.")
    if re.search(rf"\b{re.escape(host_function_name(spec))}\b|REGISTER_DISPATCH\(\s*{re.escape(spec.stub)}\b", text):
        raise Refused(f"{rel} already has {host_function_name(spec)} or a REGISTER_DISPATCH of {spec.stub}.")
    new = text
    for include in (header_rel[len("aten/src/") :], "fmt/format.h"):
        new = add_include(new, include)
    if not re.search(r"^static auto& lib\b|MetalShaderLibrary lib\b", new, re.M):
        opening = re.search(r"^namespace at::native \{\n", new, re.M)
        if opening is None:
            raise Refused(f"{rel} has no `namespace at::native {{` line for the shader library's declaration.")
        new = new[: opening.end()] + "\n" + library + "\n\n" + new[opening.end() :]
    end = list(_NAMESPACE_END.finditer(new))[-1]
    return new[: end.start()].rstrip("\n") + "\n\n" + function + "\n\n" + new[end.start() :]

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
import textwrap

from mpsgen.patch.changeset import Changeset
from mpsgen.edits import add_include
from mpsgen.edits.mm import NAMESPACE_END, add_shader_library, before_namespace_end
from mpsgen.edits import native_functions as yaml_edit
from mpsgen.edits.params_header import add_struct, new_header
from mpsgen.core.errors import Refused
from mpsgen.core.render import render
from mpsgen.plan.migrate import find_impls, mm_files, remove_mpsgraph_impls
from mpsgen.plan.newkernel import append_kernel_to_metal, cmake_note, library_block
from mpsgen.tree.op_facts import rows_of_op
from mpsgen.tree.legacy import legacy_rows
from mpsgen.spec.reduction import ReductionSpec
from mpsgen.codegen.reduction_dispatch import dispatch_pairs, misfit, op_struct, op_struct_name, read_dispatcher, registration_lines
from mpsgen.codegen.reduction_dispatch import host_text as dispatch_host_text
from mpsgen.codegen.reduction import (
    REDUCTION_UTILS,
    helper_problems,
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


def routed_spec(tree: PytorchTree, spec: ReductionSpec) -> tuple[ReductionSpec, set[tuple[str, str]]]:
    """The spec cut to the (input, output) pairs the tree's host routes, and those pairs."""
    utils = tree.read_optional(REDUCE_OPS_UTILS)
    routed = routed_pairs(utils.text if utils is not None else None)
    return dataclasses.replace(spec, dtypes=tuple(p for p in spec.dtypes if p in routed)), routed


def metal_parts(tree: PytorchTree, cut: ReductionSpec) -> tuple[str, str]:
    """(the kernel and its registrations, the params struct) as the change writes them into
    ``kernels/<file>.metal`` and ``kernels/<file>.h``, against the tree's reduction helpers."""
    helpers_src = tree.read_optional(REDUCTION_UTILS)
    if helpers_src is None:
        raise Refused(f"this tree has no {REDUCTION_UTILS}, whose reduction helpers the kernel calls.")
    kernel = kernel_source(cut, read_helpers(helpers_src.text)).rstrip("\n") + "\n\n" + registrations(cut).rstrip("\n")
    return kernel, params_header(cut).rstrip("\n")


def new_metal_text(stem: str, kernel: str) -> str:
    """``kernels/<stem>.metal`` as the change creates it around ``kernel``."""
    body = render("kernel/new_metal.metal.j2", stem=stem, kernels=kernel).rstrip("\n") + "\n"
    return add_include(body, "c10/metal/reduction_utils.h")


REDUCE_OPS_CPP = f"{NATIVE_DIR}/ReduceOps.cpp"
_DEVICE_CHECK = re.compile(r"TORCH_CHECK\s*\(")


def _stub_callers(text: str, stub: str) -> list[tuple[int, int]]:
    """(start, end) offsets of each top-level function of ``text`` that calls ``stub``."""
    masked = mask_c_comments_and_strings(text)
    spans = []
    for m in re.finditer(rf"\b{re.escape(stub)}\s*\(", masked):
        if masked[: m.start()].rstrip().endswith("DEFINE_DISPATCH("):
            continue
        # the function opens on the last line at column 0 before the call that is no brace or comment
        head = max((h.start() for h in re.finditer(r"^[A-Za-z_][^\n]*\(", masked[: m.start()], re.M)), default=-1)
        if head < 0 or any(a <= head < b for a, b in spans):
            continue
        brace = masked.find("{", head)
        close = match_close(masked, brace) if brace >= 0 else -1
        if close > m.start():
            spans.append((head, close))
    return spans


def whole_complex_callers(text: str, stub: str) -> list[str]:
    """The functions of ``text`` that may hand ``stub`` a complex tensor whole: those calling it
    without first returning from an ``isComplexType`` branch that reduces the input's parts
    (``at::real``/``at::imag``), as std_var_out and std_var_mean_out do."""
    masked = mask_c_comments_and_strings(text)
    whole = []
    for start, end in _stub_callers(text, stub):
        call = re.search(rf"\b{re.escape(stub)}\s*\(", masked[start:end])
        before = masked[start : start + call.start()] if call else ""
        split = False
        for m in re.finditer(r"\bif\s*\(\s*(?:at::)?isComplexType\s*\([^()]*(?:\([^()]*\))?[^()]*\)\s*\)\s*\{", before):
            block = before[m.end() - 1 : match_close(before, m.end() - 1) + 1]
            if re.search(r"\breal\s*\(", block) and re.search(r"\bimag\s*\(", block) and re.search(r"\breturn\b", block):
                split = True
        if not split:
            name = re.match(r"[^(]*?(\w+)\s*\(", masked[start:end])
            whole.append(f"{name.group(1) if name else '?'} ({REDUCE_OPS_CPP}:{text.count(chr(10), 0, start) + 1})")
    return whole


def device_check_edit(text: str, stub: str, where: str = REDUCE_OPS_CPP) -> tuple[str, list[str]]:
    """``text`` with MPS added to each device check (``TORCH_CHECK(self.device().is_cpu() || ...``)
    of a function calling ``stub`` that does not name MPS, and a note of each; refused where a
    check names devices in another way than mpsgen can extend."""
    notes = []
    masked = mask_c_comments_and_strings(text)
    edits: list[tuple[int, int, str]] = []
    for start, end in _stub_callers(text, stub):
        for m in _DEVICE_CHECK.finditer(masked, start, end):
            close = match_close(masked, m.end() - 1)
            call = text[m.start() : close + 1]
            if not re.search(r"is_cpu\(\)|DeviceType::CPU\b|\bkCPU\b", call) or re.search(r"is_mps\(\)|DeviceType::MPS\b|\bkMPS\b", call):
                continue
            comma = masked.find(",", m.end(), close)
            condition = masked[m.end() : comma]
            devices = list(re.finditer(r"(\w+)((?:\.device\(\))?)\.is_\w+\(\)", condition))
            if not devices or re.search(r"&&|!|==", condition):
                line = text.count("\n", 0, m.start()) + 1
                raise Refused(
                    f"{where}:{line} checks the device before {stub} in a form mpsgen cannot extend to MPS: `{' '.join(call.split())}`.",
                    hint="Add MPS to that check by hand, then run again.",
                )
            last = devices[-1]
            at = m.end() + last.end()
            edits.append((at, at, f" || {last.group(1)}{last.group(2)}.is_mps()"))  # (in the form of the last)
            said = re.search(r"(\w+), or (\w+) device", text[comma:close])
            if said:
                edits.append((comma + said.start(), comma + said.end(), f"{said.group(1)}, {said.group(2)}, or MPS device"))
            notes.append(f"{where}:{text.count(chr(10), 0, m.start()) + 1}: MPS joins the device check before {stub}")
    for a, b, new in sorted(edits, reverse=True):
        text = text[:a] + new + text[b:]
    return text, notes


def plan_reduction_migration(tree: PytorchTree, spec: ReductionSpec, op: str, *, allow_dtype_loss: bool = False) -> Changeset:
    yaml_src, table = read_native_functions(tree)
    # every op reaching the stub moves at once: the stub gets one MPS kernel
    ops = [op] + [o for o in spec.ops if o != op]
    of_op = list({e.name: e for o in ops for e in rows_of_op(table, o)}.values())
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
    cpp = tree.read_optional(REDUCE_OPS_CPP)
    if cpp is None or not _stub_callers(cpp.text, spec.stub):
        raise Refused(
            f"{REDUCE_OPS_CPP} {'does not call' if cpp is not None else 'is missing; it calls'} {spec.stub}: mpsgen cannot "
            f"see what the shared kernel checks before reaching it on MPS.",
            hint="Point --root at a PyTorch checkout.",
        )
    cpp_text, cpp_notes = device_check_edit(cpp.text, spec.stub)
    whole = whole_complex_callers(cpp.text, spec.stub)
    if spec.complex == "parts" and whole:
        raise Refused(
            f"{spec.source}: says `complex: parts` (the stub never sees a complex tensor), but {', '.join(whole)} "
            f"hands {spec.stub} its input without reducing a complex one's parts first; its kernels register no complex pair.",
            hint="Decompose complex inputs there as std_var_out does, or drop `complex: parts` from the spec.",
        )
    kernels = {r.mps.kernel for r in legacy}
    found = find_impls(tree, kernels)
    missing = sorted(kernels - set(found))
    if missing:
        raise Refused(
            f"cannot find the MPSGraph implementation of {', '.join(missing)} in {', '.join(mm_files(tree)) or OPERATIONS_DIR}.",
            hint="Point --root at the right checkout, or remove the MPS line and its code by hand.",
        )

    # -- which pairs the host routes, and what MPSGraph served that the kernel will not ------
    cut, routed = routed_spec(tree, spec)
    kept = cut.dtypes
    dropped = [p for p in spec.dtypes if p not in routed]
    # a same-type pair other than the default output's is asked for through a `dtype=` argument
    takes_dtype = any("ScalarType? dtype" in e.func for e in of_op)
    unserved = sorted(p for p in routed if p[0] == p[1] and p not in spec.dtypes) if takes_dtype else []
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

    changeset = Changeset(tree)
    # -- native_functions.yaml -------------------------------------------------------------
    rows = [r.name for r in legacy]
    # rows with a shared line and no MPS kernel at all whose kernel ReduceOps.cpp defines
    # (var.correction_out: `CPU, CUDA: var_out`) run the stub on MPS once it has a kernel
    companions = [
        e.name for e in of_op
        if e.shared_entry is not None and not e.mps_entries
        and re.search(rf"^[\w:<>&, ]+\b{re.escape(e.shared_entry.kernel)}\(", cpp.text, re.M)
    ]
    text = yaml_src.text
    if companions:  # (a line changes in place: the table's line numbers hold for migrate_rows)
        text = yaml_edit.add_mps_to_rows(text, companions, table)
    changeset.add(yaml_src, yaml_edit.migrate_rows(text, rows, table))
    changeset.notes.append(f"{NATIVE_FUNCTIONS}: MPS joins the shared kernel line of {', '.join(rows)}; its own MPS line is gone")
    if companions:
        changeset.notes.append(
            f"{NATIVE_FUNCTIONS}: MPS joins the shared kernel line of {', '.join(companions)} too (no MPS kernel before; "
            f"its kernel in {REDUCE_OPS_CPP} reaches {spec.stub})"
        )
    if cpp_notes:
        changeset.add(cpp, cpp_text)
        changeset.notes.extend(cpp_notes)

    # -- the MPSGraph code -----------------------------------------------------------------
    op_names = set(ops) | {e.base for e in of_op}
    by_file: dict[str, list] = {}
    for fs in found.values():
        for f in fs:
            by_file.setdefault(f.path, []).append(f.impl)
    for rel in sorted(by_file):
        src = tree.read(rel)
        changeset.add(src, remove_mpsgraph_impls(changeset, rel, src.text, by_file[rel], op_names))

    # -- the Metal kernel, its params struct and the host function --------------------------
    header_rel = f"{KERNELS_DIR}/{spec.file}.h"
    metal_rel = f"{KERNELS_DIR}/{spec.file}.metal"
    mm_rel = f"{OPERATIONS_DIR}/{spec.file}.mm"
    helpers_src = tree.read_optional(REDUCTION_UTILS)
    if helpers_src is None:
        raise Refused(f"this tree has no {REDUCTION_UTILS}, whose reduction helpers the kernel calls.")
    mm = tree.read(mm_rel) if tree.exists(mm_rel) else None
    if mm is None:
        raise Refused(f"this tree has no {mm_rel}; mpsgen puts the host function of {spec.stub} there.")
    metal = tree.read_optional(metal_rel)
    # a dispatcher of the file's own (2.14's reduction_dispatch_mps) runs the op where it fits
    disp = read_dispatcher(mm.text, metal.text if metal is not None else None, mm_rel, metal_rel)
    why_not = misfit(cut) if disp is not None else None
    if disp is not None and why_not is None:
        helper_problems_ = helper_problems(cut, read_helpers(helpers_src.text), REDUCTION_UTILS)
        if helper_problems_:
            raise Refused(f"{spec.source or spec.stub}: " + "; ".join(helper_problems_) + ".")
        assert metal is not None  # (read_dispatcher refuses a tree without it)
        registered, widened = dispatch_pairs(cut, kept, disp)
        if re.search(rf'"{re.escape(cut.kernel)}"\s*,|\b{re.escape(op_struct_name(cut))}\b', metal.text) and op_struct(cut):
            raise Refused(f"{metal_rel} already registers {cut.kernel} kernels or has {op_struct_name(cut)}; the stub may have a Metal kernel already.")
        block = "\n\n".join(t for t in (op_struct(cut).rstrip("\n"), registration_lines(cut, disp, registered)) if t)
        changeset.add(metal, add_include(metal.text.rstrip("\n") + "\n\n" + block + "\n", "c10/metal/reduction_utils.h"))
        function = dispatch_host_text(cut, disp, widened, f"{spec.file}.metal").rstrip("\n")
        changeset.add(mm, _place_host(changeset.current_text(mm), mm_rel, None, function, library_block(tree, spec.file), spec))
        changeset.notes.append(
            f"{metal_rel}: {op_struct_name(cut)} and {disp.macro} for "
            + ", ".join(f"{a}->{b}" for a, b in registered)
            + f" ({', '.join(v or 'generic' for v in disp.variants)} kernels each); {mm_rel}: {host_function_name(cut)} calls "
            f"{disp.function} ({disp.where}) and REGISTER_DISPATCH({spec.stub}, ...)"
        )
        if widened:
            changeset.notes.append(
                f"{', '.join(f'{a}->{b}' for a, b in widened)}: reduced through the {', '.join(f'{a}->float' for a, _b in widened)} kernels and rounded "
                f"(the value kernels of {metal_rel} accumulate in their output type)"
            )
    else:
        kernel, struct = metal_parts(tree, cut)
        header = tree.read_optional(header_rel)
        if header is None:
            changeset.create(header_rel, new_header("#include <c10/metal/common.h>\n\n" + struct))
        else:
            text = add_struct(header.text, struct, cut.params_struct, header_rel)
            if "c10/metal/common.h" not in text:
                text = add_include(text, "c10/metal/common.h")
            changeset.add(header, text)
        if metal is None:
            changeset.create(metal_rel, new_metal_text(spec.file, kernel))
        else:
            if re.search(rf"\b{re.escape(cut.kernel_function)}\b", metal.text):
                raise Refused(f"{metal_rel} already has a kernel {cut.kernel_function}; the stub may have a Metal kernel already.")
            changeset.add(metal, add_include(append_kernel_to_metal(metal.text, header_rel, kernel), "c10/metal/reduction_utils.h"))
        function = host_text(cut, f"{spec.file}.metal").rstrip("\n")
        if disp is not None:  # (the file's dispatcher cannot run it: say why, where a reader looks)
            why = textwrap.wrap(f"not through {disp.function}: {why_not}", 116)
            function = "".join(f"// {ln}\n" for ln in why) + function
            changeset.notes.append(f"{mm_rel}: {spec.stub} gets a kernel of its own, not {disp.function} ({disp.where}): {why_not}")
        changeset.add(mm, _place_host(changeset.current_text(mm), mm_rel, header_rel, function, library_block(tree, spec.file), spec))
        changeset.notes.append(
            f"{header_rel}: {cut.params_struct}; {metal_rel}: {cut.kernel_function} registered for "
            + ", ".join(f"{a}->{b}" for a, b in kept)
            + f"; {mm_rel}: {host_function_name(cut)} and REGISTER_DISPATCH({spec.stub}, ...)"
        )

    if spec.complex == "parts":
        changeset.notes.append(
            f"complex inputs reach {spec.stub} as their real and imaginary parts ({REDUCE_OPS_CPP} reduces the parts of a "
            f"complex input before it): the float kernels serve them; the host refuses a complex tensor should one come"
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
        keys = complex_keys(changeset.current_text(common), op)
        changeset.add(common, _drop_from_complex_set(changeset.current_text(common), keys))
        changeset.notes.append(
            f"{COMMON_MPS}: {' and '.join(keys)} {'leave' if len(keys) > 1 else 'leaves'} SUPPORTED_COMPLEX_OPS "
            f"(their complex tests are xfailed by that rule)"
        )
    return changeset


def complex_keys(text: str, op: str) -> list[str]:
    """The keys of ``SUPPORTED_COMPLEX_OPS`` whose tests run ``op`` on complex input: the op's own
    and its masked variant's (``masked.prod`` reduces through ``prod``)."""
    m = re.search(r"SUPPORTED_COMPLEX_OPS\s*=\s*\{([^}]*)\}", text, re.S)
    listed = re.findall(r"[\"']([\w.]+)[\"']", m.group(1)) if m else []
    return [k for k in (op, f"masked.{op}") if k in listed]


def _drop_from_complex_set(text: str, keys: list[str]) -> str:
    m = re.search(r"SUPPORTED_COMPLEX_OPS\s*=\s*\{", text)
    assert m is not None
    end = text.find("}", m.end())
    inner = text[m.end() : end]
    for key in keys:
        inner = re.sub(rf"\n[ \t]*[\"']{re.escape(key)}[\"'],[ \t]*(?=\n)", "", inner, count=1)
    return text[: m.end()] + inner + text[end:]


def _place_host(text: str, rel: str, header_rel: str | None, function: str, library: str, spec: ReductionSpec) -> str:
    """The host function and its REGISTER_DISPATCH before ``} // namespace at::native``, with the
    includes it needs and the shader library where the file has none."""
    if not NAMESPACE_END.search(text):
        raise Refused(f"{rel} has no `}} // namespace at::native` line; mpsgen puts {host_function_name(spec)} before it.")
    if re.search(rf"\b{re.escape(host_function_name(spec))}\b|REGISTER_DISPATCH\(\s*{re.escape(spec.stub)}\b", text):
        raise Refused(f"{rel} already has {host_function_name(spec)} or a REGISTER_DISPATCH of {spec.stub}.")
    new = text
    # (ATen/native/Pool.h declares safe_downcast, the host's checked narrowing: upstream's ReduceOps.mm includes it too)
    for include in ((header_rel[len("aten/src/") :], "ATen/native/Pool.h", "fmt/format.h") if header_rel else ()):
        new = add_include(new, include)
    return before_namespace_end(add_shader_library(new, rel, library + "\n\n"), function)

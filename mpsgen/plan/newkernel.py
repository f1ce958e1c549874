"""Plan ``new-kernel``: a custom (non-TensorIterator) Metal kernel for one op, from a kernel spec
and a tree to a changeset, in the shape of upstream's custom kernels (GridSampler, pooling,
embedding_bag): ``kernels/<Stem>.h`` holds the params struct the host and the shader share,
``kernels/<Stem>.metal`` the kernel template and one ``host_name`` registration per dtype,
``operations/<Stem>.mm`` the host function that checks, allocates, fills the struct and
dispatches one thread per output element; the op's row gets ``MPS: <op>_mps``.

What the tree decides is read from it: how its ``.mm`` files get the compiled shader library,
whether its ``OperationUtils.h`` has the dispatch helpers the host code calls, the op's schema,
the stem's files when they exist (the kernel joins them), the tests' lists, and which other
ops the op's tests need on MPS (``tools/autograd/derivatives.yaml``).
"""

from __future__ import annotations

import functools
import re
import textwrap

from mpsgen.patch.changeset import Changeset
from mpsgen.edits import add_include
from mpsgen.edits.mm import COLUMN_LIMIT, NAMESPACE_END, add_shader_library, before_namespace_end, wrap_arguments
from mpsgen.edits.params_header import add_struct
from mpsgen.core.errors import BadInput, MpsgenError, Refused
from mpsgen.codegen.kernel import KernelSignature, kernel_signature, kernel_text, struct_text
from mpsgen.spec.kernel import FIXED_INPUT_TYPES, KernelSpec
from mpsgen.spec.op import FunctorSource
from mpsgen.core.render import render
from mpsgen.core.resources import resource_dir
from mpsgen.metal import SCALAR_TYPES, TORCH_NAMES
from mpsgen.tree import NATIVE_FUNCTIONS, PytorchTree
from mpsgen.tree.native_yaml import NativeFunction, read_native_functions, scan_native_functions
from mpsgen.tree.op_facts import formatted_name, opinfo_keys
from mpsgen.tree.schema import output_count

MPS_DIR = "aten/src/ATen/native/mps"
OPERATION_UTILS = f"{MPS_DIR}/OperationUtils.h"
DERIVATIVES = "tools/autograd/derivatives.yaml"
# what the host code calls, and the header of the tree that must declare it
HOST_HELPERS = ("mtl_setArgs", "mtl_dispatch1DJob", "dispatch_sync_with_rethrow", "scalarToMetalTypeString", "getBundledLibrary")
_LIBRARY = re.compile(
    r"^#ifndef PYTORCH_JIT_COMPILE_SHADERS\n(static auto& lib = (?:mps::|at::native::mps::)?MetalShaderLibrary::getBundledLibrary\(\);)\n"
    r"#else\n#include <ATen/native/mps/(\w+)_metallib\.h>\n#endif$",
    re.M,
)
_BUNDLED = re.compile(r"^static auto& lib = (?:mps::|at::native::mps::)?MetalShaderLibrary::getBundledLibrary\(\);$", re.M)


def kernel_paths(stem: str) -> tuple[str, str, str]:
    """(header, .metal, .mm) of a stem: kernels/X.h, kernels/X.metal, operations/X.mm."""
    return f"{MPS_DIR}/kernels/{stem}.h", f"{MPS_DIR}/kernels/{stem}.metal", f"{MPS_DIR}/operations/{stem}.mm"


def choose_row(spec: KernelSpec, rows: list[NativeFunction], yaml_text: str | None = None) -> NativeFunction:
    """The one row new-kernel dispatches: the op's functional row with a kernel of its own, or
    its structured out= row that its other rows delegate to."""
    own = [r for r in rows if r.base == spec.name]
    where = NATIVE_FUNCTIONS
    if not own:
        raise BadInput(
            f"{NATIVE_FUNCTIONS} has no op {spec.name!r}.",
            hint="Give the aten name as the yaml spells it (`- func: <name>(...)`), e.g. _pdist_forward.",
        )
    if any(r.mps_entries for r in own):
        r = next(r for r in own if r.mps_entries)
        raise Refused(
            f"{where}:{r.mps_entries[0].line}: {r.name} already dispatches MPS ({r.mps_entries[0].kernel}); "
            "new-kernel adds a kernel to ops that have none.",
            hint="Run `mpsgen explain " + spec.name + "` to see where its MPS kernel lives.",
        )
    dispatched = [r for r in own if r.dispatch and not r.structured_delegate]
    structured = [r for r in dispatched if r.structured]
    names = ", ".join(r.name for r in own)
    if structured:  # the out= row's TORCH_IMPL_FUNC; the functional and in-place rows delegate to it
        if len(dispatched) != 1:
            raise Refused(
                f"{where}:{own[0].start_line}: {spec.name} has the rows {names}, with kernels of their own beside its "
                "structured one; new-kernel writes the structured row's TORCH_IMPL_FUNC only.",
                hint="Write the other rows' kernels by hand.",
            )
        if yaml_text is not None and "\n  precomputed:" in _entry_text(yaml_text, structured[0]):
            raise Refused(
                f"{where}:{structured[0].start_line}: {structured[0].name} has `precomputed:` arguments, which change its "
                "TORCH_IMPL_FUNC's parameters; new-kernel does not write those.",
                hint="Write its TORCH_IMPL_FUNC by hand.",
            )
    elif len(dispatched) != 1 or dispatched[0].overload:
        raise Refused(
            f"{where}:{own[0].start_line}: {spec.name} has the rows {names}; new-kernel writes one functional host "
            "function (`Tensor <op>_mps(...)`), or a structured row's TORCH_IMPL_FUNC, and this op's rows are neither "
            "one functional row nor a structured out= row its other rows delegate to.",
            hint="Write the host code of ops with several kernels by hand.",
        )
    row = dispatched[0]
    keys = {k for d in row.dispatch for k in d.keys}
    if keys and not all(k.startswith("Composite") for k in keys) and not keys & {"CPU", "CUDA"}:
        raise Refused(
            f"{where}:{row.start_line}: {row.name} dispatches {', '.join(sorted(keys))}: no dense CPU or CUDA kernel "
            "beside which an MPS one belongs; new-kernel writes dense (strided) kernels."
        )
    if all(k.startswith("Composite") for k in keys):
        raise Refused(
            f"{where}:{row.start_line}: {row.name} dispatches {', '.join(sorted(keys))} only: it runs on MPS through the "
            "ops it calls; a kernel of its own is not what its tests miss.",
            hint="If a kernel is what you want for speed, write its dispatch line by hand.",
        )
    if output_count(row.func) != 1 or "Tensor[]" in row.func.split("->")[-1]:
        raise Refused(f"{where}:{row.start_line}: {row.name} does not return one Tensor; new-kernel writes one output per thread.")
    if "pointwise" in row.tags or any("pointwise" in r.tags for r in own):
        raise Refused(
            f"{where}:{row.start_line}: {spec.name} is tagged pointwise: an elementwise op, whose MPS kernel is a functor "
            f"run by TensorIterator through its stub, not a custom kernel.",
            hint=f"Run `mpsgen explain {spec.name}` for the new-op command.",
        )
    return row


def _entry_text(yaml_text: str, row: NativeFunction) -> str:
    lines = _yaml_lines(yaml_text)
    return "\n".join(lines[row.start_line - 1 : row.end_line])


@functools.lru_cache(maxsize=2)
def _yaml_lines(yaml_text: str) -> list[str]:
    return yaml_text.split("\n")  # (once a run: explain and coverage ask for several ops)


def library_block(tree: PytorchTree, stem: str) -> str:
    """How the tree's ``.mm`` files get the compiled shader library, for ``stem``."""
    fallback = None
    for rel in tree.list_files(f"{MPS_DIR}/operations", (".mm",)):
        text = tree.read(rel).text
        m = _LIBRARY.search(text)
        if m is not None:
            return f"#ifndef PYTORCH_JIT_COMPILE_SHADERS\n{m.group(1)}\n#else\n#include <ATen/native/mps/{stem}_metallib.h>\n#endif"
        if fallback is None and (b := _BUNDLED.search(text)) is not None:
            fallback = b.group(0)
    if fallback is not None:
        return fallback
    raise Refused(
        f"no file of {MPS_DIR}/operations gets its shader library from MetalShaderLibrary::getBundledLibrary(); "
        "this tree builds its .metal files in another way than new-kernel knows (a tree older than torch 2.6?).",
        hint="Write the host code by hand, or update the checkout.",
    )


def helper_problems(tree: PytorchTree) -> list[str]:
    """Helpers the host code calls that the tree's headers do not declare."""
    texts = "".join(
        tree.read(rel).text for rel in (OPERATION_UTILS, f"{MPS_DIR}/MetalShaderLibrary.h") if tree.exists(rel)
    )
    return [h for h in HOST_HELPERS if not re.search(rf"\b{h}\b", texts)]


def cmake_note(tree: PytorchTree) -> str:
    """Whether the build picks the new ``.metal`` file up by itself."""
    for rel in ("cmake/Metal.cmake", "aten/src/ATen/CMakeLists.txt", "caffe2/CMakeLists.txt"):
        src = tree.read_optional(rel)
        if src is not None and re.search(r"native/mps/kernels/\*\.metal", src.text):
            return f"{rel} builds native/mps/kernels/*.metal by glob: the build needs no change"
    return (
        "no CMake file of this checkout was found globbing native/mps/kernels/*.metal (cmake/Metal.cmake, "
        "aten/src/ATen/CMakeLists.txt): if the build lists .metal files by name, add the new one there"
    )


def _dtype_condition(spec: KernelSpec, first: str) -> str:
    return " || ".join(f"{first}.scalar_type() == {SCALAR_TYPES[d]}" for d in spec.dtypes)


def host_checks(spec: KernelSpec, sig: KernelSignature) -> list[list[str]]:
    """The TORCH_CHECK arguments of the host function: the spec's (as the CPU op makes them),
    the dtypes the kernel is registered for, the inputs' common dtype, and the dimensions the
    params struct has room for."""
    host = sig.host_function
    typed = [t for t in sig.inputs if sig.metal_type(t) == "T"]
    first = sig.schema_name(typed[0])
    out = [[c.require, *c.message_parts()] for c in spec.checks]
    dtypes = ", ".join(spec.dtypes)
    out.append([_dtype_condition(spec, first), f'"{host}: unsupported dtype "', f"{first}.scalar_type()", f'" (the kernel has {dtypes})"'])
    for t, fixed in sig.input_types:
        name = sig.schema_name(t)
        out.append([f"{name}.scalar_type() == {FIXED_INPUT_TYPES[fixed]}", f'"{host}: expected {name} to have dtype {FIXED_INPUT_TYPES[fixed][1:]}, got "', f"{name}.scalar_type()"])
    for t in map(sig.schema_name, typed[1:]):
        out.append([
            f"{t}.scalar_type() == {first}.scalar_type()", f'"{host}: expected {t} to have dtype "', f"{first}.scalar_type()",
            '", got "', f"{t}.scalar_type()",
        ])
    names = list(map(sig.schema_name, sig.inputs))
    out.append([
        " && ".join(f"{t}.dim() <= {spec.max_dims}" for t in names),
        f'"{host}: the kernel takes tensors of up to {spec.max_dims} dimensions"',
    ])
    return out


def check_call(args: list[str], indent: int = 2) -> str:
    """``TORCH_CHECK(args);`` as clang-format lays it out in PyTorch's .mm files (120 columns):
    on one line, else one argument a line aligned after the bracket, a condition too long for
    its line broken after its ``||``/``&&`` and continued 4 columns further in."""
    head = " " * indent + "TORCH_CHECK("
    one = head + ", ".join(args) + ");"
    if len(one) <= COLUMN_LIMIT:
        return one
    col = len(head)
    lines = []
    for k, arg in enumerate(args):
        end = ");" if k == len(args) - 1 else ","
        lead = head if k == 0 else " " * col
        if len(lead) + len(arg) + len(end) <= COLUMN_LIMIT:
            lines.append(lead + arg + end)
            continue
        terms = re.split(r"(?<= \|\|)\s|(?<= &&)\s", arg)
        line = lead
        for term in terms:
            if line.strip() and len(line) + len(term) + 1 > COLUMN_LIMIT:
                lines.append(line.rstrip())
                line = " " * (col + 4)
            line += term + " "
        lines.append(line.rstrip() + end)
    return "\n".join(lines)


def host_text(spec: KernelSpec, sig: KernelSignature) -> str:
    """The kernel function (in ``namespace mps``) and the entry point: ``Tensor <op>_mps(...)``
    allocating its output, or a structured row's ``TORCH_IMPL_FUNC(<op>_out_mps)`` writing its
    out= tensor (through a contiguous temporary when it is strided)."""
    first = sig.schema_name(next(t for t in sig.inputs if sig.metal_type(t) == "T"))
    output = sig.out or "output"
    fits = check_call([
        " && ".join(f"canUse32BitIndexMath({output if t == 'output' else sig.schema_name(t)})" for t in sig.struct_tensors),
        f'"{sig.host_function}: tensors with 2^31 elements or more are not supported yet"',
    ])
    checks = [check_call(args) for args in host_checks(spec, sig)]
    impl = ["const Tensor& output"] + [f"const Tensor& {t}" for t in sig.inputs] + [f"{s.host_type} {s.name}" for s in sig.scalars]
    names = ["output", *map(sig.schema_name, sig.inputs), *(s.name for s in sig.scalars)]
    if sig.structured:
        head = f"TORCH_IMPL_FUNC({sig.host_function})("
        params = ", ".join(sig.host_parameters())
        if len(head) + len(params) + len(") {") <= COLUMN_LIMIT:
            signature = head + params + ")"
        else:  # clang-format breaks after the macro's name
            signature = f"TORCH_IMPL_FUNC({sig.host_function})\n(" + wrap_arguments("(", sig.host_parameters(), ") {") + ")"
        entry = render(
            "kernel/entry_structured.mm.j2", spec=spec, signature=signature, checks=checks, fits=fits, out=sig.out,
            impl_arguments=", ".join(names),
        )
    else:
        if spec.output_like is not None:
            allocate = f"at::empty_like({sig.schema_name(spec.output_like)}, MemoryFormat::Contiguous)"
        else:
            allocate = f"at::empty({spec.output_sizes}, {first}.options())"
        head = f"Tensor {sig.host_function}("
        signature = head + wrap_arguments(head, sig.host_parameters(), ") {") + ")"
        entry = render(
            "kernel/entry.mm.j2", spec=spec, signature=signature, checks=checks, allocate=allocate, fits=fits,
            impl_arguments=", ".join(names),
        )
    said = f"{spec.name}: one thread per output element (kernel {spec.kernel} of {kernel_paths(spec.file)[1].rpartition('/')[2]})"
    comment = "\n".join("// " + ln for ln in textwrap.wrap(said, COLUMN_LIMIT - 3, break_long_words=False))
    pso = f'      auto pso = lib.getPipelineStateForFunc(fmt::format("{spec.kernel}_{{}}", scalarToMetalTypeString(output)));'
    if len(pso) > COLUMN_LIMIT:  # clang-format breaks after the `=`
        pso = pso.replace("auto pso = ", "auto pso =\n          ", 1)
    d = next(v for v in ("dim", "axis", "d", "k") if v not in {*sig.inputs, *(s.name for s in sig.scalars)})
    fill = []
    for t in sig.struct_tensors:
        stride = f"    params.{t}_strides[{d}] = {t}.size({d}) == 1 ? 0 : safe_downcast<int32_t, int64_t>({t}.stride({d}));"
        if len(stride) > COLUMN_LIMIT:  # clang-format breaks after the `=`
            stride = stride.replace(" = ", " =\n        ", 1)
        fill += [
            f"  params.{t}_ndim = {t}.dim();",
            f"  for (const auto {d} : c10::irange({t}.dim())) {{",
            f"    params.{t}_sizes[{d}] = safe_downcast<int32_t, int64_t>({t}.size({d}));",
            stride,
            "  }",
        ]
    return render(
        "kernel/host.mm.j2", spec=spec, tensors=sig.struct_tensors, scalars=sig.scalars, inputs=sig.inputs,
        metal_rel=kernel_paths(spec.file)[1], entry=entry, comment=comment, pso=pso, fill="\n".join(fill),
        impl_parameters=wrap_arguments(f"static void {spec.kernel}_kernel(", impl, ") {"),
    ).rstrip("\n")


def new_mm_text(spec: KernelSpec, header_rel: str, library: str, function: str) -> str:
    return render(
        "kernel/new_mm.mm.j2", header=header_rel[len("aten/src/"):], library=library, function=function,
        per_operator=sorted([f"{spec.name}_native", "empty_like" if spec.output_like is not None else "empty"]),
    )


def _include_common(text: str) -> str:
    """``#include <c10/metal/common.h>`` (``::c10::metal::array``) in a header that lacks it:
    among its includes, else after its ``#pragma once``."""
    if "#include <c10/metal/common.h>" in text:
        return text
    if re.search(r"^#include ", text, re.M):
        return add_include(text, "c10/metal/common.h")
    pragma = re.search(r"^#pragma once\n", text, re.M)
    at = pragma.end() if pragma else 0
    return text[:at] + "#include <c10/metal/common.h>\n" + text[at:]


def append_kernel_to_metal(text: str, header_rel: str, kernel: str) -> str:
    """The kernel after the file's code, with the includes it needs (its params header, and
    c10/metal/utils.h for opmath_t); the file's `using namespace` lines are left as they are:
    the body was compiled under them."""
    new = add_include(text, header_rel[len("aten/src/"):])
    new = add_include(new, "c10/metal/utils.h")
    return new.rstrip("\n") + "\n\n" + kernel + "\n"


def metal_usings(text: str | None) -> tuple[str, ...]:
    """The namespaces a .metal file opens with `using namespace` (a new file: metal and c10::metal)."""
    if text is None:
        return ("metal", "c10::metal")
    return tuple(n for n in ("metal", "c10::metal") if re.search(rf"^using namespace (?:::)?{re.escape(n)};", text, re.M))


def _append_mm(text: str, rel: str, spec: KernelSpec, header_rel: str, library: str, function: str) -> str:
    if not NAMESPACE_END.search(text):
        raise Refused(
            f"{rel} has no `}} // namespace at::native` line; new-kernel puts the host function before it.",
            hint="Add the host function by hand (its text: `mpsgen new-kernel ... --dry-run` on a copy without the file).",
        )
    new = text
    for include in (header_rel[len("aten/src/"):], "ATen/native/Pool.h", "fmt/format.h"):
        new = add_include(new, include)
    new = add_shader_library(_add_per_operator_header(new, spec), rel, library + "\n")
    return before_namespace_end(new, function)


def _add_per_operator_header(text: str, spec: KernelSpec) -> str:
    """``#include <ATen/ops/<op>_native.h>`` in the file's per-operator block, when it has one."""
    allocate = "empty_like" if spec.output_like is not None else "empty"
    headers = [f"#include <ATen/ops/{spec.name}_native.h>", f"#include <ATen/ops/{allocate}.h>"]
    block = re.search(r"^#else\n((?:#include <ATen/ops/\w+\.h>\n)+)#endif", text, re.M)
    if block is None:
        return text
    lines = block.group(1).rstrip("\n").split("\n") + headers
    return text[: block.start(1)] + "\n".join(sorted(set(lines))) + "\n" + text[block.end(1):]


def _add_dispatch_line(text: str, row: NativeFunction, kernel: str) -> str:
    """``    MPS: <kernel>`` after the last line of ``row``'s dispatch block."""
    lines = text.split("\n")
    last = max(d.line for d in row.dispatch)  # 1-based
    indent = re.match(r"\s*", lines[last - 1]).group(0)
    lines.insert(last, f"{indent}MPS: {kernel}")
    return "\n".join(lines)


def kernel_target(tree: PytorchTree, spec: KernelSpec) -> KernelSignature:
    """The row new-kernel dispatches and what its schema gives the kernel (refused where it cannot)."""
    yaml_src, table = read_native_functions(tree)
    row = choose_row(spec, table.of_op(spec.name), yaml_src.text)
    return kernel_signature(spec, row, f"{NATIVE_FUNCTIONS}:{row.start_line}")


def plan_new_kernel(tree: PytorchTree, spec: KernelSpec) -> Changeset:
    from mpsgen.shim.kernel_trial import check_kernel_body  # (local: explain and coverage read kernel targets without try's machinery)

    yaml_src, table = read_native_functions(tree)
    sig = kernel_target(tree, spec)
    row = sig.row
    missing = helper_problems(tree)
    if missing:
        raise Refused(
            f"this tree's {OPERATION_UTILS} and MetalShaderLibrary.h declare no {', '.join(missing)}, which the host code "
            "new-kernel writes calls (upstream's custom kernels use them since torch 2.6).",
            hint="Update the checkout, or write the host code by hand.",
        )
    header_rel, metal_rel, mm_rel = kernel_paths(spec.file)
    changeset = Changeset(tree)
    metal = tree.read_optional(metal_rel)
    problems = check_kernel_body(spec, sig, metal_usings(metal.text if metal is not None else None))
    if problems:
        changeset.blockers.extend(problems)
    struct = struct_text(spec, sig)
    kernel = kernel_text(spec, sig)
    library = library_block(tree, spec.file)
    function = host_text(spec, sig)

    header = tree.read_optional(header_rel)
    if header is None:
        changeset.create(header_rel, render("kernel/new_header.h.j2", structs=struct).rstrip("\n") + "\n")
    else:
        changeset.add(header, _include_common(add_struct(header.text, struct, spec.params_struct, header_rel)))
    if metal is None:
        changeset.create(metal_rel, render("kernel/new_metal.metal.j2", stem=spec.file, kernels=kernel).rstrip("\n") + "\n")
    else:
        taken = re.search(rf"\bkernel\s+void\s+{re.escape(spec.kernel)}\b|host_name\(\"{re.escape(spec.kernel)}_", metal.text)
        if taken:
            line = metal.text.count("\n", 0, taken.start()) + 1
            raise Refused(f"{metal_rel}:{line} already has a kernel {spec.kernel}; give the spec another 'kernel' name.")
        changeset.add(metal, append_kernel_to_metal(metal.text, header_rel, kernel))
    mm = tree.read_optional(mm_rel)
    if mm is None:
        changeset.create(mm_rel, new_mm_text(spec, header_rel, library, function).rstrip("\n") + "\n")
    else:
        if re.search(rf"\b{re.escape(sig.host_function)}\b", mm.text):
            raise Refused(f"{mm_rel} already defines {sig.host_function}; new-kernel does not write it twice.")
        changeset.add(mm, _append_mm(mm.text, mm_rel, spec, header_rel, library, function))
    changeset.add(yaml_src, _add_dispatch_line(changeset.current_text(yaml_src), row, sig.host_function))
    changeset.notes.append(
        f"{header_rel}: {spec.params_struct}; {metal_rel}: kernel {spec.kernel} registered for {', '.join(spec.dtypes)} "
        f"({', '.join(spec.host_names())}); {mm_rel}: {sig.host_function}; {NATIVE_FUNCTIONS}: {row.name} gets "
        f"`MPS: {sig.host_function}`"
    )
    if metal is None:  # (a kernel joining an existing file needs nothing of the build)
        changeset.notes.append(cmake_note(tree))
    _edit_tests(tree, changeset, spec, table)
    from mpsgen.plan.aoti import sync_c_shim  # (local: explain loads the AOTI shim's machinery only when a plan gets this far)

    sync_c_shim(changeset)
    return changeset


def _edit_tests(tree: PytorchTree, changeset: Changeset, spec: KernelSpec, table) -> None:
    """The test lists: the OpInfos of the op (or, for a backward op, of the ops whose derivative
    calls it) lose their missing-kernel xfails once every op their tests run is on MPS."""
    from mpsgen.plan.testlists import edit_test_lists, next_steps  # (local: explain and coverage read kernel targets without the test-list edits)

    derivatives = tree.read_optional(DERIVATIVES)
    new_table = scan_native_functions(changeset.current_text(tree.read(NATIVE_FUNCTIONS)))
    forward = [spec.name]
    if derivatives is not None:
        forward = [spec.name] + callers_of(derivatives.text, spec.name)
    # the ops whose OpInfos name them; else, with OpInfos the spec names, every op the kernel's
    # op and its callers are (which of them an OpInfo runs is not known: all must be on MPS)
    targets = None
    tested_ops: list[str] = []
    for op in forward:
        t = opinfo_keys(tree, op, table)
        if t.found:
            targets = targets or t
            tested_ops.append(op)
    if targets is None and spec.opinfo:
        t = opinfo_keys(tree, spec.name, table, extra=set(spec.opinfo))
        if t.found:
            targets, tested_ops = t, list(forward)
    if targets is None:
        changeset.warnings.append(
            f"no OpInfo names {spec.name} (nor {', '.join(spec.opinfo) or 'an OpInfo given in the spec'}): nothing in the "
            "tests runs the kernel; name its OpInfo under 'opinfo' in the spec, or add one."
        )
        changeset.next_steps = next_steps([], [formatted_name(spec.name, "")])
        return
    needed = set(tested_ops)
    if derivatives is None:
        changeset.kept.append(
            f"{DERIVATIVES} is not in this tree, so mpsgen cannot tell which backward ops the tests of "
            f"{', '.join(sorted(targets.found))} also run: their MPS xfails stay; remove them by hand once the tests pass"
        )
        changeset.next_steps = next_steps([], sorted(targets.test_names[k] for k in targets.found))
        return
    for op in tested_ops:
        needed.update(backward_ops(derivatives.text, op))
    off_mps = sorted(op for op in needed if op != spec.name and _lacks_mps(new_table, op))
    if off_mps:
        changeset.kept.append(
            f"the MPS xfails of {', '.join(sorted(targets.found))} stay: their tests also run "
            f"{', '.join('aten::' + o for o in off_mps)} ({DERIVATIVES}), which has no MPS kernel yet; they go with "
            f"the change that adds the last of them"
        )
        shipped = (resource_dir("specs") / "kernels" / f"{off_mps[0]}.yaml").is_file()
        why_not = not_a_kernel_op(tree, off_mps[0], table)
        if shipped or why_not is None:
            then = f"then:   mpsgen new-kernel {off_mps[0]}" + ("" if shipped else " --spec SPEC   (a kernel spec of it: specs/kernels/README.md)")
        else:
            then = f"then:   {off_mps[0]} on MPS, by hand ({why_not})"
        changeset.next_steps = [
            next_steps([], [])[0],
            f"try:    mpsgen try {spec.source if spec.source and not _shipped(spec) else spec.name}   (the kernel against torch's CPU op, on this machine)",
            then + f"; {', '.join(sorted(targets.found))}'s xfails go with it",
        ]
        return
    registered = {f"torch.{n}" for n in _torch_names(spec.dtypes)}
    unxfailed = edit_test_lists(tree, changeset, targets, tested_ops[0], registered, set())
    changeset.next_steps = next_steps(unxfailed, sorted(targets.test_names[k] for k in targets.found))
    # TestCommon.test_dtypes fails for a dtype that works but is not claimed, or claimed but fails
    claimed = {d for d in targets.dtypes if d not in ("torch.float64", "torch.complex128")}  # (MPS has no doubles)
    if claimed and registered != claimed and any(c == "TestCommon" and t in ("", "test_dtypes") for c, t, _n, _d in unxfailed):
        names = ", ".join(sorted(targets.found))
        metal = {"torch.float32": "float", "torch.float16": "half", "torch.bfloat16": "bfloat"}
        shown = lambda ds: ", ".join(sorted(d.replace("torch.", "") for d in ds))  # noqa: E731
        fix = f"--dtypes {','.join(sorted(metal[d] for d in claimed))}" if claimed <= metal.keys() else "other dtypes"
        changeset.blockers.append(
            f"the change un-xfails TestCommon.test_dtypes of {names} on MPS, which fails unless the dtypes the op works "
            f"in are those its OpInfo claims there ({shown(claimed)}); the kernel registers {shown(registered)}. Give "
            f"{fix}, or add `dtypesIfMPS=` naming the kernel's dtypes to the OpInfo, then run again (or --force)."
        )


def not_a_kernel_op(tree: PytorchTree, op: str, table) -> str | None:
    """Why new-kernel could not write ``op``'s kernel (None: it could, given a spec)."""
    probe = KernelSpec(op, "X", op.lstrip("_") or op, FunctorSource(), inputs=None)
    try:
        kernel_signature(probe, choose_row(probe, table.of_op(op), tree.read(NATIVE_FUNCTIONS).text), NATIVE_FUNCTIONS, allocation=False)
    except MpsgenError as exc:
        return exc.message.split(": ", 1)[-1].rstrip(".")
    return None


def _shipped(spec: KernelSpec) -> bool:
    return spec.source is not None and spec.source == str(resource_dir("specs") / "kernels" / f"{spec.name}.yaml")


def _torch_names(dtypes: tuple[str, ...]) -> list[str]:
    return [TORCH_NAMES[d] for d in dtypes]


def _lacks_mps(table, op: str) -> bool:
    rows = [r for r in table.of_op(op) if r.base == op]
    if not rows:
        return False  # not a native function: not a kernel the tests need
    dispatched = [r for r in rows if r.dispatch]
    if not dispatched or any(k.startswith("Composite") for r in dispatched for d in r.dispatch for k in d.keys):
        return False
    return not any(r.mps_entries for r in dispatched)


_DERIVATIVE_ENTRY = re.compile(r"^- name: (\w+)(?:\.\w+)?\(", re.M)


def _derivative_entries(text: str) -> dict[str, str]:
    """op -> the text of its derivatives.yaml entries (the formulas)."""
    out: dict[str, str] = {}
    starts = list(_DERIVATIVE_ENTRY.finditer(text))
    for i, m in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
        out[m.group(1)] = out.get(m.group(1), "") + text[m.end(): end]
    return out


def backward_ops(text: str, op: str) -> list[str]:
    """The ops the derivative formulas of ``op`` call (``_pdist_backward`` for _pdist_forward)."""
    entry = _derivative_entries(text).get(op, "")
    formulas = "\n".join(ln.split(":", 1)[1] for ln in entry.split("\n")[1:] if ":" in ln)
    return sorted(set(re.findall(r"\b(\w+_backward\w*)\s*\(", formulas)))


def callers_of(text: str, op: str) -> list[str]:
    """The ops whose derivative formulas call ``op`` (a backward op's forward ops)."""
    return sorted(name for name, entry in _derivative_entries(text).items() if name != op and re.search(rf"\b{re.escape(op)}\s*\(", entry))

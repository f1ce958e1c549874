"""``new-kernel --with-test``: a ``torch.mps.compile_shader`` test of a custom kernel, to run on
a Mac before building PyTorch. The kernel's source is the ``.metal`` text new-kernel writes,
with its params header inlined (compile_shader resolves the c10/metal headers itself); the
params struct is packed in Python with C's natural alignment, as ``mtl_setArgs`` copies it."""

from __future__ import annotations

from mpsgen.spec.kernel import KernelSpec
from mpsgen.core.render import render
from mpsgen.codegen.kernel import kernel_text, schema_arguments, struct_text
from mpsgen.codegen.shader_source import STRUCT_CODES, with_params_inlined
from mpsgen.codegen.shader_source import py_literal as py
from mpsgen.plan.companions import testing_lines
from mpsgen.plan.newkernel import kernel_paths, kernel_target
from mpsgen.shim.kernel_trial import schema_default
from mpsgen.tree import NATIVE_FUNCTIONS, PytorchTree
from mpsgen.tree.aoti import C_SHIM_MPS


def kernel_source(spec: KernelSpec, sig) -> str:
    """What compile_shader compiles: the kernel file as new-kernel writes it, its params header inlined."""
    struct = struct_text(spec, sig)
    text = render("kernel/new_metal.metal.j2", stem=spec.file, kernels=kernel_text(spec, sig))
    return with_params_inlined(text, f"ATen/native/mps/kernels/{spec.file}.h", struct)


def kernel_shader_test(tree: PytorchTree, spec: KernelSpec) -> tuple[str, str]:
    """(file name, text) of ``test_<kernel>_shader.py``."""
    sig = kernel_target(tree, spec)
    row = sig.row
    filename = f"test_{spec.kernel}_shader.py"
    schema = [
        [sig.spec_name(name), "Tensor" if typ == "Tensor" else typ]
        for typ, name in schema_arguments(row.func) if not typ.endswith("!)")  # (a structured row's out=)
    ]
    shapes = [dict(s) for s in spec.try_shapes] or [{t: [4, 3] for t in sig.all_tensors}]
    params = [dict(p) for p in spec.try_params] or [{}]
    for values in params:  # the schema's defaults where a case leaves an argument out
        for s in sig.scalars:
            if s.name not in values:
                values[s.name] = schema_default(sig, s.name)
    text = render(
        "tests/kernel_shader_test.py.j2", op=spec.name, kernel=spec.kernel, stem=spec.file, filename=filename,
        source=kernel_source(spec, sig), inputs=py(list(sig.inputs)), tensors=py(list(sig.all_tensors)), schema=py(schema), max_dims=spec.max_dims,
        scalars=py([[s.name, STRUCT_CODES[s.metal_type]] for s in sig.scalars]), dtypes=py(list(spec.dtypes)),
        shapes=py(shapes), params=py(params), derived=py({k: [op, [list(x) if isinstance(x, tuple) else x for x in a], which] for k, (op, a, which) in spec.try_inputs.items()}),
    )
    return filename, text + "\n"


def kernel_pr_description(spec: KernelSpec, changeset, host_function: str, row: str) -> str:
    """A PR title and body for a new custom kernel, in the shape of upstream's MPS PRs: what
    each file gets, the dtypes, the tests it stops expecting to fail, how to test it."""
    header, metal, mm = kernel_paths(spec.file)
    said = {
        header: f"`{spec.params_struct}`, the sizes, strides and arguments the host passes the kernel",
        metal: f"the `{spec.kernel}` kernel, one thread per output element, registered for {', '.join(spec.dtypes)}",
        mm: f"`{host_function}`: the checks the CPU op makes, the output, and the dispatch of `{spec.kernel}`",
        NATIVE_FUNCTIONS: f"`MPS: {host_function}` on `{row}`",
        C_SHIM_MPS: f"regenerated: `{spec.name}` is an AOTI fallback op and now has an MPS kernel",
    }
    lines = [f"[MPS] Add Metal kernel for {spec.name}", ""]
    lines.append(f"Adds a Metal kernel for `{spec.name}`, which had no MPS implementation.")
    lines.append("")
    for rel in (e.source.relpath for e in changeset.changed):
        lines.append(f"- `{rel}`: {said.get(rel, 'the MPS test lists no longer expect the op to be missing')}")
    lines += ["", f"Dtypes: {', '.join(spec.dtypes)}. Sizes and strides are indexed in 32 bits; larger tensors are refused with a message."]
    return "\n".join(lines + testing_lines(changeset.next_steps)) + "\n"

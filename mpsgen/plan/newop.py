"""Plan ``new-op``: from a spec and a tree to a changeset. The decisions live here; the
edits under ``mpsgen.edits`` only place text."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from mpsgen.patch.changeset import Changeset
from mpsgen.codegen.functor import render_functor, variant_specs
from mpsgen.edits import metal as metal_edit
from mpsgen.edits import mm as mm_edit
from mpsgen.edits import native_functions as yaml_edit
from mpsgen.edits import params_header as params_header_edit
from mpsgen.edits import add_include
from mpsgen.core.errors import BadInput, Refused
from mpsgen.codegen.params import dispatch_head, host_inits, param_type_of, params_from_schema, render_struct, stub_arguments, stub_mismatch
from mpsgen.spec.registrations import alpha_scalar_type, covered_torch_dtypes, input_dtypes, plan_registrations
from mpsgen.spec.op import OpSpec, params_problems
from mpsgen.tree import COMMON_MPS, DEFAULT_METAL, DEFAULT_MM, INDEXING_HEADER, NATIVE_FUNCTIONS, OPERATIONS_DIR, PytorchTree
from mpsgen.tree.dtypes import MPS_DTYPE_ORDER
from mpsgen.tree.metal import scan_metal
from mpsgen.tree.metal_headers import declaring_headers, functions_used, included_closure
from mpsgen.tree.metal_headers import add_include as add_metal_include
from mpsgen.tree.mm import scan_mm
from mpsgen.tree.native_yaml import NativeFunction, NativeFunctions, read_native_functions
from mpsgen.plan.testlists import edit_test_lists, next_steps
from mpsgen.tree.op_facts import OpInfoTargets, formatted_name, no_host_kernel_refusal, opinfo_keys, own_mps_rows, rows_of_op
from mpsgen.tree.resolver import StubResolver, host_kernel, row_op
from mpsgen.tree.schema import describe_inputs, schema_args, shape_problem
from mpsgen.tree.source import python_syntax_problem
from mpsgen.tree.stubs import stub_parameters
from mpsgen.tree.xfails import complex_supported, read_xfail_entries

@dataclass(frozen=True)
class RowChoice:
    rows: list[NativeFunction]
    already_mps: list[NativeFunction]
    on_mpsgraph: list[NativeFunction] = ()  # rows left on their own MPS kernel (--partial)


def choose_rows(spec: OpSpec, table: NativeFunctions, partial: bool = False) -> RowChoice:
    of_op = rows_of_op(table, spec.name)
    if not any(host_kernel(e) for e in of_op):
        raise no_host_kernel_refusal(spec.name, of_op)
    by_name = {e.name: e for e in of_op}
    already = [e for e in of_op if e.shared_entry is not None and e.shared_entry.has_mps]
    if spec.rows is not None:
        chosen = []
        for r in spec.rows:
            e = by_name.get(r)
            if e is None:
                raise Refused(
                    f"row {r!r} is not a row of {spec.name} in {NATIVE_FUNCTIONS}.",
                    hint=f"Rows of {spec.name}: {', '.join(sorted(by_name))}.",
                )
            if e.shared_entry is None:
                raise Refused(
                    f"row {r} ({NATIVE_FUNCTIONS}:{e.start_line}) has no shared `CPU, CUDA: <kernel>` line for MPS to join."
                )
            separate = [d for d in e.mps_entries if not d.shared_cpu_cuda]
            if separate:
                raise Refused(
                    f"row {r} already dispatches MPS to {separate[0].kernel} ({NATIVE_FUNCTIONS}:{separate[0].line}).",
                    hint=f"Use `mpsgen migrate-from-mpsgraph {spec.name}` to move it onto a Metal kernel.",
                )
            if not e.shared_entry.has_mps:
                chosen.append(e)
        return RowChoice(chosen, already)
    chosen = [e for e in of_op if e.shared_entry is not None and not e.mps_entries]
    separate = own_mps_rows(of_op)
    if separate and not chosen:
        e = separate[0]
        raise Refused(
            f"{spec.name} already has an MPS kernel: row {e.name} dispatches MPS to "
            f"{e.mps_entries[0].kernel} ({NATIVE_FUNCTIONS}:{e.mps_entries[0].line}).",
            hint=f"Use `mpsgen migrate-from-mpsgraph {spec.name}` to move it onto a Metal kernel.",
        )
    if separate and not partial:
        stay = ", ".join(f"{e.name} (MPS: {e.mps_entries[0].kernel})" for e in separate)
        raise Refused(
            f"new-op would give MPS to {', '.join(e.name for e in chosen)} only, while other rows of {spec.name} "
            f"keep their own MPS kernel: {stay}. Half of the op would run the new Metal kernel, half the old code.",
            hint=f"`mpsgen migrate-from-mpsgraph {spec.name}` moves every row at once; or pass --partial to add "
            f"only {', '.join(e.name for e in chosen)}.",
        )
    return RowChoice(chosen, already, separate)


_KERNEL_HEADER = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"](ATen/native/mps/kernels/\w+\.h)[>"]', re.M)


def _params_header_of(metal_text: str, metal_rel: str) -> str:
    """The kernels/*.h header a .metal file shares with its host code (the one it includes;
    else ``kernels/<stem>.h``, as upstream names UnaryKernel.h after UnaryKernel.metal)."""
    m = _KERNEL_HEADER.search(metal_text)
    if m is not None:
        return "aten/src/" + m.group(1)
    return metal_rel.rsplit(".", 1)[0] + ".h"


def _add_params_struct(tree: PytorchTree, spec: OpSpec, metal_rel: str, metal_text: str, changeset: Changeset) -> str:
    """Put the params struct in the header the .metal file shares with its .mm (creating it
    when there is none); returns the header's tree path."""
    rel = _params_header_of(metal_text, metal_rel)
    struct = render_struct(spec)
    source = tree.read_optional(rel)
    if source is None:
        changeset.create(rel, params_header_edit.new_header(struct))
        changeset.notes.append(f"{rel}: new header with {spec.params_struct}, shared by {metal_rel} and its host code")
    else:
        new = params_header_edit.add_struct(changeset.current_text(source), struct, spec.params_struct, rel)
        if new != source.text:
            changeset.add(source, new)
            changeset.notes.append(f"{rel}: {spec.params_struct}")
    return rel


def _refuse_other_iterator(spec: OpSpec, rows: list[NativeFunction], resolver: StubResolver) -> None:
    """A structured row's meta function builds the iterator its stub runs on: a kernel of
    another arity would read inputs that are not there, or miss one (threshold's is (self,
    self), though its schema has one tensor)."""
    for e in rows:
        if not e.structured:
            continue
        found = resolver.meta_inputs(row_op(e))
        if found is not None and found[0] != spec.arity:
            n, where = found
            raise Refused(
                f"the meta function of {e.name} ({where}) builds an iterator of {n} input(s), but a {spec.kind} kernel "
                f"reads {spec.arity}: the kernel registered for its stub would read the wrong inputs.",
                hint=f"Pick the kind whose kernel reads {n} (with `operands:` in a spec naming the schema tensors each one is).",
            )


def _refuse_stub_mismatch(tree: PytorchTree, spec: OpSpec, stub: str, resolver: StubResolver) -> None:
    """The host function mpsgen writes for a plain or alpha kind takes the iterator (and one
    Scalar): refuse a stub whose function type takes other arguments, which REGISTER_DISPATCH
    would not compile with (addcmul_stub's Scalar `value` for a ternary kernel)."""
    found = stub_parameters(tree, stub, resolver.stubs)
    if found is None:
        return
    parameters, where = found
    if spec.selector is not None:
        if [re.sub(r"\b(?:const|at::native::|at::)\s*", "", p).strip() for p in parameters[1:]] == [spec.selector.type] \
                and "TensorIterator" in parameters[0]:
            return
        raise Refused(
            f"{stub} ({where}) takes ({', '.join(parameters)}), but the spec's selector gives it "
            f"(TensorIteratorBase&, {spec.selector.type}): REGISTER_DISPATCH would not compile.",
            hint="Check the spec's `stub` and `selector.type` against the stub's DECLARE_DISPATCH.",
        )
    rest = [param_type_of(p) for p in parameters[1:]]
    want = ["scalar"] if spec.has_alpha else []
    if rest == want and parameters and "TensorIterator" in parameters[0]:
        return
    shown = ", ".join(parameters)
    why = f"{stub} ({where}) takes ({shown}), but a {spec.kind} kernel's host function takes (TensorIteratorBase& iter" + (
        ", const Scalar& alpha)" if spec.has_alpha else ")") + ": REGISTER_DISPATCH would not compile"
    if spec.kind == "ternary" and rest == ["scalar"]:
        indexing = tree.read_optional(INDEXING_HEADER)
        has_macro = indexing is not None and re.search(r"REGISTER_\w*TERNARY\w*ALPHA\w*\s*\(", indexing.text)
        why += (
            ". A ternary op with a Scalar needs a ternary kernel that takes one"
            + (" (this tree's indexing.h has a ternary alpha macro, which mpsgen does not write yet)" if has_macro
               else ": this tree's c10/metal/indexing.h has no ternary alpha macro and its exec_ternary_kernel takes no Scalar")
        )
    elif spec.kind in ("unary", "binary", "unary_alpha", "binary_alpha") and len(rest) >= 2 and None not in rest:
        why += f"; its arguments fit the {spec.base_kind}_params kind (--kind {spec.base_kind}_params)"
    raise Refused(why + ".", hint="Write this kernel by hand, or pick the kind whose host function matches the stub.")


def _params_of(tree: PytorchTree, spec: OpSpec, stub: str, rows: list[NativeFunction], resolver: StubResolver):
    """(spec with its params, the host side): the params from the spec or, when it gives
    none, from the op's schema; checked against the stub's function type and the tree's
    shader library, which must have exec_*_kernel_with_params."""
    found = stub_parameters(tree, stub, resolver.stubs)
    if found is None:
        raise Refused(
            f"cannot read the function type of {stub} (its DECLARE_DISPATCH or the `using ..._fn = void (*)(...)` it "
            "names is not in the header declaring it): the params of a params-kind kernel come from it.",
            hint="Check the stub's name (--stub / `stub:`), or write the host function by hand.",
        )
    parameters, where = found
    if not spec.params and rows:
        spec = replace(spec, params=params_from_schema([a for a in schema_args(rows[0].func) if a[0] != "Tensor"]))
    if problems := params_problems(spec.kind, spec.params):
        raise Refused(f"the params of {spec.name} read from its schema do not fit: {' '.join(problems)}",
                      hint="Give them in the spec's `params:` (name: type, in the stub's order).")
    if why := stub_mismatch(replace(spec, stub=stub), parameters, where):
        raise Refused(why, hint="Give the params in the spec's `params:` (name: type, in the stub's order).")
    library = [src.text for rel in SHADER_LIBRARY_HEADERS if (src := tree.read_optional(rel)) is not None]
    call = f"exec_{spec.base_kind}_kernel_with_params"
    if library and not any(re.search(rf"\b{call}\s*\(", t) for t in library):
        raise Refused(
            f"this tree's MetalShaderLibrary has no {call} ({', '.join(SHADER_LIBRARY_HEADERS)}): a params kernel "
            "cannot be called from the host here.",
            hint="Update the checkout (2.13 and later have it).",
        )
    host = mm_edit.ParamsHost(spec.params_struct, tuple(stub_arguments(spec, parameters)), tuple(host_inits(spec)), dispatch_head(spec))
    return spec, host


def _check_selector_shapes(spec: OpSpec, rows: list[NativeFunction]) -> None:
    """A selector op's rows take the kind's tensors and the selector's string argument."""
    for e in rows:
        args = schema_args(e.func)
        tensors = [n for t, n in args if t == "Tensor"]
        strings = [n for t, n in args if t == "str"]
        if len(tensors) != spec.arity or strings != [spec.selector.argument]:
            raise Refused(
                f"row {e.name} ({NATIVE_FUNCTIONS}:{e.start_line}) takes {describe_inputs(e.func)}, not {spec.arity} "
                f"tensor(s) and the string `{spec.selector.argument}` the spec's selector reads.",
                hint="Check the spec's kind and selector.argument against the op's schema.",
            )


def check_shapes(spec: OpSpec, rows: list[NativeFunction]) -> None:
    """Refuse rows whose schema does not fit the spec's kind (one line each)."""
    problems = [(e, why) for e in rows if (why := shape_problem(e.func, spec.kind, spec.operands))]
    if problems:
        listed = "; ".join(f"row {e.name} ({NATIVE_FUNCTIONS}:{e.start_line}): {why}" for e, why in problems)
        raise Refused(
            f"{spec.name} does not fit a `{spec.kind}` kernel: {listed}.",
            hint="Pick the kind that matches the schema (--unary, --binary, --kind ...), or the rows that fit with --row.",
        )


def choose_stub(spec: OpSpec, rows: list[NativeFunction], resolver: StubResolver) -> tuple[str, list[str], list[str]]:
    """(stub, notes, blockers): the stub the rows' CPU/CUDA kernel runs, read from the tree.
    Refuses when it cannot be known, belongs to another op, or differs between rows; a stub
    matched by its name alone (no .cpp defines the kernel) is a blocker until --stub names it."""
    resolutions = [resolver.resolve(e) for e in rows if host_kernel(e)]
    notes = [f"dispatch stub: {r.describe()}" for r in resolutions if r.stub]
    if spec.stub:
        blockers = []
        if spec.stub not in resolver.stubs:
            blockers.append(
                f"--stub {spec.stub}: no DECLARE_DISPATCH(..., {spec.stub}) under aten/src/ATen/native/; "
                "REGISTER_DISPATCH would not link."
            )
        for r in resolutions:
            if r.stub and r.stub != spec.stub:
                notes.append(f"row {r.row} runs {r.stub}, not the stub given ({spec.stub}); kept the stub given.")
        return spec.stub, notes, blockers
    unknown = [r for r in resolutions if r.stub is None]
    if unknown:
        near = resolver.near(spec.name)
        raise Refused(
            f"cannot tell which dispatch stub {spec.name} runs: " + "; ".join(f"{r.row}: {r.describe()}" for r in unknown) + ".",
            hint=(f"Declared stubs with similar names: {', '.join(near)}. " if near else "")
            + "Pass --stub NAME (or `stub:` in the spec) with the stub its CPU/CUDA kernel calls.",
        )
    foreign = [r for r in resolutions if r.foreign]
    if foreign:
        r = foreign[0]
        raise Refused(
            f"row {r.row} of {spec.name} runs another op's stub: {r.describe()}. A Metal kernel registered for "
            f"{spec.name}_stub would never be called, and one for {r.stub} serves that other op too.",
            hint="Name the stub to register with --stub (or `stub:` in the spec) once you know it is what you want.",
        )
    stubs = list(dict.fromkeys(r.stub for r in resolutions))
    if len(stubs) > 1:
        raise Refused(
            f"the rows of {spec.name} run different stubs: " + "; ".join(f"{r.row} -> {r.stub}" for r in resolutions) + ".",
            hint="Migrate or add one stub at a time: pick its rows with --row (or `rows:` in the spec) and --stub.",
        )
    if not stubs:
        return f"{spec.name}_stub", notes, []
    guessed = [r for r in resolutions if not r.verified]
    blockers = [
        f"dispatch stub {r.stub} is chosen by its name alone ({r.rule}): no .cpp in this tree defines {r.kernel}, "
        f"the CPU/CUDA kernel of row {r.row}, so nothing shows that it runs {r.stub} (sub_out runs add_stub); a "
        f"Metal kernel registered for the wrong stub never runs. Check {r.kernel}'s definition and name the stub "
        f"with --stub {r.stub} (or `stub:` in the spec)."
        for r in guessed[:1]
    ]
    notes = [f"dispatch stub: {r.describe()}" for r in resolutions if r.verified]
    return stubs[0], notes, blockers


def _unregistered_other_stubs(tree: PytorchTree, spec: OpSpec, rows: list[NativeFunction], resolver: StubResolver, stub: str) -> list[str]:
    """Blockers for the other stubs a row's CPU/CUDA kernel calls (sgn_out: sgn_stub for complex
    inputs, sign_stub for the rest) that no .mm of the tree registers for MPS: once MPS joins the
    shared line, the inputs that take such a path fail on MPS ('DispatchStub: missing kernel')."""
    others: dict[str, str] = {}
    for e in rows:
        r = resolver.resolve(e)
        if r.definition is not None:
            for s in r.definition.stubs:
                if s != stub:
                    others.setdefault(s, f"{r.kernel} ({r.definition.where})")
    if not others:
        return []
    registered = {d.stub for rel in tree.list_files(OPERATIONS_DIR, (".mm",), recursive=True) for d in scan_mm(tree.read(rel).text).dispatches}
    return [
        f"{where} also calls {other}, which no .mm of this tree registers for MPS: with MPS on the shared line, the "
        f"inputs {where.split(' ')[0]} sends to {other} would fail on MPS (DispatchStub: missing kernel for mps). Give "
        f"{other} its Metal kernel first (its op's migration or new-op), or leave {spec.name} on its MPS kernel."
        for other, where in others.items() if other not in registered
    ]


_MPS_REAL = frozenset(
    {"torch.float32", "torch.float16", "torch.bfloat16", "torch.int64", "torch.int32", "torch.int16", "torch.int8",
     "torch.uint8", "torch.bool"}
)


_INTEGRAL_REAL = frozenset({"torch.int64", "torch.int32", "torch.int16", "torch.int8", "torch.uint8", "torch.bool"})


def real_dtypes_lost(
    spec: OpSpec, targets: OpInfoTargets, common_text: str, checks: tuple[str, ...], floats_only: bool = False
) -> list[str]:
    """Real dtypes MPS serves for the op today that the new registrations would not: the
    OpInfo's MPS dtypes, less those common_mps.py xfails for the op, less integers when the
    MPSGraph code checks for floating inputs, less integers and bool when the shared kernel
    serves them without its stub (``floats_only``: nan_to_num_out copies them). Empty when it
    cannot be told (no OpInfo dtypes, or an entry xfailing every dtype)."""
    if not targets.dtypes:
        return []
    served = set(targets.dtypes) & _MPS_REAL
    for e in read_xfail_entries(common_text):
        if e.key in targets.keys:
            if e.dtypes is None:
                return []
            served -= set(e.dtypes)
    if any(re.search(r"isFloatingType|is_floating_point", c) for c in checks):
        served &= {"torch.float32", "torch.float16", "torch.bfloat16"}
    if floats_only:
        served -= _INTEGRAL_REAL
    return sorted(served - covered_torch_dtypes(spec))


def _refuse_dtype_loss(
    spec: OpSpec, targets: OpInfoTargets, common_text: str, checks: tuple[str, ...], allow: bool, changeset: Changeset,
    floats_only: bool = False,
) -> None:
    """A migration must not drop what MPS serves today: refuse (or, when allowed, warn) for
    real dtypes the MPSGraph kernel serves and complex support common_mps.py records."""
    losses: list[tuple[str, str]] = []  # (what is lost, how to keep it)
    lost_real = real_dtypes_lost(spec, targets, common_text, checks, floats_only)
    if lost_real:
        losses.append((
            f"the MPSGraph kernel of {spec.name} serves {', '.join(lost_real)} today (its OpInfo tests them on MPS "
            f"and {COMMON_MPS} does not xfail them), but the new registrations do not cover them",
            "add the dtype groups that cover them (--int2float or --integer)",
        ))
    served = sorted((targets.found or {spec.name}) & complex_supported(common_text)) if "complex" not in spec.dtypes else []
    if served:
        losses.append((
            f"MPS serves {', '.join(served)} with complex inputs today ({COMMON_MPS} lists it among the "
            "complex-supporting ops), but the new registrations cover no complex dtype: torch.complex64 "
            "and torch.complex32 would be lost",
            "add the complex group (--complex, or `complex` in the spec's dtypes) with a functor that handles float2/half2",
        ))
    for lost, keep in losses:
        if not allow:
            raise Refused(lost + ".", hint=f"To keep them, {keep}; or pass --allow-dtype-loss to drop them knowingly.")
        changeset.warnings.append(lost + " (--allow-dtype-loss).")


def _add_needed_includes(tree: PytorchTree, metal_rel: str, text: str, functor: str, changeset: Changeset) -> str:
    """Include the c10/metal header declaring each ``c10::metal::`` function the functor
    calls, unless the file already sees it; a function no header declares is a blocker."""
    names = functions_used(functor)
    if not names:
        return text
    seen = included_closure(tree, text)
    for name, headers in declaring_headers(tree, names).items():
        if not headers:
            changeset.blockers.append(
                f"the functor calls c10::metal::{name}, which no header under c10/metal/ of this tree declares: "
                f"{metal_rel} would not compile."
            )
        elif not seen.intersection(headers):
            text = add_metal_include(text, headers[0])
            seen |= included_closure(tree, f"#include <{headers[0]}>")
            changeset.notes.append(f"{metal_rel}: #include <{headers[0]}> for c10::metal::{name}")
    return text


SHADER_LIBRARY_HEADERS = (
    "aten/src/ATen/native/mps/MetalShaderLibrary.h",
    "aten/src/ATen/native/mps/OperationUtils.h",
)


def host_form_problems(tree: PytorchTree, kind: str) -> list[str]:
    """Whether this tree's ``exec_<kind>_kernel`` takes the alpha's ScalarType (read from the
    shader library header where the tree has it)."""
    for rel in SHADER_LIBRARY_HEADERS:
        src = tree.read_optional(rel)
        if src is None:
            continue
        m = re.search(rf"\bvoid\s+exec_{kind}_kernel\s*\(([^;{{]*)\)\s*;", src.text)
        if m is None:
            continue
        if "ScalarType" not in m.group(1):
            return [
                f"{rel}: this tree's exec_{kind}_kernel takes no ScalarType for the alpha, but the alpha is registered "
                "with a type other than the input's: its host names would never be found."
            ]
        return []
    return []


def untested_dtypes(spec: OpSpec, targets: OpInfoTargets) -> list[str]:
    """Dtypes the kernel registers that the op's OpInfos do not test on MPS (none when the
    OpInfo's dtypes could not be read). complex32 is left out: the complex group registers it
    beside complex64, as upstream's complex kernels do, and OpInfos seldom list it."""
    if not targets.dtypes:
        return []
    covered = covered_torch_dtypes(spec)
    return [d for d in MPS_DTYPE_ORDER if d in covered and d not in targets.dtypes and d != "torch.complex32"]


def _plan_metal_kernel(
    tree: PytorchTree, changeset: Changeset, spec: OpSpec, kspec: OpSpec, metal_src, metal_rel: str, base_macros: set[str]
) -> str | None:
    """Add ``kspec``'s functor and registrations to the kernel file (as the changeset has it so
    far), its compile gate's problems and the check that something registers its name; the
    params header's path when one was written."""
    header = None
    metal = scan_metal(changeset.current_text(metal_src))
    registrations = plan_registrations(kspec, metal, base_macros, metal_rel)
    functor_exists = kspec.name in metal.functors
    functor_text = None if functor_exists else render_functor(kspec)
    if functor_text and not kspec.functor.is_scaffold:  # compiled before anything is written
        from mpsgen.shim.gate import NO_COMPILER, check_functor  # (local: explain loads the compile gate only when a plan compiles)

        gate = check_functor(kspec, functor_text, input_dtypes(kspec))
        changeset.blockers.extend(gate.problems)
        if gate.compiler is None:
            changeset.warnings.append(NO_COMPILER)
    if functor_exists and not kspec.functor.is_scaffold and not spec.kernel_of:
        changeset.warnings.append(
            f"{metal_rel}:{metal.functors[kspec.name].start_line + 1}: {kspec.name}_functor already exists; kept it, "
            f"the functor from {kspec.functor.origin} was not used."
        )
    needs_regs = registrations.statements or registrations.complex_statements or registrations.bulk_lines
    if functor_text or needs_regs:
        new_metal = metal_edit.add_op(
            changeset.current_text(metal_src), metal_edit.MetalAddition(kspec.name, functor_text, registrations)
        )
        if spec.has_params and functor_text:
            header = _add_params_struct(tree, spec, metal_rel, metal_src.text, changeset)
            new_metal = add_include(new_metal, header[len("aten/src/") :])
        if functor_text:
            new_metal = _add_needed_includes(tree, metal_rel, new_metal, functor_text, changeset)
        changeset.add(metal_src, new_metal)
        regs = list(registrations.statements) + list(registrations.complex_statements)
        regs += [f"{b}: {line}" for b, line in registrations.bulk_lines]
        changeset.notes.append(f"{metal_rel}: " + ("functor, " if functor_text else "") + " ".join(regs))
    if functor_text and kspec.functor.is_scaffold:
        changeset.blockers.append(
            f"no functor source for {spec.name}: wrote a scaffold that fails to compile on purpose. "
            f"Give --expr, --functor-file or a spec in specs/{spec.name}.yaml."
        )

    # the host will ask the library for "<kernel>": some REGISTER_* line or bulk-macro line must name it
    metal_after = changeset.current_text(metal_src)
    if not re.search(rf"^[ \t]*\w+\(\s*{re.escape(kspec.name)}\s*[,)]", metal_after, re.M):
        changeset.blockers.append(
            f"{metal_rel} registers no kernel named {kspec.name!r} (no REGISTER_* line names it), but the host "
            f'code calls exec_{spec.base_kind}_kernel(iter, "{kspec.name}"): it would fail at run time.'
        )

    return header


def plan_new_op(
    tree: PytorchTree,
    spec: OpSpec,
    *,
    yaml_mode: str = "add",
    table: NativeFunctions | None = None,
    rows: list[NativeFunction] | None = None,
    allow_dtype_loss: bool = True,
    mpsgraph_checks: tuple[str, ...] = (),
    partial: bool = False,
) -> Changeset:
    """``table``: native_functions.yaml already scanned, when the caller has it. ``rows``: with
    ``yaml_mode="migrate"``, the rows the kernel will serve (their stub is the one registered).
    ``partial``: new-op may leave rows of the op on their own MPS kernels (MPSGraph code)."""
    changeset = Changeset(tree)
    metal_rel = spec.files.get("metal") or DEFAULT_METAL[spec.base_kind]
    mm_rel = spec.files.get("mm") or DEFAULT_MM[spec.base_kind]
    for rel, what in ((metal_rel, "files.metal"), (mm_rel, "files.mm")):
        path = tree.resolve(rel, what)
        if path.exists() and not path.is_file():
            raise BadInput(f"{what} {rel} is not a regular file.", hint="Name a .metal/.mm source file of the tree.")

    # -- native_functions.yaml ---------------------------------------------------------------
    yaml_src, scanned = read_native_functions(tree)
    if table is None:
        table = scanned
    if yaml_mode == "add":
        choice = choose_rows(spec, table, partial)
        rows = [e.name for e in choice.rows]
        if rows:
            changeset.add(yaml_src, yaml_edit.add_mps_to_rows(yaml_src.text, rows, table))
            changeset.notes.append(f"{NATIVE_FUNCTIONS}: MPS joins the shared kernel line of {', '.join(rows)}")
        for e in choice.on_mpsgraph:
            changeset.warnings.append(
                f"left {e.name} on its own MPS kernel {e.mps_entries[0].kernel} (--partial); "
                f"`mpsgen migrate-from-mpsgraph {spec.name}` moves it."
            )
        already_on_metal = not rows
        already_mps = choice.already_mps
        served = choice.rows or choice.already_mps
    else:
        already_on_metal = False
        already_mps = []
        served = rows or []
    if spec.selector is None:
        check_shapes(spec, served)
    else:
        _check_selector_shapes(spec, served)
    resolver = StubResolver.of(tree)
    stub, stub_notes, stub_blockers = choose_stub(spec, served, resolver)
    changeset.notes.extend(stub_notes)
    changeset.blockers.extend(stub_blockers)
    changeset.blockers.extend(_unregistered_other_stubs(tree, spec, served, resolver, stub))
    _refuse_other_iterator(spec, served, resolver)
    params_host = header = None
    if spec.has_params:  # the struct's fields from the stub's function type and the op's schema
        spec, params_host = _params_of(tree, spec, stub, served, resolver)
    else:
        _refuse_stub_mismatch(tree, spec, stub, resolver)  # (a selector's stub takes its enum: checked there)

    # -- the Metal kernel ------------------------------------------------------------------
    metal_src = tree.read(metal_rel, what="Metal kernel file")
    indexing = tree.read(INDEXING_HEADER, what="registration macro header")
    metal = scan_metal(metal_src.text)
    if not (metal.functors or metal.calls) or "#include" not in metal_src.text:
        # the edit places a functor beside its kind's functors and registrations under theirs,
        # after the file's includes: without them it would put code where nothing builds
        missing = [w for w, gone in (("#include lines", "#include" not in metal_src.text),
                                     ("functor structs or REGISTER_* lines", not (metal.functors or metal.calls))) if gone]
        raise Refused(
            f"{metal_rel} has no {' and no '.join(missing)}: mpsgen adds a kernel beside the ones a kernel file "
            "already has, and this one holds nothing to place it by (an empty or unrelated file?).",
            hint="Point files.metal (or the default kernel file) at a kernel file of the tree, such as "
            f"{DEFAULT_METAL[spec.base_kind]}, or write the first kernel of a new file by hand.",
        )
    base_macros = {
        n
        for n, d in scan_metal(indexing.text).macros.items()
        if n.startswith("REGISTER_") and d.params and d.params[0] == "NAME"
    }
    # the Metal side is named after the kernel (``sub_alpha`` for sub), not always the op
    kspec = spec if spec.kernel == spec.name else replace(spec, name=spec.kernel)
    if spec.kernel_of:  # another op's kernel, which that op's own migration writes: it must be there
        mm_text = tree.read(mm_rel, what="host kernel file").text
        if spec.kernel_of not in metal.functors or not any(d.stub == stub for d in scan_mm(mm_text).dispatches):
            raise Refused(
                f"{spec.name} runs {spec.kernel_of}'s Metal kernel through {stub}, which {metal_rel} and {mm_rel} do "
                f"not have yet ({spec.kernel_of}_functor, REGISTER_DISPATCH({stub}, ...)).",
                hint=f"Migrate {spec.kernel_of} first (`mpsgen migrate-from-mpsgraph {spec.kernel_of} --dry-run` shows that "
                "change), then run this again.",
            )
    header = None
    for variant in variant_specs(kspec):  # one kernel, or one per case of a selector (gelu, gelu_tanh)
        header = _plan_metal_kernel(tree, changeset, spec, variant, metal_src, metal_rel, base_macros) or header

    # -- the host kernel -------------------------------------------------------------------------
    mm_src = tree.read(mm_rel, what="host kernel file")
    mm = scan_mm(mm_src.text)
    helper = None
    if not spec.has_alpha and not spec.has_params and stub == f"{spec.name}_stub":
        for h in mm.helper_macros.values():
            if h.kind == spec.base_kind:
                helper = h.name
                break
    alpha_type = alpha_scalar_type(kspec)
    if alpha_type:
        changeset.blockers.extend(host_form_problems(tree, spec.base_kind))
    selector = None
    if spec.selector is not None:
        cases = tuple((c.enumerator, c.kernel) for c in spec.selector.cases)
        selector = (spec.selector.type, spec.selector.argument, cases)
    addition = mm_edit.KernelAddition(
        spec.kernel, stub, spec.base_kind, spec.has_alpha, helper, alpha_type, params_host, selector
    )
    new_mm = mm_edit.add_kernel(mm_src.text, addition)
    if new_mm != mm_src.text:  # what the host function and its REGISTER_DISPATCH use
        # the stub's header declares it (REGISTER_DISPATCH names it) and its argument types:
        # pow_tensor_tensor_stub is Pow.h's, which BinaryKernel.mm does not include otherwise
        stub_header = resolver.stubs.get(stub, ("",))[0]
        params_header = header or _params_header_of(metal_src.text, metal_rel) if params_host is not None else ""
        for include in (params_header, stub_header):
            if include and include.startswith("aten/src/"):
                new_mm = add_include(new_mm, include[len("aten/src/") :])
        if params_host is not None:
            for include in ("ATen/Dispatch.h", "ATen/OpMathType.h"):
                new_mm = add_include(new_mm, include)
    if new_mm != mm_src.text:
        changeset.add(mm_src, new_mm)
        how = f"{helper}({spec.name})" if helper else f"{mm_edit.kernel_function_name(spec.kernel)} + REGISTER_DISPATCH"
        changeset.notes.append(f"{mm_rel}: {how} for {stub}")

    if already_on_metal and changeset.empty:
        changeset.blockers.clear()  # nothing is written: what would have blocked it does not apply
        return changeset  # nothing to do
    if already_on_metal:
        e = already_mps
        where = f"{NATIVE_FUNCTIONS}:{e[0].shared_entry.line}" if e else NATIVE_FUNCTIONS
        raise Refused(
            f"{spec.name} is already on Metal ({where}) but this tree lacks parts of it; mpsgen will not mix "
            "its output into a hand-written kernel.",
            hint="Finish the missing pieces by hand, or run `mpsgen check` to see what is inconsistent.",
        )

    # -- tests: xfail lists and OpInfo decorators -----------------------------------------
    targets = opinfo_keys(tree, spec.name, table)
    untested = untested_dtypes(spec, targets)
    if untested:
        names = ", ".join(sorted(targets.found)) or spec.name
        changeset.warnings.append(
            f"the kernel registers {', '.join(untested)}, which the OpInfo of {names} does not test on MPS "
            f"(its dtypesIfMPS, else dtypes): nothing checks those kernels. If torch's CPU op can serve as their "
            f"reference, add `dtypesIfMPS=` listing them to the OpInfo, as upstream does for special.i0e."
        )
    # (test class, test, OpInfo test name, dtype or "") of the tests the change stops expecting to fail
    unxfailed: list[tuple[str, str, str, str]] = []
    common = tree.read_optional(COMMON_MPS)
    if common is not None and (problem := python_syntax_problem(common)) is not None:
        raise problem
    if yaml_mode == "migrate" and common is not None:
        definitions = [r.definition for e in served if host_kernel(e) for r in (resolver.resolve(e),)]
        floats_only = bool(definitions) and all(d is not None and d.copies_integral for d in definitions)
        if floats_only:
            changeset.notes.append(
                f"{definitions[0].name} ({definitions[0].where}) serves integer and bool inputs before it calls "
                f"{stub}: the kernel sees floating types only"
            )
        _refuse_dtype_loss(spec, targets, common.text, mpsgraph_checks, allow_dtype_loss, changeset, floats_only)
    complex_keys = targets.found if "complex" in spec.dtypes else set()
    unxfailed += edit_test_lists(
        tree, changeset, targets, spec.name, covered_torch_dtypes(spec), complex_keys, migrating=yaml_mode == "migrate"
    )
    tested = sorted(targets.test_names[k] for k in targets.found) if targets.found else [formatted_name(spec.name, "")]
    changeset.next_steps = next_steps(unxfailed, tested)
    if yaml_mode == "add":  # a migration's yaml is edited by its caller, which does this after
        from mpsgen.plan.aoti import sync_c_shim  # (local: explain loads the AOTI shim's machinery only when a plan gets this far)

        sync_c_shim(changeset)
    return changeset

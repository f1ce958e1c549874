"""What a tree says about one op, read from its files: its rows (refusing a name that is no op),
the kind its rows' schemas say, the dtype groups its OpInfo tests on MPS (and its CPU kernel's
output), the OpInfo entries and common_mps keys that name it. Shared by the spec built from
flags (``mpsgen.spec.load``), the planners and ``explain``."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from mpsgen.core.errors import Refused
from mpsgen.tree import NATIVE_FUNCTIONS, PytorchTree
from mpsgen.tree.legacy import legacy_rows
from mpsgen.tree.native_rows import op_name
from mpsgen.tree.native_yaml import NativeFunction, NativeFunctions, read_native_functions
from mpsgen.tree.opinfo import declared_dtypes, find_op_entries, find_ref_entries
from mpsgen.tree.resolver import StubResolver, host_kernel
from mpsgen.tree.schema import describe_inputs, guess_kind, output_count, shape_problem


def rows_of_op(table: NativeFunctions, name: str) -> list[NativeFunction]:
    """The op's rows; refuses a name that is no op, with the closest names."""
    of_op = table.of_op(name)
    if not of_op:
        names = sorted({op_name(e.base) for e in table.entries})
        close = difflib.get_close_matches(name, names, n=3)
        hint = f"Did you mean {', '.join(close)}?" if close else "Check the op's aten name (the part before '(' in `- func:`)."
        raise Refused(f"op {name!r} is not in {NATIVE_FUNCTIONS}.", hint=hint)
    return of_op


def own_mps_rows(rows: list[NativeFunction]) -> list[NativeFunction]:
    """Rows whose MPS dispatch is a kernel of its own (``MPS: foo_out_mps``), not a shared line."""
    return [e for e in rows if any(not d.shared_cpu_cuda for d in e.mps_entries)]


def no_host_kernel_refusal(name: str, of_op: list[NativeFunction]) -> Refused:
    """Why an op none of whose rows has a CPU/CUDA kernel line gets nothing from mpsgen."""
    own = own_mps_rows(of_op)
    if own:
        e = own[0]
        return Refused(
            f"{name} already has an MPS kernel (row {e.name} dispatches MPS to {e.mps_entries[0].kernel}, "
            f"{NATIVE_FUNCTIONS}:{e.mps_entries[0].line}), and no row of it has a `CPU, CUDA:` kernel line for a Metal "
            "kernel to share (add.out's, for one, come from its `ufunc_inner_loop`): mpsgen can neither add nor migrate it.",
            hint="Change its MPS kernel by hand.",
        )
    e = of_op[0]
    return Refused(
        f"{name} has no CPU/CUDA kernel in {NATIVE_FUNCTIONS} (row {e.name} at line {e.start_line}): it is "
        "composite, so it already runs on MPS through the ops it is made of; there is no kernel to add.",
        hint="Add Metal kernels to the ops it calls instead, or dispatch it explicitly in the yaml by hand.",
    )


_FUNCTOR_KINDS = {"unary": "--unary", "binary": "--binary"}


def kind_flag(kind: str) -> str:
    """The flag that says ``kind`` (``--unary``, ``--kind binary_alpha``)."""
    return _FUNCTOR_KINDS.get(kind, f"--kind {kind}")


def kind_from_schema(name: str, rows: list[NativeFunction]) -> str:
    """The kind the rows' ``func:`` schemas say (the first row that fits one); refuses, with
    the reason, when no row fits a kernel mpsgen writes."""
    fitting = [(e, k) for e in rows if output_count(e.func) <= 1 and (k := guess_kind(e.func)) != "other"]
    if fitting:
        return fitting[0][1]
    if not rows:
        raise Refused(f"{name} has no row with a CPU/CUDA kernel for MPS to share.")
    e = rows[0]
    n_out = output_count(e.func)
    if n_out > 1:
        why = f"it returns {n_out} tensors, and mpsgen's kernels write one output"
    else:
        why = f"it takes {describe_inputs(e.func)}, which fits no kind mpsgen writes (one to three tensors and at most one scalar, or one or two tensors and Scalar, float, float? or bool arguments)"
    raise Refused(
        f"mpsgen cannot write a kernel for {name}: row {e.name} ({NATIVE_FUNCTIONS}:{e.start_line}): {why}.",
        hint="It needs a hand-written Metal kernel (see the custom kernels in mps/kernels/).",
    )


def check_kind_flag(name: str, kind: str, rows: list[NativeFunction], flag: str) -> None:
    """A kind given by flag must fit the schema of at least one of the rows it would serve."""
    if not rows or any(shape_problem(e.func, kind) is None for e in rows):
        return
    e = rows[0]
    said = kind_from_schema(name, rows)  # refuses when no row fits any kind
    raise Refused(
        f"{flag} says {name} is `{kind}`, but its schema says `{said}`: row {e.name} ({NATIVE_FUNCTIONS}:"
        f"{e.start_line}) takes {describe_inputs(e.func)}.",
        hint=f"Leave the kind out (mpsgen reads it from the schema) or give {kind_flag(said)}.",
    )


def schema_rows(table: NativeFunctions, name: str, migrate: bool = False) -> list[NativeFunction]:
    """The rows whose schema says the op's kind: those with a CPU/CUDA kernel (for a
    migration, those of them on an MPS kernel of their own). Refuses a name that is no op
    (with the closest names) and an op with no CPU/CUDA kernel line."""
    of_op = rows_of_op(table, name)
    hosts = [e for e in of_op if host_kernel(e)]
    if not hosts:
        raise no_host_kernel_refusal(name, of_op)
    if migrate:
        legacy = [r.entry for r in legacy_rows(of_op)]
        if legacy:
            return legacy
    return hosts


def kind_and_dtypes_from_tree(
    tree: PytorchTree, name: str, *, migrate: bool = False, kind: str | None = None, flag: str = "", dtypes: bool = True
) -> tuple[str, tuple[str, ...], str]:
    """(kind, dtype groups, how the groups were chosen) for a command given no kind or no dtype
    flags: the kind from the rows' schemas (a ``kind`` given by ``flag`` is checked against
    them), the groups from what the op's OpInfo tests on MPS (none when ``dtypes`` is False)."""
    _src, table = read_native_functions(tree)
    rows = schema_rows(table, name, migrate)
    if kind is None:
        kind = kind_from_schema(name, rows)
        if not any("pointwise" in e.tags for e in table.of_op(name)):
            raise Refused(
                f"mpsgen cannot tell that {name} is elementwise: no row of it is tagged `pointwise` in {NATIVE_FUNCTIONS}, "
                f"and the kernels mpsgen writes are elementwise (TensorIterator) ones; its schema alone would say `{kind}`.",
                hint=f"If its CPU/CUDA kernel is a TensorIterator loop, give the kind ({kind_flag(kind)}).",
            )
    else:  # any row of the op will do (a re-run after a --partial migration has only the rows left behind)
        check_kind_flag(name, kind, [e for e in table.of_op(name) if host_kernel(e)], flag)
    if not dtypes:
        return kind, (), ""
    groups, how = dtype_groups_from_tree(opinfo_keys(tree, name, table), kind, cpu_output(tree, rows))
    return kind, groups, how


# torch dtypes -> the dtype groups that register them
_INT_DTYPES = frozenset({"torch.int64", "torch.int32", "torch.int16", "torch.int8", "torch.uint8"})


_OUTPUT_OPS = (("bool", re.compile(r"force_boolean|comparison_op|boolean_op")), ("float", re.compile(r"float_op")))


def cpu_output(tree: PytorchTree, rows: list[NativeFunction]) -> str | None:
    """"float" or "bool" when the .cpp defining the rows' CPU/CUDA kernel builds its
    TensorIterator as a float op (integers give float) or a boolean one, in the kernel's body
    or the op's TORCH_META_FUNC (written out or made by a macro); None when it cannot be told."""
    resolver = StubResolver.of(tree)
    for e in rows:
        d = resolver.resolve(e).definition
        if d is None:
            continue
        text = tree.read(d.path).text
        op = re.escape(e.base.rstrip("_"))
        chunks = []
        if d.via is None:  # a definition written out: its body
            start = len("\n".join(text.split("\n")[: d.line - 1]))
            chunks.append(text[start : text.find("\n}", start)])
        for m in re.finditer(rf"TORCH_META_FUNC2?\s*\(\s*{op}\b[^)]*\)", text):
            chunks.append(text[m.end() : text.find("\n}", m.end())])
        for m in re.finditer(rf"^(\w+)\(\s*{op}\s*\)", text, re.M):  # a macro instance making the meta function
            made = re.search(rf"#\s*define\s+{m.group(1)}\((?:[^\n]*\\\n)*[^\n]*", text)
            if made and "TORCH_META_FUNC" in made.group(0):
                chunks.append(made.group(0))
        for output, pattern in _OUTPUT_OPS:
            if any(pattern.search(c) for c in chunks):
                return output
    return None


def dtype_groups_from_tree(targets: OpInfoTargets, kind: str, output: str | None = None) -> tuple[tuple[str, ...], str]:
    """(dtype groups, how they were chosen) covering what the op's OpInfo tests on MPS, with
    integer inputs giving what the OpInfo or the CPU kernel (``output``) says they give."""
    tested = set(targets.dtypes)
    if not tested:
        return ("float",), "dtypes float (float, half, bfloat) only: no OpInfo of the op says which dtypes it tests on MPS"
    groups = ["float"]
    ints = tested & _INT_DTYPES
    why = ""
    if (targets.returns_bool or output == "bool") and kind in ("unary", "binary"):
        if ints or "torch.bool" in tested:
            groups.append("integer")
        groups.append("bool_out")
    elif ints or "torch.bool" in tested:
        if targets.promotes_int_to_float or output == "float":
            groups.append("int2float")
        else:
            groups.append("integer" if "torch.bool" in tested else "integer_no_bool")
            if output is None:
                why = " (integers keep their type: no .cpp of this tree shows the CPU kernel computing them in float; give --int2float if it does)"
    if "torch.complex64" in tested:
        groups.append("complex")
    names = ", ".join(sorted(targets.found)) or "its OpInfo"
    return tuple(groups), f"dtypes {', '.join(groups)}: what the OpInfo of {names} tests on MPS{why}"


@dataclass(frozen=True)
class OpInfoTargets:
    keys: set[str]  # common_mps keys that may name the op (OpInfo names, variants, aliases, guesses)
    found: set[str]  # the op's OpInfo keys that exist in the OpInfo files
    spans: list[tuple[str, list[tuple[int, int]]]]  # per OpInfo file, the entries to edit
    dtypes: set[str] = frozenset()  # dtypes the op's OpInfos test on MPS (dtypesIfMPS, else dtypes)
    promotes_int_to_float: bool = False  # an OpInfo says `promotes_int_to_float=True`
    returns_bool: bool = False  # an OpInfo says `always_returns_bool=True`
    # the name the tests of each OpInfo carry (its formatted_name: `_refs_heaviside`), by
    # common_mps key (name + variant) and by (file, offset of the entry's "(")
    test_names: dict[str, str] = field(default_factory=dict)
    span_names: dict[tuple[str, int], str] = field(default_factory=dict)


def opinfo_keys(tree: PytorchTree, op: str, table: NativeFunctions, extra: set[str] = frozenset()) -> OpInfoTargets:
    """OpInfo names for the op (the common_mps keys) and, per OpInfo file, the entry spans to
    edit; ``extra``: OpInfo names a spec says test the op."""
    guesses = {op, f"nn.functional.{op}", *extra}  # (torch.nn.functional.threshold's OpInfo tests aten's threshold)
    for e in table.of_op(op):
        if e.python_module and op.startswith(e.python_module + "_"):
            guesses.add(e.python_module + "." + op[len(e.python_module) + 1 :])
    texts = {}
    for rel in tree.opinfo_files():
        src = tree.read(rel)
        texts[rel] = src
    names: set[str] = set()
    found: set[str] = set()  # OpInfo keys (name + variant) that exist
    keys: set[str] = set(guesses)
    spans: dict[str, list[tuple[int, int]]] = {}
    dtypes: set[str] = set()
    flags: set[str] = set()
    test_names: dict[str, str] = {}
    span_names: dict[tuple[str, int], str] = {}
    for rel, src in texts.items():
        for entry in find_op_entries(rel, src.text, op, guesses):  # (by name: a file that names none has none)
            names.add(entry.name)
            found.add(entry.name + entry.variant)
            keys.add(entry.name + entry.variant)
            keys.update(entry.aliases)
            spans.setdefault(rel, []).append((entry.open_paren, entry.close_paren))
            test_names[entry.name + entry.variant] = span_names[(rel, entry.open_paren)] = formatted_name(entry.name, entry.variant)
            if not entry.ctor.startswith("Foreach"):
                dtypes |= declared_dtypes(src.text, entry) or set()
                body = src.text[entry.open_paren : entry.close_paren]
                flags.update(f for f in ("promotes_int_to_float", "always_returns_bool") if re.search(rf"\b{f}\s*=\s*True", body))
    for rel, src in texts.items():
        for entry in find_ref_entries(rel, src.text, names):
            spans.setdefault(rel, []).append((entry.open_paren, entry.close_paren))
            span_names[(rel, entry.open_paren)] = formatted_name(entry.name, entry.variant)
    merged = [(rel, sorted(set(s))) for rel, s in spans.items()]
    return OpInfoTargets(
        keys, found, merged, dtypes, "promotes_int_to_float" in flags, "always_returns_bool" in flags, test_names, span_names
    )


def formatted_name(name: str, variant: str) -> str:
    """What an OpInfo's tests are named after (its ``formatted_name``): ``_refs.heaviside`` ->
    ``_refs_heaviside``, ``nn.functional.pad`` variant ``reflect`` -> ``nn_functional_pad_reflect``."""
    return f"{name}.{variant}".replace(".", "_") if variant else name.replace(".", "_")

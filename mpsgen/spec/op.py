"""The op spec: a small, validated model of what to generate for one operator.

A spec comes from a YAML file (schema: ``specs/README.md``) or from ``new-op`` flags.
Loading reports every problem with ``file:line:col``; a loaded ``OpSpec`` is valid.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from mpsgen.core.errors import BadInput, Location, SpecErrors
from mpsgen.core.text import shorten
from mpsgen.tree.source import mask_c_comments_and_strings, match_close, read_bounded

if TYPE_CHECKING:
    import yaml

KINDS = ("unary", "binary", "unary_alpha", "binary_alpha", "ternary", "unary_params", "binary_params")
# the kinds whose kernel takes a params struct (one field per non-tensor argument of the stub)
PARAMS_KINDS = ("unary_params", "binary_params")
# what a param of a params kind is, as its stub takes it: a Scalar (`const Scalar&`), a float
# (`double`), an optional float (`std::optional<double>`), a bool
PARAM_TYPES = ("scalar", "float", "optional_float", "bool")

# Dtype groups of a spec. "float" (float, half, bfloat) is always generated.
DTYPE_GROUPS = ("float", "int2float", "integer", "integer_no_bool", "complex", "opmath", "bool_out")

SPEC_KEYS = (
    "name", "kind", "functor", "expr", "dtypes", "stub", "rows", "files", "alpha_type", "alphas", "try_domain",
    "params", "operands", "try_params", "kernel", "fixed", "selector", "functors",
)
FILE_KEYS = ("metal", "mm")
# the operands of each kind, by the names an `expr` uses (and `try_domain` restricts)
OPERANDS = {
    "unary": ("x",), "unary_alpha": ("x",), "binary": ("a", "b"), "binary_alpha": ("a", "b"), "ternary": ("a", "b", "c"),
    "unary_params": ("x",), "binary_params": ("a", "b"),
}
# the dtype groups a params kind may register (its host code dispatches real types; no int2float)
PARAMS_DTYPE_GROUPS = ("float", "integer", "integer_no_bool")

MAX_NAME = 128  # the longest aten name is under 60 characters; file names built from it must fit
_C_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_ROW = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)?\Z")
_CXX_KEYWORDS = frozenset(
    """alignas alignof and and_eq asm auto bitand bitor bool break case catch char char16_t char32_t
    class compl const constexpr const_cast continue decltype default delete do double dynamic_cast else
    enum explicit export extern false float for friend goto if inline int long mutable namespace new
    noexcept not not_eq nullptr operator or or_eq private protected public register reinterpret_cast
    return short signed sizeof static static_assert static_cast struct switch template this
    thread_local throw true try typedef typeid typename union unsigned using virtual void volatile
    wchar_t while xor xor_eq kernel device constant threadgroup half bfloat""".split()
)


@dataclass(frozen=True)
class FunctorSource:
    """Where the functor's C++ comes from: a whole struct body, one expression, or a scaffold."""

    body: str | None = None
    expr: str | None = None
    origin: str = "scaffold"  # "--expr", "--functor-file PATH", a spec path, or "scaffold"
    # where the text starts in ``origin``: its first line (1-based; 0 unknown), and the columns
    # before a line's first character there (a block scalar's indentation)
    line: int = 0
    column: int = 0

    @property
    def is_scaffold(self) -> bool:
        return self.body is None and self.expr is None


@dataclass(frozen=True)
class Param:
    """A non-tensor argument the op's stub takes after its iterator, as a field of the params
    struct the kernel gets: ``name`` (the schema's), ``type`` one of :data:`PARAM_TYPES`."""

    name: str
    type: str


@dataclass(frozen=True)
class SelectorCase:
    value: str  # the string the schema's argument takes ("tanh")
    enumerator: str  # what the stub's enum argument is then ("GeluType::Tanh")
    kernel: str  # the Metal kernel that case runs ("gelu_tanh")


@dataclass(frozen=True)
class Selector:
    """A string argument of the op (gelu's ``approximate``) that the host turns into the
    stub's enum (``parse``, which refuses other strings as the CPU op does) and that picks one
    of several kernels, as upstream's GeluKernel does."""

    argument: str
    parse: str  # get_gelutype_enum
    type: str  # GeluType: the stub's parameter after the iterator
    cases: tuple[SelectorCase, ...]


@dataclass(frozen=True)
class OpSpec:
    name: str
    kind: str
    functor: FunctorSource = field(default_factory=FunctorSource)
    dtypes: tuple[str, ...] = ("float",)
    stub: str = ""  # "": the stub the rows' CPU/CUDA kernel calls (tree.resolver)
    rows: tuple[str, ...] | None = None  # None: every row with a CPU/CUDA kernel and no MPS one
    files: dict[str, str] = field(default_factory=dict)
    alpha_type: str | None = None  # metal type of the Scalar parameter for *_alpha kinds
    # the Scalar values `mpsgen try` runs a *_alpha op with (None: its defaults)
    alphas: tuple[float, ...] | None = None
    # the operand values `mpsgen try` keeps ({operand: (low, high)}, NaN in no range), and why
    try_domain: dict[str, tuple[float, float]] = field(default_factory=dict)
    try_domain_why: str = ""
    # params kinds: the stub's non-tensor arguments, in its order
    params: tuple[Param, ...] = ()
    # the schema tensors the kernel's operands are, when not the schema's tensors in order
    # (threshold's iterator is (self, self)): what `mpsgen try` feeds it
    operands: tuple[str, ...] | None = None
    # params kinds: the argument values `mpsgen try` runs the op with (None: an optional left out)
    try_params: tuple[dict[str, float | bool | None], ...] = ()
    # the Metal kernel the op's stub runs when it is another op's (threshold_backward runs
    # threshold's through threshold_stub); "" for the op's own
    kernel_of: str = ""
    # params kinds: struct fields the stub's caller fixes, not in the op's schema ({value: 0})
    fixed: dict[str, float] = field(default_factory=dict)
    # a string argument picking one of several kernels; their functors by kernel name
    selector: Selector | None = None
    functors: dict[str, FunctorSource] = field(default_factory=dict)
    source: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise BadInput(f"unknown op kind {self.kind!r}; use --unary, --binary or --kind {'|'.join(KINDS[2:])}.")
        groups = tuple(dict.fromkeys(("float",) + tuple(self.dtypes)))
        object.__setattr__(self, "dtypes", groups)
        if self.rows is not None:  # a row named twice is taken once (twice would write `MPS, MPS`)
            object.__setattr__(self, "rows", tuple(dict.fromkeys(self.rows)))

    @property
    def arity(self) -> int:
        return len(OPERANDS[self.kind])

    @property
    def has_functor(self) -> bool:
        """Whether the spec gives the code of its kernel(s): a functor, or one per selector case."""
        return bool(self.functors) if self.selector is not None else not self.functor.is_scaffold

    @property
    def has_params(self) -> bool:
        return self.kind in PARAMS_KINDS

    @property
    def params_struct(self) -> str:
        """The params struct's name: upstream's ``<Op>Params`` (``SoftplusParams``)."""
        return "".join(part[:1].upper() + part[1:] for part in self.kernel.split("_") if part) + "Params"

    @property
    def has_alpha(self) -> bool:
        return self.kind.endswith("_alpha")

    @property
    def kernel(self) -> str:
        """The Metal kernel name: ``<kernel>_functor``, ``REGISTER_*(<kernel>, ...)`` and
        ``exec_*_kernel(iter, "<kernel>")``. A binary op with a Scalar gets upstream's
        ``<op>_alpha`` (``add_alpha``, ``sub_alpha``), leaving ``<op>`` for the alpha-free
        functor many trees already have; every other kind uses the op name."""
        if self.kernel_of:
            return self.kernel_of
        return f"{self.name}_alpha" if self.kind == "binary_alpha" else self.name

    @property
    def base_kind(self) -> str:
        """"unary", "binary" or "ternary": which kernel file and exec_*_kernel."""
        return self.kind.split("_")[0]


def check_name(name: str, where: str) -> str | None:
    """Why ``name`` cannot be used as an op/stub identifier, or None if it can."""
    if not isinstance(name, str) or not name:
        return f"{where} must be a non-empty C identifier."
    if len(name) > MAX_NAME:
        return f"{where} is {len(name)} characters long; aten op and stub names are identifiers of at most {MAX_NAME}."
    if not _C_IDENT.match(name):
        shown = name.encode("unicode_escape").decode("ascii")
        return (
            f"{where} {shown!r} is not a C identifier (letters, digits and underscores, not starting "
            "with a digit; no quotes, parentheses, semicolons or newlines)."
        )
    if name in _CXX_KEYWORDS:
        return f"{where} {name!r} is a C++/Metal keyword; pick another name."
    return None


def check_dtype_groups(kind: str, groups: list[str]) -> list[str]:
    """Problems with a list of dtype groups for this kind (empty if fine)."""
    problems = []
    for g in groups:
        if g not in DTYPE_GROUPS:
            problems.append(f"unknown dtype group {g!r}; known groups: {', '.join(DTYPE_GROUPS)}.")
    if "int2float" in groups and ("integer" in groups or "integer_no_bool" in groups):
        problems.append(
            "dtype groups 'int2float' and 'integer' both register integer inputs (to float and to the "
            "same type); a Metal op can have only one output type per input, pick one."
        )
    if "integer" in groups and "integer_no_bool" in groups:
        problems.append("use either 'integer' or 'integer_no_bool', not both.")
    if "bool_out" in groups and "int2float" in groups:
        problems.append("'bool_out' (every input type gives a bool) and 'int2float' (integers give a float) contradict; pick one.")
    if kind in PARAMS_KINDS and (other := [g for g in groups if g not in PARAMS_DTYPE_GROUPS and g in DTYPE_GROUPS]):
        problems.append(
            f"dtype group(s) {', '.join(other)} do not apply to a {kind} op: its host code builds the params in the "
            f"input's own type; use {', '.join(PARAMS_DTYPE_GROUPS)}."
        )
    if "opmath" in groups and kind.startswith("unary"):
        problems.append(
            "dtype group 'opmath' applies to binary and ternary ops (REGISTER_OPMATH_*); "
            "a unary functor computes half in float itself."
        )
    return problems


def check_relpath(value: str) -> str | None:
    """Why a spec path field is not a path inside the tree, or None."""
    if not isinstance(value, str) or not value:
        return "must be a path relative to the PyTorch root."
    p = PurePosixPath(value.replace("\\", "/"))
    if p.is_absolute() or re.match(r"[A-Za-z]:", value):
        return f"{value!r} is absolute; give a path relative to the PyTorch root."
    if ".." in p.parts:
        return f"{value!r} points outside the PyTorch tree ('..' is not allowed)."
    return None


TARGET_DIRS = {
    "metal": ("aten/src/ATen/native/mps/kernels/", ".metal"),
    "mm": ("aten/src/ATen/native/mps/operations/", ".mm"),
}


def check_target_file(key: str, value: str) -> str | None:
    """Why ``value`` cannot be the spec's ``files.<key>`` (a kernel or host source of the MPS backend)."""
    folder, suffix = TARGET_DIRS[key]
    path = value.replace("\\", "/")
    if not (path.startswith(folder) and path.endswith(suffix) and "/" not in path[len(folder) :]):
        return f"{value!r} is not a {suffix} file directly under {folder} (the only files a spec may direct edits to)."
    return None


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_PAIRS = {"(": ")", "[": "]", "{": "}"}


def _shown(text: str) -> str:
    return text.encode("unicode_escape").decode("ascii")


def _bracket_problem(masked: str, what: str) -> str | None:
    """Why the brackets of ``masked`` (comments and strings blanked) do not pair up, or None."""
    stack: list[str] = []
    for ch in masked:
        if ch in _PAIRS:
            stack.append(_PAIRS[ch])
        elif ch in ")]}":
            if not stack:
                return f"{what} has a {ch!r} that closes nothing it opened; it would end the code around it."
            if stack.pop() != ch:
                return f"{what} has mismatched brackets ({ch!r})."
    if stack:
        return f"{what} leaves {stack[-1]!r} unclosed."
    return None


def check_expr(expr: str, where: str = "--expr") -> str | None:
    """Why ``expr`` is not one C++ expression the functor template can return, or None.

    It lands inside ``return static_cast<T>(...);``, so a newline, ``;``, comment,
    preprocessor line or unpaired bracket would change the code around it."""
    if not isinstance(expr, str) or not expr.strip():
        return f"{where} is empty; give one C++ expression of the operands (x, or a and b), e.g. 'a * b'."
    if "\n" in expr or "\r" in expr:
        return f"{where} must be one expression on one line; give a whole struct body with --functor-file (or 'functor:' in a spec)."
    if m := _CONTROL.search(expr):
        return f"{where} holds the control character {_shown(m.group())!r}; remove it."
    if "//" in expr:
        return (
            f"{where} {expr!r}: '//' starts a C++ comment, which would swallow the rest of the line. "
            "For floor division write c10::metal::floor_divide(a, b) (or a / b for true division)."
        )
    if "/*" in expr or "*/" in expr:
        return f"{where} {expr!r}: no comments inside the expression."
    if ";" in expr:
        return f"{where} {expr!r}: one expression, no statements (';'); give a struct body for more."
    if "#" in expr:
        return f"{where} {expr!r}: no preprocessor ('#') in an expression; includes are added by mpsgen."
    return _bracket_problem(mask_c_comments_and_strings(expr), f"{where} {expr!r}")


def check_body(body: str, name: str | None, where: str = "the functor body") -> str | None:
    """Why ``body`` cannot be a functor's struct body (or a whole ``struct <name>_functor``), or None.

    The body is placed between ``struct <op>_functor {`` and ``};``: its braces must pair up
    inside it, and nothing may be left open (a string, a block comment) to swallow the ``};``."""
    if not isinstance(body, str) or not body.strip():
        return f"{where} is empty; give the functor's struct body (its operator() overloads)."
    if m := _CONTROL.search(body.replace("\t", " ")):
        return f"{where} holds the control character {_shown(m.group())!r}; remove it."
    masked = mask_c_comments_and_strings(body + "\n@")
    if not masked.endswith("@"):
        return f"{where} leaves a string or block comment open; it would swallow the struct's closing '}};'."
    masked = masked[:-1]
    for number, line in enumerate(masked.split("\n"), 1):
        if line.lstrip().startswith("#"):
            return f"{where}, line {number}: no preprocessor lines in a functor; mpsgen adds the includes the kernel file needs."
    if why := _bracket_problem(masked, where):
        return why
    whole = re.match(r"\s*struct\s+([A-Za-z_][A-Za-z0-9_]*)\s*\{", masked)
    if whole is not None:
        if name is not None and whole.group(1) != f"{name}_functor":
            return f"{where} defines struct {whole.group(1)}; it must be struct {name}_functor."
        close = match_close(masked, whole.end() - 1)  # (the brackets pair up: checked above)
        rest = masked[close + 1 :].strip()
        if rest not in ("", ";"):
            return f"{where} has code after the end of struct {whole.group(1)} ({shorten(rest, 30)!r}); give only the functor."
    return None


def spec_problems(spec: OpSpec) -> list[str]:
    """Every problem with a spec, however it was assembled (a file, flags, or both merged):
    the one check both paths go through before anything is planned."""
    problems = []
    for value, where in ((spec.name, "the op name"), (spec.stub or None, "the stub")):
        if value is not None and (why := check_name(value, where)):
            problems.append(why)
    problems += [p for p in check_dtype_groups(spec.kind, list(spec.dtypes))]
    f = spec.functor
    if f.expr is not None and f.body is not None:
        problems.append(f"the functor is given twice ({f.origin}): as an expression and as a body; give one.")
    elif f.expr is not None and (why := check_expr(f.expr, f"the functor expression ({f.origin})")):
        problems.append(why)
    elif f.body is not None and (why := check_body(f.body, spec.name, f"the functor body ({f.origin})")):
        problems.append(why)
    if spec.alpha_type is not None and not _C_IDENT.match(spec.alpha_type):
        problems.append(f"alpha_type {spec.alpha_type!r} is not a Metal type name.")
    problems += params_problems(spec.kind, spec.params, spec.try_params)
    return problems


def params_problems(kind: str, params: tuple[Param, ...], try_params: tuple[dict, ...] = ()) -> list[str]:
    """What is wrong with the params of a spec of ``kind``."""
    if kind not in PARAMS_KINDS:
        return [f"'params' is for the {' and '.join(PARAMS_KINDS)} kinds; a {kind} op takes none."] if params else []
    if not params:  # read from the tree's stub and the op's schema when planning
        return []
    problems = []
    seen: set[str] = set()
    for p in params:
        if why := check_name(p.name, f"param {p.name!r}"):
            problems.append(why)
        elif p.name in OPERANDS[kind] or p.name == "params" or p.name.startswith("has_"):
            problems.append(f"param {p.name!r}: the functor's operands are {', '.join(OPERANDS[kind])} and its struct is `params` "
                            "(with a has_<name> flag per optional): pick another name.")
        elif p.name in seen:
            problems.append(f"param {p.name!r} is named twice.")
        if p.type not in PARAM_TYPES:
            problems.append(f"param {p.name!r}: unknown type {p.type!r}; use one of {', '.join(PARAM_TYPES)}.")
        seen.add(p.name)
    types = {p.name: p.type for p in params}
    for values in try_params:
        for name, value in values.items():
            if name not in types:
                problems.append(f"try_params: {name!r} is not a param ({', '.join(types)}).")
            elif value is None and types[name] != "optional_float":
                problems.append(f"try_params: {name} is a {types[name]}, which cannot be left out (only optional_float params can).")
            elif isinstance(value, bool) != (types[name] == "bool") and value is not None:
                problems.append(f"try_params: {name}={value!r} does not fit its type {types[name]}.")
    return problems


# ---------------------------------------------------------------------------------------------
# Loading from YAML, with positions


def node_location(path: str, node: yaml.Node) -> Location:
    return Location(path, node.start_mark.line + 1, node.start_mark.column + 1)


def scalar_text_start(node: yaml.Node, text: str) -> tuple[int, int]:
    """(line, column) where a scalar's text starts in the file: a block scalar's (``|``, ``>``)
    on the line after its indicator, indented; a quoted one after its quote."""
    line, col = node.start_mark.line + 1, node.start_mark.column
    if node.style in ("|", ">"):
        for number, content in enumerate(text.split("\n")[line:], line + 1):
            if content.strip():
                return number, len(content) - len(content.lstrip(" "))
        return line + 1, 0
    return line, col + (1 if node.style in ("'", '"') else 0)


def _number(text: str | None) -> float | None:
    """A finite YAML number (``-1``, ``0.25``, ``1e-6``), else None."""
    try:
        value = float(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def _bound(text: str | None) -> float | None:
    """A number or YAML's infinity (``.inf``, ``-.inf``), else None (NaN too)."""
    if text is not None and text.lower() in (".inf", "+.inf", "-.inf"):
        return float(text.lower().replace(".", ""))
    return _number(text)


def scalar_value(node: yaml.Node) -> str | None:
    import yaml  # (local: explain loads yaml only when it plans)

    return node.value if isinstance(node, yaml.ScalarNode) else None


def _parse_selector(node, shown: str, problems: list) -> Selector | None:
    """``selector: {argument, parse, type, cases: [{value, enumerator, kernel}, ...]}``."""
    import yaml  # (local: explain loads yaml only when it plans)

    if not isinstance(node, yaml.MappingNode):
        problems.append((node_location(shown, node), "'selector' maps argument, parse, type and cases."))
        return None
    got = {scalar_value(k): v for k, v in node.value}
    values = {}
    for key in ("argument", "parse", "type"):
        v = scalar_value(got[key]) if key in got else None
        if not v or not re.fullmatch(r"[A-Za-z_][\w:]*", v):
            problems.append((node_location(shown, got.get(key, node)), f"selector.{key} must be a C++ name."))
        values[key] = v or ""
    cases = []
    items = got.get("cases")
    if not isinstance(items, yaml.SequenceNode) or len(items.value) < 2:
        problems.append((node_location(shown, items or node), "selector.cases lists two or more {value, enumerator, kernel}."))
    else:
        for item in items.value:
            fields = {scalar_value(k): scalar_value(v) for k, v in item.value} if isinstance(item, yaml.MappingNode) else {}
            if not all(fields.get(k) for k in ("value", "enumerator", "kernel")) or check_name(fields["kernel"], "kernel") \
                    or not re.fullmatch(r"[A-Za-z_][\w:]*", fields["enumerator"]):
                problems.append((node_location(shown, item), "each selector case is {value: <string>, enumerator: <Enum::Name>, kernel: <identifier>}."))
                continue
            cases.append(SelectorCase(fields["value"], fields["enumerator"], fields["kernel"]))
    if len({c.kernel for c in cases}) != len(cases) or len({c.value for c in cases}) != len(cases):
        problems.append((node_location(shown, node), "selector cases must name each value and kernel once."))
    return Selector(values["argument"], values["parse"], values["type"], tuple(cases))


def load_spec(path: Path | str, *, display: str | None = None) -> OpSpec:
    """Load and validate one spec file; raise SpecErrors listing every problem."""
    spec, problems = parse_spec(path, display=display)
    if problems:
        raise SpecErrors(problems)
    assert spec is not None
    return spec


def parse_spec(path: Path | str, *, display: str | None = None) -> tuple[OpSpec | None, list[tuple[Location, str]]]:
    shown = display or str(path)
    text, problems = read_spec_file(Path(path), shown)
    if text is None:
        return None, problems
    return parse_spec_text(text, shown)


def read_spec_file(path: Path, shown: str) -> tuple[str | None, list[tuple[Location, str]]]:
    """A spec file's text (any kind of spec), or the problem that it cannot be read as one."""
    if not path.exists():
        return None, [(Location(shown), "spec file not found.")]
    try:  # a regular file of at most 1 MB: /dev/zero or a FIFO is refused, not read
        return read_bounded(path, "spec file", limit=1024 * 1024).decode("utf-8"), []
    except BadInput as exc:
        return None, [(Location(shown), exc.message)]
    except UnicodeDecodeError:
        return None, [(Location(shown), "spec file is not valid UTF-8.")]


def load_spec_file(path: Path | str, parse_text, *, display: str | None = None):
    """Read a spec file and parse it with ``parse_text(text, shown) -> (spec, problems)`` (op,
    kernel and reduction specs alike); raise SpecErrors listing every problem."""
    shown = display or str(path)
    text, problems = read_spec_file(Path(path), shown)
    spec = None
    if text is not None:
        spec, problems = parse_text(text, shown)
    if problems:
        raise SpecErrors(problems)
    assert spec is not None
    return spec


_NOT_PLAIN_ASCII = re.compile(r"[^\n\x20-\x7e]")


def _compose_or_problem(text: str, shown: str):
    """The YAML node tree of ``text`` by the pure-Python loader, or the problems that make it no spec."""
    import yaml  # (local: explain loads yaml only when it plans)

    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        loc = Location(shown, mark.line + 1, mark.column + 1) if mark else Location(shown)
        return [(loc, f"not valid YAML: {exc.problem or exc}.")]
    except yaml.reader.ReaderError as exc:  # NUL and other control characters
        line = text.count("\n", 0, exc.position) + 1
        col = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        return [(Location(shown, line, col), f"character U+{exc.character:04X} is not allowed in a spec (control characters and NUL are not YAML text); remove it.")]
    except yaml.YAMLError as exc:
        return [(Location(shown), f"not valid YAML: {exc}.")]
    except RecursionError:
        return [(Location(shown), "nested too deeply to be a spec (a spec is a flat mapping of a few keys).")]


def compose(text: str, shown: str):
    """The YAML node tree of a spec's ``text``, or the problems that make it no spec: libyaml,
    ~20x faster (coverage reads a dozen specs), for a text of printable ASCII lines; the
    pure-Python loader words what it refuses, as it always has, and reads any other text (it
    refuses tabs, stray BOMs and other characters libyaml takes)."""
    import yaml  # (local: explain loads yaml only when it plans)

    fast = getattr(yaml, "CSafeLoader", None)
    try:
        if fast is not None and not _NOT_PLAIN_ASCII.search(text):
            return yaml.compose(text, Loader=fast)
    except Exception:  # noqa: BLE001
        pass
    return _compose_or_problem(text, shown)


def spec_mapping(text: str, shown: str, not_a_mapping: str):
    """(the spec's top-level mapping node, []), or (None, the problems): YAML that does not
    parse, or a document that is no mapping (``not_a_mapping`` says what a spec is)."""
    import yaml  # (local: explain loads yaml only when it plans)

    root = compose(text, shown)
    if isinstance(root, list):
        return None, root
    if root is None or not isinstance(root, yaml.MappingNode):
        where = node_location(shown, root) if root is not None else Location(shown, 1, 1)
        return None, [(where, not_a_mapping)]
    return root, []


def spec_fields(root, known: tuple[str, ...], listed: str, shown: str, problems: list) -> dict:
    """key -> (key node, value node) of a spec's top-level mapping; an unknown key (``listed``
    says which are known) or a key given twice is a problem at its place."""
    fields: dict = {}
    for knode, vnode in root.value:
        key = scalar_value(knode)
        if key not in known:
            near = difflib.get_close_matches(str(key), known, n=1)
            guess = f" (did you mean {near[0]!r}?)" if near else ""
            problems.append((node_location(shown, knode), f"unknown key {key!r}{guess}; {listed}."))
            continue
        if key in fields:
            problems.append((node_location(shown, knode), f"duplicate key {key!r}."))
        fields[key] = (knode, vnode)
    return fields


def field_string(fields: dict, key: str, shown: str, problems: list) -> str | None:
    """The non-empty string under ``key`` (None when absent; a problem when empty or not a string)."""
    if key not in fields:
        return None
    val = scalar_value(fields[key][1])
    if val is None or val == "":
        problems.append((node_location(shown, fields[key][1]), f"'{key}' must be a non-empty string."))
        return None
    return val


def parse_spec_text(text: str, shown: str) -> tuple[OpSpec | None, list[tuple[Location, str]]]:
    import yaml  # (local: explain loads yaml only when it plans)
    problems: list[tuple[Location, str]] = []
    root, refused = spec_mapping(text, shown, "a spec must be a YAML mapping with at least 'name' and 'kind'.")
    if root is None:
        return None, refused

    fields = spec_fields(root, SPEC_KEYS, f"known keys: {', '.join(SPEC_KEYS)}", shown, problems)

    def need_str(key: str) -> str | None:
        return field_string(fields, key, shown, problems)

    name = need_str("name")
    if "name" not in fields:
        problems.append((Location(shown, 1, 1), "missing required key 'name' (the aten op name, e.g. heaviside)."))
    elif name is not None and (why := check_name(name, "'name'")):
        problems.append((node_location(shown, fields["name"][1]), why))
        name = None

    kind = need_str("kind")
    if "kind" not in fields:
        problems.append((Location(shown, 1, 1), f"missing required key 'kind' (one of {', '.join(KINDS)})."))
    elif kind is not None and kind not in KINDS:
        problems.append((node_location(shown, fields["kind"][1]), f"unknown kind {kind!r}; use one of {', '.join(KINDS)}."))
        kind = None

    functor = FunctorSource()
    body = expr = None
    text_node = None  # the node holding the functor's text
    if "functor" in fields:
        vnode = fields["functor"][1]
        if isinstance(vnode, yaml.ScalarNode) and vnode.value.strip():
            body, text_node = vnode.value, vnode
        elif isinstance(vnode, yaml.MappingNode):
            for k, v in vnode.value:
                if scalar_value(k) == "expr" and scalar_value(v):
                    expr, text_node = scalar_value(v), v
                elif scalar_value(k) == "body" and scalar_value(v):
                    body, text_node = scalar_value(v), v
                else:
                    problems.append((node_location(shown, k), "'functor' takes 'expr: <C++ expression>' or 'body: <struct body>'."))
            if expr is not None and body is not None:
                problems.append((node_location(shown, vnode), "'functor' takes 'expr' or 'body', not both."))
        else:
            problems.append(
                (node_location(shown, vnode), "'functor' must be the C++ struct body (a string) or a mapping with 'expr'.")
            )
    if "expr" in fields:
        if expr is not None or body is not None:
            problems.append((node_location(shown, fields["expr"][0]), "give either 'functor' or 'expr', not both."))
        expr = need_str("expr")
        text_node = fields["expr"][1]
    if body is not None and expr is None and (why := check_body(body, name, "'functor'")):
        problems.append((node_location(shown, fields["functor"][1]), why))
    if expr is not None and body is None:
        node = fields["expr"][1] if "expr" in fields else fields["functor"][1]
        if why := check_expr(expr, "'expr'"):
            problems.append((node_location(shown, node), why))
    if body is not None or expr is not None:
        line, column = scalar_text_start(text_node, text) if text_node is not None else (0, 0)
        functor = FunctorSource(body=body, expr=expr, origin=shown, line=line, column=column)

    dtypes: list[str] = []
    if "dtypes" in fields:
        vnode = fields["dtypes"][1]
        if not isinstance(vnode, yaml.SequenceNode):
            problems.append((node_location(shown, vnode), f"'dtypes' must be a list of groups ({', '.join(DTYPE_GROUPS)})."))
        else:
            for item in vnode.value:
                g = scalar_value(item)
                if g not in DTYPE_GROUPS:
                    problems.append(
                        (node_location(shown, item), f"unknown dtype group {g!r}; known groups: {', '.join(DTYPE_GROUPS)}.")
                    )
                else:
                    dtypes.append(g)
            if kind:
                for why in check_dtype_groups(kind, dtypes):
                    if not why.startswith("unknown"):
                        problems.append((node_location(shown, vnode), why))

    stub = need_str("stub")
    if stub is not None and (why := check_name(stub, "'stub'")):
        problems.append((node_location(shown, fields["stub"][1]), why))

    rows: tuple[str, ...] | None = None
    if "rows" in fields:
        vnode = fields["rows"][1]
        if not isinstance(vnode, yaml.SequenceNode) or not vnode.value:
            problems.append((node_location(shown, vnode), "'rows' must be a non-empty list like [heaviside.out]."))
        else:
            collected = []
            for item in vnode.value:
                r = scalar_value(item)
                if r is None or not _ROW.match(r):
                    problems.append((node_location(shown, item), f"{r!r} is not a native_functions row name like 'heaviside.out'."))
                else:
                    collected.append(r)
            rows = tuple(collected)

    files: dict[str, str] = {}
    if "files" in fields:
        vnode = fields["files"][1]
        if not isinstance(vnode, yaml.MappingNode):
            problems.append((node_location(shown, vnode), "'files' must map 'metal' and/or 'mm' to paths in the tree."))
        else:
            for k, v in vnode.value:
                key = scalar_value(k)
                if key not in FILE_KEYS:
                    problems.append((node_location(shown, k), f"unknown target {key!r} in 'files'; use {', '.join(FILE_KEYS)}."))
                    continue
                val = scalar_value(v)
                why = check_relpath(val) if val is not None else "must be a path relative to the PyTorch root."
                why = why or check_target_file(key, val)
                if why:
                    problems.append((node_location(shown, v), f"files.{key}: {why}"))
                else:
                    files[key] = val.replace("\\", "/")
            if len(files) == 2 and files["metal"] == files["mm"]:
                problems.append((node_location(shown, vnode), "files.metal and files.mm name the same file; give two files."))

    alpha_type = need_str("alpha_type")
    if alpha_type is not None and not _C_IDENT.match(alpha_type):
        problems.append((node_location(shown, fields["alpha_type"][1]), f"'alpha_type' {alpha_type!r} is not a Metal type name."))

    alphas = None
    if "alphas" in fields:
        knode, vnode = fields["alphas"]
        items = vnode.value if isinstance(vnode, yaml.SequenceNode) else None
        if not items:
            problems.append((node_location(shown, vnode), "'alphas' must be a non-empty list of numbers (the Scalar values mpsgen try runs the op with)."))
        elif kind is not None and not kind.endswith("_alpha"):
            problems.append((node_location(shown, knode), f"'alphas' is for the unary_alpha and binary_alpha kinds; {kind} takes no Scalar."))
        else:
            got = []
            for item in items:
                value = _number(scalar_value(item))
                if value is None:
                    problems.append((node_location(shown, item), f"{scalar_value(item)!r} is not a number (alphas are the Scalar values mpsgen try uses)."))
                else:
                    got.append(value)
            alphas = tuple(got)

    try_domain: dict[str, tuple[float, float]] = {}
    try_why = ""
    if "try_domain" in fields:
        knode, vnode = fields["try_domain"]
        operands = OPERANDS.get(kind or "", ())
        if not isinstance(vnode, yaml.MappingNode):
            problems.append((node_location(shown, vnode), "'try_domain' must map operands to [low, high] and give 'why' (the reason mpsgen try leaves the other samples out)."))
        else:
            for k, v in vnode.value:
                key = scalar_value(k)
                if key == "why":
                    try_why = (scalar_value(v) or "").strip()
                    if not try_why:
                        problems.append((node_location(shown, v), "'try_domain.why' must be a non-empty string (mpsgen try prints it)."))
                elif kind is not None and key not in operands:
                    problems.append((node_location(shown, k), f"{key!r} is not an operand of a {kind} op; 'try_domain' takes {', '.join(operands)} and why."))
                elif key in try_domain:
                    problems.append((node_location(shown, k), f"duplicate operand {key!r} in 'try_domain'."))
                else:
                    bounds = [_bound(scalar_value(i)) for i in v.value] if isinstance(v, yaml.SequenceNode) else []
                    if len(bounds) != 2 or None in bounds:
                        problems.append((node_location(shown, v), f"try_domain.{key} must be [low, high], two numbers (.inf and -.inf allowed)."))
                    elif bounds[0] > bounds[1]:
                        problems.append((node_location(shown, v), f"try_domain.{key}: low {bounds[0]:g} is above high {bounds[1]:g}; no sample would be left."))
                    else:
                        try_domain[key] = (bounds[0], bounds[1])
            if not try_why and not any(scalar_value(k) == "why" for k, _v in vnode.value):
                problems.append((node_location(shown, knode), "'try_domain' needs 'why': the reason mpsgen try leaves samples out (it prints it)."))
            if not any(scalar_value(k) != "why" for k, _v in vnode.value):
                problems.append((node_location(shown, knode), f"'try_domain' restricts no operand; give a range for {' or '.join(operands) or 'an operand'}."))
            if "complex" in dtypes:
                problems.append((node_location(shown, knode), "'try_domain' ranges real values; a spec with complex inputs cannot use it."))

    params: list[Param] = []
    if "params" in fields:
        knode, vnode = fields["params"]
        if not isinstance(vnode, yaml.MappingNode) or not vnode.value:
            problems.append((node_location(shown, vnode), f"'params' must map each param's name to its type ({', '.join(PARAM_TYPES)})."))
        else:
            params = [Param(scalar_value(k) or "", scalar_value(v) or "") for k, v in vnode.value]
    operands: tuple[str, ...] | None = None
    if "operands" in fields:
        knode, vnode = fields["operands"]
        items = [scalar_value(i) for i in vnode.value] if isinstance(vnode, yaml.SequenceNode) else []
        want = len(OPERANDS.get(kind or "", ()))
        if not items or None in items or any(check_name(i, "operand") for i in items if i):
            problems.append((node_location(shown, vnode), "'operands' must list the schema's tensor argument each operand of the functor is, e.g. [self, self]."))
        elif kind is not None and len(items) != want:
            problems.append((node_location(shown, vnode), f"'operands' names {len(items)} tensors; a {kind} functor takes {want}."))
        else:
            operands = tuple(items)
    try_params: list[dict[str, float | bool | None]] = []
    if "try_params" in fields:
        knode, vnode = fields["try_params"]
        if not isinstance(vnode, yaml.SequenceNode) or not vnode.value:
            problems.append((node_location(shown, vnode), "'try_params' must be a list of mappings, param name to value (null leaves an optional out)."))
        else:
            for item in vnode.value:
                if not isinstance(item, yaml.MappingNode):
                    problems.append((node_location(shown, item), "each 'try_params' entry maps param names to values, e.g. {beta: 2, threshold: 20}."))
                    continue
                values: dict[str, float | bool | None] = {}
                for k, v in item.value:
                    raw = scalar_value(v)
                    if raw in ("null", "~", ""):
                        values[scalar_value(k) or ""] = None
                    elif raw in ("true", "false"):
                        values[scalar_value(k) or ""] = raw == "true"
                    elif (number := _bound(raw)) is not None:
                        values[scalar_value(k) or ""] = number
                    else:
                        problems.append((node_location(shown, v), f"{raw!r} is not a number, true/false or null."))
                try_params.append(values)
    kernel_of = need_str("kernel") or ""
    if kernel_of and (why := check_name(kernel_of, "'kernel'")):
        problems.append((node_location(shown, fields["kernel"][1]), why))
    fixed: dict[str, float] = {}
    if "fixed" in fields:
        knode, vnode = fields["fixed"]
        if not isinstance(vnode, yaml.MappingNode):
            problems.append((node_location(shown, vnode), "'fixed' maps params to the values the stub's caller passes, e.g. {value: 0}."))
        else:
            for k, v in vnode.value:
                number = _number(scalar_value(v))
                if number is None:
                    problems.append((node_location(shown, v), f"fixed.{scalar_value(k)}: {scalar_value(v)!r} is not a number."))
                elif params and scalar_value(k) not in {p.name for p in params}:
                    problems.append((node_location(shown, k), f"fixed.{scalar_value(k)} is not a param ({', '.join(p.name for p in params)})."))
                else:
                    fixed[scalar_value(k) or ""] = number
    selector = None
    functors: dict[str, FunctorSource] = {}
    if "selector" in fields:
        selector = _parse_selector(fields["selector"][1], shown, problems)
        if kind not in (None, "unary", "binary"):
            problems.append((node_location(shown, fields["selector"][0]), f"'selector' is for unary and binary ops; this one is {kind}."))
        if body is not None or expr is not None:
            problems.append((node_location(shown, fields["selector"][0]), "with 'selector', give each case's functor in 'functors', not 'functor'/'expr'."))
    if "functors" in fields:
        knode, vnode = fields["functors"]
        if not isinstance(vnode, yaml.MappingNode):
            problems.append((node_location(shown, vnode), "'functors' maps each case's kernel to its functor (the struct body)."))
        else:
            for k, v in vnode.value:
                kernel, text_value = scalar_value(k) or "", scalar_value(v)
                if text_value is None or (why := check_body(text_value, kernel, f"functors.{kernel}")):
                    problems.append((node_location(shown, v), why if text_value is not None else f"functors.{kernel} must be the functor's struct body."))
                    continue
                line, column = scalar_text_start(v, text)
                functors[kernel] = FunctorSource(body=text_value, origin=shown, line=line, column=column)
    if selector is not None and "functors" in fields:
        missing = [c.kernel for c in selector.cases if c.kernel not in functors]
        extra = [k for k in functors if k not in {c.kernel for c in selector.cases}]
        if missing or extra:
            problems.append((node_location(shown, fields["functors"][0]), f"'functors' must give exactly the cases' kernels ({', '.join(c.kernel for c in selector.cases)})."))
    elif (selector is None) != ("functors" not in fields):
        key = "functors" if selector is None else "selector"
        problems.append((node_location(shown, fields[key][0]), "'selector' and 'functors' go together."))
    if kind is not None and not problems:
        for why in params_problems(kind, tuple(params), tuple(try_params)):
            problems.append((node_location(shown, fields["params"][1] if "params" in fields else fields["kind"][1]), why))

    if problems or name is None or kind is None:
        return None, problems
    spec = OpSpec(
        name=name,
        kind=kind,
        functor=functor,
        dtypes=tuple(dtypes),
        stub=stub or "",
        rows=rows,
        files=files,
        alpha_type=alpha_type,
        alphas=alphas,
        try_domain=try_domain,
        try_domain_why=try_why,
        params=tuple(params),
        operands=operands,
        try_params=tuple(try_params),
        kernel_of=kernel_of,
        fixed=fixed,
        selector=selector,
        functors=functors,
        source=shown,
    )
    return spec, []

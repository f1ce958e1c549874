"""The AOTInductor C shim of a tree, read as text (no torchgen import, no ``ast``): the ops
``torchgen/aoti/fallback_ops.py`` lists, which of them torchgen declares in
``torch/csrc/inductor/aoti_torch/generated/c_shim_mps.h``, and what that header declares.

torchgen (``gen_aoti_c_shim.py``) declares ``aoti_torch_mps_<name>[_<overload>][_v<N>]`` for
each op of ``inductor_fallback_ops`` whose row :func:`aoti_backend` gives a backend
(``get_backend_index_for_aoti``: the row's own MPS kernel, the MPS kernel of the structured
out row it delegates to, else a composite kernel) and whose schema it can write in C
(:func:`shimmable`: ``gen_c_shim`` drops an op whose argument or return type raises
NotImplementedError). ``mpsgen check`` (MPS014) compares that with the header; new-op looks
here before it runs the tree's own torchgen (:mod:`mpsgen.plan.aoti`).
"""

from __future__ import annotations

import bisect
import functools
import re
from typing import NamedTuple

FALLBACK_OPS = "torchgen/aoti/fallback_ops.py"
C_SHIM_MPS = "torch/csrc/inductor/aoti_torch/generated/c_shim_mps.h"
TAGS_YAML = "aten/src/ATen/native/tags.yaml"
# what regenerates the checked-in headers (the command upstream's build error names)
REGENERATE = "python torchgen/gen.py --update-aoti-c-shim"

COMPOSITE_KEYS = ("CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional", "CompositeImplicitAutograd")


# -- fallback_ops.py -------------------------------------------------------------------------
class FallbackOp(NamedTuple):
    key: str  # "aten.avg_pool2d.default"
    line: int  # of the key in fallback_ops.py
    meta: dict  # {"since": ..., "v2": {"new_args": [...], "since": ...}}


_TOKEN = re.compile(r"""\s*(?:#[^\n]*|"([^"\\\n]*)"|'([^'\\\n]*)'|([{}\[\]:,]))""")


class _Unreadable(Exception):
    pass


@functools.lru_cache(maxsize=2)
def read_fallback_ops(text: str, name: str = "inductor_fallback_ops") -> dict[str, FallbackOp] | None:
    """The entries of the dict literal assigned to ``name`` (None when there is none, or it
    holds anything but strings, lists and dicts: then nothing is said about it). Read once per
    text (every op a run plans asks it of the same file): the answer is shared, read it only."""
    m = re.search(rf"^{name}\b[^=\n]*=[ \t]*\{{", text, re.M)
    if m is None:
        return None
    reader = _Literal(text, m.end() - 1)
    try:
        return reader.top()
    except (_Unreadable, IndexError):
        return None


class _Literal:
    """A reader of a Python literal made of str, list and dict (what fallback_ops.py holds)."""

    def __init__(self, text: str, pos: int):
        self.text, self.pos = text, pos

    def _next(self) -> tuple[str, str, int]:
        """(kind "s" | "p", value, offset): the next string or punctuation, comments skipped."""
        while True:
            m = _TOKEN.match(self.text, self.pos)
            if m is None:
                raise _Unreadable(self.pos)
            self.pos = m.end()
            if m.group(3):
                return "p", m.group(3), m.start(3)
            for g in (1, 2):
                if m.group(g) is not None:
                    return "s", m.group(g), m.start(g)
            # a comment: go on

    def _peek(self) -> tuple[str, str, int]:
        pos = self.pos
        tok = self._next()
        self.pos = pos
        return tok

    def _value(self):
        kind, value, _at = self._next()
        if kind == "s":
            if self._peek()[0] == "s":
                raise _Unreadable(self.pos)  # implicit concatenation: not what torchgen's file holds
            return value
        if value == "{":
            return {k: v for k, v, _at in self._items("}")}
        if value == "[":
            return [v for _k, v, _at in self._items("]")]
        raise _Unreadable(self.pos)

    def _items(self, close: str):
        while True:
            kind, value, at = self._peek()
            if kind == "p" and value == close:
                self._next()
                return
            if close == "]":
                yield None, self._value(), at
            else:
                kind, key, at = self._next()
                if kind != "s" or self._next()[1] != ":":
                    raise _Unreadable(at)
                yield key, self._value(), at
            kind, value, _at = self._next()
            if value == close:
                return
            if value != ",":
                raise _Unreadable(self.pos)

    def top(self) -> dict[str, FallbackOp]:
        kind, value, _at = self._next()
        assert kind == "p" and value == "{"
        out: dict[str, FallbackOp] = {}
        for key, value, at in self._items("}"):
            if not isinstance(value, dict):
                raise _Unreadable(at)
            out[key] = FallbackOp(key, self.text.count("\n", 0, at) + 1, value)
        return out


def fallback_keys(text: str) -> set[str] | None:
    ops = read_fallback_ops(text)
    return None if ops is None else set(ops)


def row_name(key: str) -> str | None:
    """``aten.add.Scalar`` -> ``add.Scalar``, ``aten.abs.default`` -> ``abs``; None for another
    namespace (torchgen's MPS shim only has aten's ops)."""
    parts = key.split(".")
    if len(parts) != 3 or parts[0] != "aten":
        return None
    return parts[1] if parts[2] == "default" else f"{parts[1]}.{parts[2]}"


def fallback_key(name: str) -> str:
    """``add.Scalar`` -> ``aten.add.Scalar`` (torchgen's get_fallback_op_name)."""
    return f"aten.{name}" if "." in name else f"aten.{name}.default"


def shim_functions(op: FallbackOp) -> list[tuple[str, str | None]] | None:
    """(C function name without ``aoti_torch_mps_``, the TORCH_VERSION its declaration is
    guarded by or None) of each version of the op, newest first, as torchgen writes them;
    None when the entry is not one torchgen takes."""
    name = row_name(op.key)
    if name is None:
        return None
    base = name.replace(".", "_")
    versions: dict[int, str | None] = {1: op.meta.get("since")}
    for k, payload in op.meta.items():
        if k == "since":
            continue
        if not (k.startswith("v") and k[1:].isdigit()) or not isinstance(payload, dict) or int(k[1:]) in versions:
            return None
        versions[int(k[1:])] = payload.get("since")
    if any(s is not None and not isinstance(s, str) for s in versions.values()):
        return None
    return [(base if v == 1 else f"{base}_v{v}", versions[v]) for v in sorted(versions, reverse=True)]


# -- c_shim_mps.h ----------------------------------------------------------------------------
class Declaration(NamedTuple):
    name: str  # "avg_pool2d" of aoti_torch_mps_avg_pool2d
    line: int
    guard: str | None  # "TORCH_VERSION_2_12_0" of an enclosing `#if TORCH_FEATURE_VERSION >= ...`


_DECLARATION = re.compile(r"AOTI_TORCH_EXPORT\s+AOTITorchError\s+aoti_torch_mps_(\w+)\s*\(")
_FEATURE_GUARD = re.compile(r"#\s*if\s+TORCH_FEATURE_VERSION\s*>=\s*(\w+)\s*$")


def read_declarations(text: str) -> list[Declaration]:
    """The ``aoti_torch_mps_*`` declarations of the header, with the feature-version guard
    each sits in."""
    out: list[Declaration] = []
    guards: list[str | None] = []
    for number, line in enumerate(text.split("\n"), 1):
        s = line.strip()
        if s.startswith("#"):
            word = s[1:].lstrip()
            if word.startswith("if"):  # #if, #ifdef, #ifndef
                m = _FEATURE_GUARD.match(s)
                guards.append(m.group(1) if m else None)
            elif word.startswith("endif") and guards:
                guards.pop()
            continue
        m = _DECLARATION.match(s)
        if m:
            guard = next((g for g in reversed(guards) if g is not None), None)
            out.append(Declaration(m.group(1), number, guard))
    return out


# -- native_functions.yaml rows ----------------------------------------------------------------
class EntryFacts(NamedTuple):
    """What torchgen's backend choice and shim writer read of one yaml entry."""

    name: str
    func: str
    keys: frozenset  # every dispatch key of the entry
    mps_line: int  # the first line dispatching MPS, 0 if none
    has_dispatch: bool
    structured: bool
    delegate: str | None
    start_line: int


# searched with their leading newline (a literal the regex engine looks for at C speed) in the
# text with a newline put in front
_HEADER = re.compile(r"\n- func: ([A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)?)\(")
_AUTOGEN = re.compile(r"\n  autogen:([^\n]*)")
_DELEGATE = re.compile(r"\n  structured_delegate:[ \t]*([A-Za-z0-9_.]+)")
_DISPATCH_LINE = re.compile(r"    ([A-Za-z0-9_, ]+):\s*([A-Za-z0-9_:]+)\s*(#.*)?$")


class YamlEntries:
    """The entries of a native_functions.yaml text by name, read on demand."""

    def __init__(self, text: str):
        self.padded = "\n" + text  # offset i here is offset i - 1 of the text
        self._lines: list[tuple[int, int]] = [(0, 1)]  # (offset, its line) already counted

    @functools.cached_property
    def starts(self) -> dict[str, int]:
        """Entry name -> its offset (found when first asked: :meth:`delegating_to` needs none)."""
        return {m.group(1): m.start() for m in _HEADER.finditer(self.padded)}

    def _line(self, at: int) -> int:
        """The 1-based line of the text at ``at`` of the padded text (counting from the nearest
        offset already counted, so many lookups cost about one pass over the text)."""
        i = bisect.bisect_right(self._lines, (at, 1 << 62)) - 1
        pos, line = self._lines[i]
        line += self.padded.count("\n", pos + 1, at + 1)
        self._lines.insert(i + 1, (at, line))
        return line

    def facts(self, wanted) -> dict[str, EntryFacts]:
        """The facts of the entries named ``wanted``, and of the rows those delegate to."""
        out: dict[str, EntryFacts] = {}
        # latest in the file first (popped last): the lines are counted in one pass, forward
        todo = sorted(wanted, key=lambda n: self.starts.get(n, -1), reverse=True)
        while todo:
            name = todo.pop()
            if name in out:
                continue
            at = self.starts.get(name)
            if at is None:
                continue
            end = self.padded.find("\n- ", at + 1)
            facts = out[name] = _facts(name, self.padded[at + 1 : len(self.padded) if end < 0 else end], self._line(at))
            if facts.delegate:
                todo.append(facts.delegate)
        return out

    def generated_by(self) -> dict[str, str]:
        """Op name -> the entry whose ``autogen:`` makes it (torchgen generates those rows)."""
        out: dict[str, str] = {}
        for m in _AUTOGEN.finditer(self.padded):
            h = _HEADER.match(self.padded, self.padded.rfind("\n- func: ", 0, m.start()))
            if h is not None:
                for name in m.group(1).split("#")[0].split(","):
                    if name.strip():
                        out[name.strip()] = h.group(1)
        return out

    def delegating_to(self, names: set[str]) -> set[str]:
        """The entries whose ``structured_delegate:`` is one of ``names``."""
        out = set()
        for m in _DELEGATE.finditer(self.padded):
            if m.group(1) in names:
                h = _HEADER.match(self.padded, self.padded.rfind("\n- func: ", 0, m.start()))
                if h is not None:
                    out.add(h.group(1))
        return out


def _facts(name: str, entry: str, start_line: int) -> EntryFacts:
    lines = entry.split("\n")
    func = lines[0][len("- func:") :].strip()
    keys: set[str] = set()
    mps_line = 0
    has_dispatch = structured = False
    delegate = None
    in_dispatch = False
    for i, ln in enumerate(lines[1:], 1):
        if in_dispatch and (ln.startswith("    ") or not ln.strip()):
            m = _DISPATCH_LINE.match(ln)
            if m:
                ks = {k.strip() for k in m.group(1).split(",")}
                keys |= ks
                if "MPS" in ks and not mps_line:
                    mps_line = start_line + i
            continue
        in_dispatch = False
        value = ln.split(":", 1)[1].split("#")[0].strip() if ":" in ln else ""
        if ln.startswith("  dispatch:"):
            has_dispatch = in_dispatch = True
        elif ln.startswith("  structured:"):
            structured = value == "True"
        elif ln.startswith("  structured_delegate:"):
            delegate = value or None
    return EntryFacts(name, func, frozenset(keys), mps_line, has_dispatch, structured, delegate, start_line)


def aoti_backend(row: EntryFacts, facts: dict[str, EntryFacts]) -> str | None:
    """The dispatch key whose kernel torchgen's MPS shim calls for ``row``
    (``get_backend_index_for_aoti``): MPS when the row dispatches MPS or delegates to a
    structured out row that does; else its composite kernel (an entry without a dispatch table,
    neither structured nor delegating, is CompositeImplicitAutograd); else None: no shim."""
    if "MPS" in row.keys:
        return "MPS"
    if row.delegate:
        out = facts.get(row.delegate)
        if out is not None and out.structured and "MPS" in out.keys:
            return "MPS"
    for key in COMPOSITE_KEYS:
        if key in row.keys:
            return key
    if not row.has_dispatch and not row.structured and row.delegate is None:
        return "CompositeImplicitAutograd"
    return None


def mps_site(row: EntryFacts, facts: dict[str, EntryFacts]) -> int:
    """The yaml line that gives ``row`` its MPS shim (its own MPS line, or its delegate's)."""
    if row.mps_line:
        return row.mps_line
    out = facts.get(row.delegate) if row.delegate else None
    return out.mps_line if out is not None else 0


# -- which schemas torchgen can write in C ---------------------------------------------------
# gen_aoti_c_shim.py's base_type_to_c_type (Device takes two C arguments; as a return it is not one)
_C_TYPES = frozenset(
    {"Tensor", "bool", "int", "SymInt", "Scalar", "float", "str", "DeviceIndex", "Layout", "MemoryFormat", "ScalarType", "Generator"}
)
# torchgen's other BaseTy names: known types the shim writer raises NotImplementedError for
_NO_C_TYPE = frozenset({"Dimname", "DimVector", "QScheme", "Storage", "Stream", "SymBool", "GraphModule"})
_ANNOTATED = re.compile(r"Tensor\((.+)\)(.*)")
_SCHEMA = re.compile(r"(?P<name>[^\(]+)\((?P<args>.*)\) -> (?P<returns>.*)")  # FunctionSchema.decl_re
_LIST = re.compile(r"(.+)\[([0-9]+)?\]")
_DUNDER = re.compile(r"__([^_]+)__")


class _Unknown(Exception):
    """What torchgen would not even parse or would fail on otherwise: no prediction."""


def _c_slots(t: str) -> int:
    """How many C arguments torchgen's convert_arg_type_and_name makes of type ``t``; raises
    NotImplementedError where it does, _Unknown where it fails otherwise."""
    if t.endswith("?"):
        return _c_slots(t[:-1])
    m = _LIST.fullmatch(t)
    if m is not None:
        if _c_slots(m.group(1)) != 1 or (m.group(1) == "bool" and m.group(2) is None):
            raise _Unknown(t)  # an AssertionError in torchgen
        return 2
    if t in _C_TYPES:
        return 1
    if t == "Device":
        return 2
    if t in _NO_C_TYPE or t.startswith("__torch__.torch.classes."):
        raise NotImplementedError(t)
    raise _Unknown(t)


def _type(type_and_annot: str) -> tuple[str, bool]:
    """(type, whether it is written to) of an argument's or return's type with annotation."""
    m = _ANNOTATED.match(type_and_annot)
    if m is None:
        return type_and_annot, False
    return "Tensor" + m.group(2), "!" in m.group(1)


def shimmable(func: str, generated: str | None = None) -> bool | None:
    """Whether torchgen's gen_declaration_and_definition writes a C shim for the schema
    ``func`` (False: it raises NotImplementedError, and gen_c_shim leaves the op out), or None
    when it cannot be told. ``generated``: ``func`` is the entry an ``autogen:`` variant is
    made from, ``"out"`` (the variant takes its results as out arguments, whose types
    convert) or ``"functional"`` (it returns what the entry returns and what it mutates)."""
    m = _SCHEMA.match(func)
    if m is None:
        return None
    base = m.group("name").split(".")[0]
    dunder = _DUNDER.fullmatch(base)
    inplace = (dunder.group(1).startswith("i") if dunder else base.endswith("_")) and generated is None
    types: list[str] = []
    is_out = keyword_only = False
    written_lists = False
    for arg in m.group("args").split(", "):
        if not arg:
            continue
        if arg == "*":
            keyword_only = True
            continue
        if " " not in arg:
            return None
        typ, written = _type(arg.split("=", 1)[0].rsplit(" ", 1)[0])
        is_out = is_out or (written and keyword_only)
        written_lists = written_lists or (written and typ.endswith("[]"))
        types.append(typ)
    try:
        for t in types:
            _c_slots(t)
    except NotImplementedError:
        return False
    except _Unknown:
        return None
    if is_out or inplace or generated == "out":
        return True  # the C function returns only its error code
    if generated == "functional" and written_lists:
        return False  # the variant returns the mutated list: a Tensor[] return has no C type
    returns = m.group("returns")
    if returns == "()":
        return True
    if returns.startswith("(") and returns.endswith(")"):
        returns = returns[1:-1]
    for ret in returns.split(", "):
        typ, _written = _type(ret.rsplit(" ", 1)[0] if " " in ret else ret)
        if typ not in _C_TYPES:
            return False
    return True


# -- the whole picture --------------------------------------------------------------------------
class Expected(NamedTuple):
    """What torchgen makes of one fallback op for the MPS header."""

    op: FallbackOp
    functions: tuple  # ((name, since), ...) newest version first
    declared: bool | None  # None: cannot be told from the text
    backend: str | None  # "MPS", a composite key, or None
    row: EntryFacts | None  # the op's entry (its source entry when generated by autogen)
    site: int = 0  # the yaml line that decides: the MPS line giving the shim, else the entry's first
    generated: bool = False


def expected_shims(fallback: dict[str, FallbackOp], yaml_text: str) -> list[Expected]:
    """For each fallback op: the functions torchgen declares for it in c_shim_mps.h, and why."""
    entries = YamlEntries(yaml_text)
    facts = entries.facts(n for n in map(row_name, fallback) if n)
    made = None
    out: list[Expected] = []
    for op in fallback.values():
        functions = shim_functions(op)
        name = row_name(op.key)
        if functions is None or name is None:
            continue
        row = facts.get(name)
        if row is not None:
            backend = aoti_backend(row, facts)
            declared = False if backend is None else shimmable(row.func)
            site = (mps_site(row, facts) if backend == "MPS" else 0) or row.start_line
            out.append(Expected(op, tuple(functions), declared, backend, row, site))
            continue
        if made is None:
            made = entries.generated_by()
        source = made.get(name)
        src = entries.facts([source]).get(source) if source else None
        if src is None:  # no such op: torchgen skips it
            out.append(Expected(op, tuple(functions), False, None, None))
            continue
        # a generated row has a CompositeExplicitAutograd kernel (native_function_generation)
        kind = "out" if name.partition(".")[2].endswith("out") else "functional"
        out.append(Expected(op, tuple(functions), shimmable(src.func, kind), "CompositeExplicitAutograd", src, src.start_line, True))
    return out

"""Custom kernels' names on both sides: the pipeline names host code asks the shader library for
(``lib.getPipelineStateForFunc(...)``) and the ``[[host_name("...")]]`` names ``.metal`` files
register. A name is a pattern: its literal parts, and a hole (``\\w+``) for each part computed
at run time (a ``{}`` of ``fmt::format``, a concatenated call, a ``#PARAM`` of a macro).

Read as upstream writes them (facts from GridSampler, Pooling, EmbeddingBag, Im2Col, Col2Im,
Distance, Repeat): ``fmt::format("x_{}", scalarToMetalTypeString(t))``, ``"x_" +
scalarToMetalTypeString(t)``, a name built into a variable before the call, a literal; in the
``.metal``, ``template [[host_name("x_" #DTYPE)]] kernel void x<DTYPE>(...)`` inside a macro
instantiated per dtype (macros nested, ``template`` and the attribute on separate lines), or a
plain literal. What cannot be read is not guessed: such a request is left out (``None``).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import lru_cache
from typing import NamedTuple

from mpsgen.metal import SCALAR_TYPES
from mpsgen.tree.source import match_close

HOLE = r"\w+"
_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
_REQUEST = re.compile(r"\b(?:getPipelineStateForFunc|getKernelFunction)\s*\(")
_HOST_NAME = re.compile(r"\[\[\s*host_name\s*\(")
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)((?:[^\n]*\\\n)*[^\n]*)", re.M)
# a library of its own source (`MetalShaderLibrary lib(R"...")`, or of a named string): not kernels/*.metal's
_INLINE_SOURCE = re.compile(r"\bMetalShaderLibrary\s+\w+\s*[({]\s*(?:R\"|\w)")
_DTYPE_KEYS = {k: t for t, k in SCALAR_TYPES.items()}  # kFloat -> float


class PipelineRequest(NamedTuple):
    """A name the host asks for: ``parts`` are literal strings and ``None`` holes;
    ``dtype_hole`` is the index of the hole ``scalarToMetalTypeString`` fills (or -1);
    ``dtypes`` the Metal types the host's dtype check accepts (empty when it has none mpsgen reads);
    ``holes`` the C++ expression that fills each hole, in order (``opts.prefix``), when read."""

    path: str
    line: int
    parts: tuple[str | None, ...]
    dtype_hole: int = -1
    dtypes: tuple[str, ...] = ()
    holes: tuple[str, ...] = ()

    @property
    def shown(self) -> str:
        return "".join(p if p is not None else "{}" for p in self.parts)

    def regex(self) -> re.Pattern:
        return _regex(self.parts)

    def with_dtype(self, dtype: str) -> tuple[str | None, ...]:
        holes = [i for i, p in enumerate(self.parts) if p is None]
        at = holes[self.dtype_hole]
        return self.parts[:at] + (dtype,) + self.parts[at + 1 :]


class HostName(NamedTuple):
    """A name a .metal file registers (holes where a macro parameter is pasted in)."""

    path: str
    line: int
    parts: tuple[str | None, ...]

    @property
    def shown(self) -> str:
        return "".join(p if p is not None else "*" for p in self.parts)


@lru_cache(maxsize=4096)
def _regex(parts: tuple[str | None, ...]) -> re.Pattern:
    return re.compile("".join(re.escape(p) if p is not None else HOLE for p in parts))


def _sample(parts: tuple[str | None, ...]) -> str:
    return "".join(p if p is not None else "x" for p in parts)


def may_match(request: tuple[str | None, ...], name: tuple[str | None, ...]) -> bool:
    """Whether some string could be both (permissive where both have holes: no false finding)."""
    if None not in name:
        return _regex(request).fullmatch(_sample(name)) is not None
    if None not in request:
        return _regex(name).fullmatch(_sample(request)) is not None
    return _regex(request).fullmatch(_sample(name)) is not None or _regex(name).fullmatch(_sample(request)) is not None


def _merge(parts: list[str | None]) -> tuple[str | None, ...]:
    out: list[str | None] = []
    for p in parts:
        if p is not None and out and out[-1] is not None:
            out[-1] += p
        elif not (p is None and out and out[-1] is None):
            out.append(p)
    return tuple(out)


def _concatenation(expr: str) -> tuple[tuple[str | None, ...], int, tuple[str, ...]] | None:
    """``"a_" + f(x) + "_b"`` -> (("a_", None, "_b"), index of the scalarToMetalTypeString hole,
    the expression of each hole)."""
    parts: list[str | None] = []
    dtype_hole = -1
    holes = 0
    filled: list[str] = []
    for term in _split_top(expr, "+"):
        term = term.strip()
        wrapped = re.fullmatch(r"(?:std::)?string\s*\((.*)\)", term, re.S)
        if wrapped is not None and _STRING.fullmatch(wrapped.group(1).strip()):
            term = wrapped.group(1).strip()  # std::string("x_"): the literal
        m = _STRING.fullmatch(term)
        if m is not None:
            parts.append(m.group(1))
            continue
        if not term:
            return None
        if "scalarToMetalTypeString" in term and dtype_hole < 0:
            dtype_hole = holes
        if parts and parts[-1] is None:  # (two holes in a row merge into one: its expression is not one)
            filled[-1] = ""
        else:
            filled.append(term)
        parts.append(None)
        holes += 1
    return _merge(parts), dtype_hole, tuple(filled)


def _split_top(expr: str, sep: str) -> list[str]:
    out, depth, start, quoted = [], 0, 0, False
    for i, c in enumerate(expr):
        if c == '"' and (i == 0 or expr[i - 1] != "\\"):
            quoted = not quoted
        if quoted:
            continue
        depth += c in "([{"
        depth -= c in ")]}"
        if c == sep and depth == 0:
            out.append(expr[start:i])
            start = i + 1
    out.append(expr[start:])
    return out


def _format(expr: str) -> tuple[tuple[str | None, ...], int, tuple[str, ...]] | None:
    """``fmt::format("a_{}_{}", x, scalarToMetalTypeString(t))`` -> parts, the dtype hole and the
    expression of each hole."""
    m = re.fullmatch(r"\s*(?:fmt::)?format\s*\((.*)\)\s*", expr, re.S)
    if m is None:
        return None
    args = _split_top(m.group(1), ",")
    fmt = _STRING.fullmatch(args[0].strip())
    if fmt is None or re.search(r"\{[^}]", fmt.group(1)):
        return None  # positional or formatted fields: not read
    pieces = fmt.group(1).split("{}")
    if len(pieces) - 1 != len(args) - 1:
        return None
    parts: list[str | None] = []
    dtype_hole = -1
    filled: list[str] = []
    for k, piece in enumerate(pieces):
        parts.append(piece)
        if k < len(args) - 1:
            arg = args[k + 1].strip()
            lit = _STRING.fullmatch(arg)
            if lit is not None:  # a literal argument (Repeat's "int32_t")
                parts.append(lit.group(1))
            else:
                if "scalarToMetalTypeString" in arg and dtype_hole < 0:
                    dtype_hole = sum(p is None for p in parts)
                parts.append(None)
                filled.append(arg)
    merged = _merge([p for p in parts if p != ""])
    if sum(p is None for p in merged) != len(filled):  # holes in a row merged: which fills which is lost
        filled = []
    return merged, dtype_hole, tuple(filled)


def _name_expression(expr: str, text: str, before: int) -> tuple[tuple[str | None, ...], int, tuple[str, ...]] | None:
    expr = expr.strip()
    if re.fullmatch(r"\w+", expr):  # a variable: its last assignment before the call
        found = None
        for m in re.finditer(rf"\b{expr}\s*(?<![=!<>])=(?!=)\s*([^;]+);", text[:before]):
            found = m
        if found is None:
            return None
        if re.search(rf"\b{expr}\s*\+=", text[found.end() : before]):
            return None  # built up after its assignment (`name += ...`): not read
        expr = found.group(1)
    return _format(expr) or _concatenation(expr)


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def _blank_comments(text: str) -> str:
    """``text`` with its comments blanked (offsets and newlines kept): one regex pass, where
    the full C masking of strings too would cost a Python-level scan of every file."""
    return _COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


@lru_cache(maxsize=1024)
def pipeline_requests(path: str, text: str) -> tuple[PipelineRequest, ...] | None:
    """The names ``text`` (an .mm file) asks for; None for a file with its shaders inline (old
    style: the names are its own business)."""
    if "getPipelineStateForFunc" not in text and "getKernelFunction" not in text:
        return ()
    if _INLINE_SOURCE.search(text):
        return None
    masked = _blank_comments(text)
    out = []
    for m in _REQUEST.finditer(masked):
        close = match_close(masked, m.end() - 1)
        if close < 0:
            continue
        args = _split_top(text[m.end() : close], ",")
        if len(args) != 1:
            continue  # (name, {params}) of a templated library: not a kernels/*.metal name
        read = _name_expression(args[0], text, m.start())
        if read is None or all(p is None for p in read[0]):
            # a name mpsgen cannot read (a parameter, built up by `+=`): it may be any name, so no
            # registration is called unrequested while it stands (MPS017 skips it)
            out.append(PipelineRequest(path, text.count("\n", 0, m.start()) + 1, (None,)))
            continue
        parts, dtype_hole, holes = read
        line = text.count("\n", 0, m.start()) + 1
        out.append(PipelineRequest(path, line, parts, dtype_hole, _accepted_dtypes(text, m.start()), holes))
    return tuple(out)


_DTYPE_CHECK = re.compile(r"TORCH_CHECK\(\s*((?:\w+\.scalar_type\(\)\s*==\s*k\w+\s*(?:\|\|\s*)?)+),\s*\"[^\"]*unsupported dtype")


def _accepted_dtypes(text: str, at: int) -> tuple[str, ...]:
    """The dtypes of the first mpsgen-shaped dtype check after ``at`` (new-kernel writes the
    kernel function before the entry point that checks), when there is one."""
    m = _DTYPE_CHECK.search(text, at)
    if m is None or _REQUEST.search(text, at + 1, m.start()):
        return ()
    return tuple(_DTYPE_KEYS[k] for k in re.findall(r"==\s*(k\w+)", m.group(1)) if k in _DTYPE_KEYS)


@lru_cache(maxsize=4096)
def _host_name_tokens(expr: str) -> tuple[tuple[str, str], ...] | None:
    """``"x_" #DTYPE`` -> (("lit", "x_"), ("str", "DTYPE")): string literals, stringized
    parameters, and parameters pasted in as string literals (INAME); None if anything else."""
    out = []
    for tok in re.finditer(r'"((?:[^"\\]|\\.)*)"|#\s*(\w+)|(\w+)|(\S)', expr):
        if tok.group(1) is not None:
            out.append(("lit", tok.group(1)))
        elif tok.group(2) is not None:
            out.append(("str", tok.group(2)))
        elif tok.group(3) is not None:
            out.append(("paste", tok.group(3)))
        else:
            return None
    return tuple(out) or None


def _host_name_parts(expr: str, params: dict[str, str]) -> tuple[str | None, ...] | None:
    """``"x_" #DTYPE`` -> ("x_", hole) or with DTYPE bound ("x_float",)."""
    tokens = _host_name_tokens(expr)
    if tokens is None:
        return None
    parts: list[str | None] = []
    for kind, value in tokens:
        if kind == "lit":
            parts.append(value)
        elif kind == "str":
            parts.append(params.get(value))
        else:
            bound = params.get(value)
            inner = _host_name_tokens(bound) if bound is not None and bound.startswith('"') else None
            # a parameter given string literals (`NAME "_reduction_" "float"`): their text
            parts.append("".join(v for _k, v in inner) if inner and all(k == "lit" for k, _v in inner) else None)
    return _merge(parts)


_OPEN_PAREN = re.compile(r"[ \t]*\(")  # a macro call's parenthesis, after its name
# a call whose arguments hold no bracket or quote (most instantiations: `INSTANTIATE(float, int)`):
# its arguments are its text split at commas, with no bracket matching
_FLAT_CALL = re.compile(r"[ \t]*\(([^()\"'\[\]{}]*)\)")
_PLAIN_KERNEL = re.compile(r"^[ \t]*(?:\[\[\s*kernel\s*\]\]|kernel)\s+void\s+(\w+)\s*\(", re.M)


def _enclosing_define(defines: list, starts: list[int], at: int) -> tuple[int, int, str, list[str]] | None:
    """The ``#define`` (of ``defines``, which begin at ``starts``) whose text holds offset ``at``."""
    k = bisect_right(starts, at) - 1
    d = defines[k] if k >= 0 else None
    return d if d is not None and d[0] <= at < d[1] else None


class MacroInstances:
    """The argument sets a .metal file instantiates its ``host_name``-holding macros with: a
    direct call's, and a call made by another macro's body with that macro's own
    instantiations substituted in. Read on the first question (most files of a tree hold
    sites no pipeline request can name, and are never asked)."""

    def __init__(self, masked: str, defines: list[tuple[int, int, str, list[str]]], macros: list[str]):
        self._masked = masked
        self._defines = defines
        self._starts = [d[0] for d in defines]
        self._params = {d[2]: d[3] for d in defines}
        self._macros = macros  # the macros holding a host_name
        self._table: tuple[dict, set, set] | None = None
        self._resolved: dict[str, tuple[list[tuple[str, ...]], bool]] = {}

    def enclosing(self, at: int) -> tuple[int, int, str, list[str]] | None:
        return _enclosing_define(self._defines, self._starts, at)

    def _read(self) -> tuple[dict, set, set]:
        """(macro -> its calls as (argument texts, the macro whose body makes the call or None),
        the macros named outside their own #define, those named without a call): for the
        macros holding a host_name and the macros whose bodies call those, up the chain."""
        if self._table is not None:
            return self._table
        masked = self._masked
        spans = {d[2]: (d[0], d[1]) for d in self._defines}
        calls: dict[str, list[tuple[tuple[str, ...], str | None]]] = {}
        mentioned: set[str] = set()
        uncalled: set[str] = set()
        todo = sorted(set(self._macros))
        while todo:
            macro = todo.pop()
            if macro in calls:
                continue
            calls[macro] = []
            start, end = spans[macro]
            at = masked.find(macro)  # (a string search a macro: no regex compiled for each file's names)
            while at >= 0:
                after = at + len(macro)
                word = (at == 0 or not (masked[at - 1].isalnum() or masked[at - 1] == "_")) and not (
                    after < len(masked) and (masked[after].isalnum() or masked[after] == "_"))
                if word and not start <= at < end:  # (not the #define line itself)
                    mentioned.add(macro)
                    flat = _FLAT_CALL.match(masked, after)
                    if flat is not None:
                        args: tuple[str, ...] | None = tuple(a.strip() for a in flat.group(1).replace("\\\n", " ").split(","))
                    else:
                        paren = _OPEN_PAREN.match(masked, after)
                        close = match_close(masked, paren.end() - 1) if paren else -1
                        args = tuple(a.strip() for a in _split_top(masked[paren.end() : close].replace("\\\n", " "), ",")) if close > 0 else None
                    if args is not None:
                        outer = self.enclosing(at)
                        calls[macro].append((args, outer[2] if outer is not None else None))
                        if outer is not None and outer[2] not in calls:
                            todo.append(outer[2])
                    else:
                        uncalled.add(macro)  # named without a call (handed to another macro): not followed
                at = masked.find(macro, after)
        self._table = (calls, mentioned, uncalled)
        return self._table

    def of(self, macro: str, depth: int = 0) -> tuple[list[tuple[str, ...]], bool]:
        """Every argument set ``macro`` is instantiated with, and whether some could not be read."""
        if macro in self._resolved:
            return self._resolved[macro]
        calls, _mentioned, uncalled = self._read()
        self._resolved[macro] = ([], True)  # (a cycle: not followed)
        out: list[tuple[str, ...]] = []
        # (a macro no line calls may still be called by a name some `##` pastes together)
        partial = depth > 8 or macro in uncalled or (not calls.get(macro) and "##" in self._masked)
        for args, outer in calls.get(macro, ()) if depth <= 8 else ():
            if outer is None:
                out.append(args)
                continue
            sets, outer_partial = self.of(outer, depth + 1)
            partial |= outer_partial
            for bound in sets:
                binding = dict(zip(self._params[outer], bound))
                out.append(tuple(_substitute(a, binding) for a in args))
        self._resolved[macro] = (out, partial)
        return self._resolved[macro]

    def unused(self, macro: str) -> bool:
        """Whether ``macro`` is instantiated nowhere in the file (no call, no other macro's, no
        ``##`` that could make its name)."""
        return macro not in self._read()[1] and "##" not in self._masked


class HostNameSite(NamedTuple):
    """One ``[[host_name(...)]]`` (or plain kernel) of a .metal file and, for one inside a
    macro, the file's instantiations of that macro: its names, expanded only when a look-up
    needs them (most sites of a tree register elementwise kernels no pipeline request can name)."""

    path: str
    line: int
    expr: str  # the host_name's argument text ("" for a plain kernel, whose name is `plain`)
    params: tuple[str, ...] | None  # its macro's parameters (None: not in a macro)
    macro: str = ""  # that macro's name
    instances: MacroInstances | None = None  # the file's instantiations of its macros
    plain: str = ""

    @property
    def calls(self) -> tuple[tuple[str, ...], ...]:
        """The arguments of each instantiation of its macro in the file."""
        return tuple(self.instances.of(self.macro)[0]) if self.instances is not None else ()

    @property
    def nested(self) -> bool:
        """Whether some instantiation could not be followed (then it also registers a pattern
        with holes)."""
        return self.instances.of(self.macro)[1] if self.instances is not None else False

    @property
    def unused(self) -> bool:
        """Its macro is instantiated nowhere in the file: it registers nothing."""
        return self.instances.unused(self.macro) if self.instances is not None else False

    @property
    def head(self) -> str:
        """The literal text every name of the site begins with."""
        if self.plain:
            return self.plain
        tokens = _host_name_tokens(self.expr) or ()
        out = ""
        for kind, value in tokens:
            if kind != "lit":
                break
            out += value
        return out

    def names(self) -> list[HostName]:
        return _expand(self)


@lru_cache(maxsize=8192)
def _expand(site: HostNameSite) -> list[HostName]:
    if site.plain:
        return [HostName(site.path, site.line, (site.plain,))]
    if site.unused:
        return []
    out = []
    calls = site.calls
    if site.params is None:
        bindings: list[dict[str, str]] = [{}]
    else:
        bindings = []
        variadic = bool(site.params) and site.params[-1] == "..."
        for args in calls:
            if len(args) == len(site.params) or (variadic and len(args) >= len(site.params) - 1):
                bindings.append(dict(zip(site.params, args)))
    for binding in bindings:
        parts = _host_name_parts(site.expr, binding)
        if parts is not None:
            out.append(HostName(site.path, site.line, parts))
    if site.params is not None and (site.nested or not calls) and (parts := _host_name_parts(site.expr, {})) is not None:
        out.append(HostName(site.path, site.line, parts))
    return out


@lru_cache(maxsize=1024)
def host_name_sites(path: str, text: str) -> tuple[HostNameSite, ...]:
    """The registration sites of a .metal file: each ``host_name`` outside a macro; inside a
    macro, with the argument sets the file instantiates it with directly, and as a pattern
    with holes when other macros instantiate it too (or nothing does); and each plain (not
    templated) ``kernel void NAME(``, which the library finds by its own name."""
    if "kernel" not in text:
        return ()
    masked = _blank_comments(text)
    out: list[HostNameSite] = []
    for m in _PLAIN_KERNEL.finditer(masked):
        before = masked[max(0, m.start() - 200) : m.start()].rstrip()
        # (a template's attributes may stand between its `template <...>` and `kernel void`:
        # `[[max_total_threads_per_threadgroup(N)]]` in 2.14's ReduceOps.metal)
        before = re.sub(r"(?:\[\[[^\[\]]*(?:\([^()]*\))?[^\[\]]*\]\]\s*)+$", "", before).rstrip()
        if not before.endswith(">") and "#define" not in masked[masked.rfind("\n", 0, m.start()) + 1 : m.start()]:
            out.append(HostNameSite(path, masked.count("\n", 0, m.start()) + 1, "", None, plain=m.group(1)))
    if "host_name" not in masked:
        return tuple(out)
    defines = [(m.start(), m.end(), m.group(1), [p.strip() for p in m.group(2).split(",")]) for m in _DEFINE.finditer(masked)]
    starts = [d[0] for d in defines]
    found = [(m, _enclosing_define(defines, starts, m.start())) for m in _HOST_NAME.finditer(masked)]
    instances = MacroInstances(masked, defines, [inside[2] for _m, inside in found if inside is not None])
    for m, inside in found:
        close = match_close(masked, m.end() - 1)
        if close < 0:
            continue
        expr = text[m.end() : close].replace("\\\n", " ")
        line = text.count("\n", 0, m.start()) + 1
        if inside is None:
            out.append(HostNameSite(path, line, expr, None))
        else:
            out.append(HostNameSite(path, line, expr, tuple(inside[3]), inside[2], instances))
    return tuple(out)


_MACRO_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|#\s*(\w+)|(\w+)')


def _substitute(arg: str, binding: dict[str, str]) -> str:
    """A macro argument written in an outer macro's body, with that macro's parameters replaced
    by their values (``#P`` stringized; string literals left alone)."""

    def one(m: re.Match) -> str:
        if m.group(1) is not None:
            value = binding.get(m.group(1))
            return f'"{value}"' if value is not None and '"' not in value else m.group(0)
        if m.group(2) is not None:
            return binding.get(m.group(2), m.group(2))
        return m.group(0)

    return _MACRO_TOKEN.sub(one, arg)


def host_names(path: str, text: str) -> tuple[HostName, ...]:
    """Every name a .metal file registers (its sites expanded)."""
    return tuple(n for site in host_name_sites(path, text) for n in site.names())


def string_literals(text: str) -> set[str]:
    """The word-like string literals of a host file (a kernel name or its prefix), but for the
    names it gives the profiler."""
    out = set()
    for m in _STRING.finditer(text):
        value = m.group(1).split("{", 1)[0]  # a format string's literal head: "baz_{}" -> "baz_"
        if len(value) >= 3 and re.fullmatch(r"\w+", value) and "beginProfileKernel" not in text[text.rfind("\n", 0, m.start()) + 1 : m.start()]:
            out.add(value)
    return out

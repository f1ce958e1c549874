"""What ``mpsgen check`` runs: rule selection (ruff-style codes and prefixes) and the
``[tool.mpsgen]`` table of the tree's ``pyproject.toml`` (or a ``.mpsgen.toml`` at the root,
whose keys are top-level and which takes precedence)."""

from __future__ import annotations

import os
from typing import NamedTuple

from mpsgen.check.registry import RULES
from mpsgen.core.errors import BadInput, Location
from mpsgen.tree.source import read_bounded

CONFIG_KEYS = ("select", "ignore", "baseline", "strict", "fail_on")
FAIL_ON = ("error", "warning")


class CheckConfig(NamedTuple):
    select: tuple[str, ...] = ()  # () selects every rule
    ignore: tuple[str, ...] = ()
    baseline: str | None = None  # relative to the tree root
    strict: bool = False
    source: str | None = None  # the file it came from
    fail_on: str | None = None  # "error" or "warning": the least severe finding that fails a run (None: the default)


def split_codes(values: list[str] | tuple[str, ...] | None) -> tuple[str, ...]:
    """``["MPS001,MPS7", "MPS00"]`` -> each code or prefix once, upper-cased."""
    out: list[str] = []
    for v in values or ():
        out += [c.strip().upper() for c in v.split(",") if c.strip()]
    return tuple(dict.fromkeys(out))


def _matching(prefix: str, where: str) -> set[str]:
    if prefix == "ALL":
        return set(RULES)
    hits = {c for c in RULES if c.startswith(prefix)}
    if not hits:
        raise BadInput(f"{where}: {prefix!r} is no rule code or prefix of one; known codes: {', '.join(RULES)} (or ALL).")
    return hits


def selected_codes(select: tuple[str, ...], ignore: tuple[str, ...], where: str = "--select/--ignore") -> frozenset[str]:
    """The rule codes to run: those ``select`` names (all when it is empty) less those ``ignore``
    names. As in ruff, the most specific entry matching a code decides (``--select MPS00
    --ignore MPS007`` runs all but MPS007; ``--ignore MPS --select MPS002`` runs MPS002); at
    equal length ``ignore`` wins."""
    for entry in select + ignore:
        _matching(entry, where)

    def best(entries: tuple[str, ...], code: str) -> int | None:
        return max((0 if e == "ALL" else len(e) for e in entries if e == "ALL" or code.startswith(e)), default=None)

    out = set()
    for code in RULES:
        sel, ign = best(select, code), best(ignore, code)
        if select and sel is None:
            continue
        if ign is not None and (sel is None or ign >= sel):
            continue
        out.add(code)
    return frozenset(out)


def load_config(root: str, *, baseline_typed: bool = False) -> CheckConfig:
    """The check settings of the tree at ``root`` (defaults when it has none). With
    ``baseline_typed`` (--baseline FILE on the command line, which wins) the settings'
    baseline is not used, so where it leads is not judged."""
    own = os.path.join(root, ".mpsgen.toml")
    pyproject = os.path.join(root, "pyproject.toml")
    if os.path.isfile(own):
        data, shown = _read_toml(own), ".mpsgen.toml"
        table = data
    elif os.path.isfile(pyproject) and b"mpsgen" in read_bounded(pyproject, "pyproject.toml"):
        data, shown = _read_toml(pyproject), "pyproject.toml"
        table = data.get("tool", {}).get("mpsgen", {})
        shown += " [tool.mpsgen]"
    else:
        return CheckConfig()
    if not isinstance(table, dict):
        raise BadInput(f"{shown}: the mpsgen settings must be a table.")
    for key in table:
        if key not in CONFIG_KEYS:
            raise BadInput(f"{shown}: unknown key {key!r}; known keys: {', '.join(CONFIG_KEYS)}.")

    def codes(key: str) -> tuple[str, ...]:
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise BadInput(f"{shown}: {key!r} must be a list of rule codes or prefixes, e.g. [\"MPS00\"].")
        out = split_codes(value)
        for c in out:
            _matching(c, f"{shown}: {key}")
        return out

    baseline = table.get("baseline")
    if baseline is not None and not isinstance(baseline, str):
        raise BadInput(f"{shown}: 'baseline' must be a path (relative to the tree root).")
    if baseline is not None and not baseline_typed:
        # a cloned tree's settings may not make the read-only check write outside the tree
        real_root = os.path.realpath(root)
        target = os.path.realpath(os.path.join(root, baseline))
        if target != real_root and not target.startswith(real_root.rstrip(os.sep) + os.sep):
            config_path = own if shown == ".mpsgen.toml" else pyproject
            text = read_bounded(config_path, shown).decode("utf-8", "replace")
            line = next((n for n, ln in enumerate(text.split("\n"), 1) if ln.strip().startswith("baseline")), 0)
            raise BadInput(
                f"{shown.split(' ')[0]}:{line}: baseline = {baseline!r} leads outside the tree ({target}); a tree's "
                "settings may only name a file inside it.",
                hint="Name a path inside the tree, or give --baseline FILE on the command line.",
            )
    strict = table.get("strict", False)
    if not isinstance(strict, bool):
        raise BadInput(f"{shown}: 'strict' must be true or false.")
    fail_on = table.get("fail_on")
    if fail_on is not None and fail_on not in FAIL_ON:
        raise BadInput(f"{shown}: 'fail_on' must be \"error\" (warnings alone do not fail) or \"warning\" (any finding fails).")
    return CheckConfig(codes("select"), codes("ignore"), baseline, strict, shown, fail_on)


def _read_toml(path: str) -> dict:
    name = os.path.basename(path)
    try:
        import tomllib  # (local: check of a tree without mpsgen settings loads no TOML reader)
    except ImportError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef]  # (local: the same, on Python 3.10)
        except ImportError:
            raise BadInput(f"{name}: reading it needs Python 3.11 or the tomli package (pip install tomli).") from None
    text = read_bounded(path, name, limit=1024 * 1024)
    try:
        return tomllib.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise BadInput(f"not valid TOML ({exc}).", location=Location(name), hint="Fix the file, or move it aside.") from None

"""The xfail/skip entries of ``common_mps.py`` as data: which op, which dict, which dtypes."""

from __future__ import annotations

import re

from dataclasses import dataclass

# torch dtype spellings -> canonical names
_ALIASES = {
    "float": "float32",
    "half": "float16",
    "double": "float64",
    "int": "int32",
    "long": "int64",
    "short": "int16",
    "cfloat": "complex64",
    "chalf": "complex32",
    "cdouble": "complex128",
}


def canonical_dtype(expr: str) -> str:
    name = expr.strip().split(".")[-1]
    return "torch." + _ALIASES.get(name, name)


@dataclass(frozen=True)
class XfailEntry:
    """One ``"key": None | [dtypes]`` element of an xfail/skip dict."""

    dict_name: str
    key: str
    dtypes: tuple[str, ...] | None  # None means every dtype
    line: int  # 1-based line of the key


_COMPLEX_SET = re.compile(r"^[ \t]*(\w*COMPLEX\w*)\s*(?::[^=\n]*)?=\s*\{", re.M)
_STRING = re.compile(r"""(?<![\w])["']([\w.]+)["']""")


def complex_supported(text: str) -> set[str]:
    """OpInfo names in common_mps.py's set of ops MPS tests with complex inputs
    (``SUPPORTED_COMPLEX_OPS`` in 2.13; found by shape, not by that name)."""
    found: set[str] = set()
    for m in _COMPLEX_SET.finditer(text):
        depth, i = 0, m.end() - 1
        while i < len(text):
            c = text[i]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        body = "\n".join(line.split("#", 1)[0] for line in text[m.end() : i].split("\n"))
        found.update(_STRING.findall(body))
    return found

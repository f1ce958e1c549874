"""A baseline of known findings: recorded once, then only new findings are reported.

A finding is known by its code, file and the symbols it concerns (or, for the few without
symbols, its message with numbers taken out), so that lines moving above it do not make
it new. Each key is counted: a second finding of the same kind is new.
"""

from __future__ import annotations

import json
import re
from collections import Counter

from mpsgen.check.model import Finding
from mpsgen.core.errors import BadInput
from mpsgen.tree.source import read_bounded

VERSION = 1
_NUMBERS = re.compile(r"\d+")


def finding_key(f: Finding) -> tuple[str, str, str]:
    what = "|".join(f.symbols) if f.symbols else _NUMBERS.sub("#", f.message)
    return (f.code, f.path, what)


def baseline_document(findings: list[Finding]) -> str:
    entries = [dict(zip(("code", "path", "what"), finding_key(f))) for f in findings]
    return json.dumps({"mpsgen_baseline": VERSION, "findings": entries}, indent=1, sort_keys=True) + "\n"


def read_baseline(path: str) -> Counter:
    try:
        data = json.loads(read_bounded(path, "--baseline").decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadInput(f"--baseline {path}: not a baseline mpsgen wrote ({exc}).", hint="Delete it to record a new one.") from None
    if not isinstance(data, dict) or data.get("mpsgen_baseline") != VERSION or not isinstance(data.get("findings"), list):
        raise BadInput(f"--baseline {path}: not a baseline mpsgen wrote (version {VERSION}).", hint="Delete it to record a new one.")
    keys: Counter = Counter()
    for e in data["findings"]:
        if not isinstance(e, dict) or not all(isinstance(e.get(k), str) for k in ("code", "path", "what")):
            raise BadInput(f"--baseline {path}: an entry is not {{code, path, what}}.", hint="Delete it to record a new one.")
        keys[(e["code"], e["path"], e["what"])] += 1
    return keys


def new_findings(findings: list[Finding], known: Counter) -> list[Finding]:
    """The findings beyond those the baseline counts (in order: the first ones are the known)."""
    left = Counter(known)
    out = []
    for f in findings:
        k = finding_key(f)
        if left[k] > 0:
            left[k] -= 1
        else:
            out.append(f)
    return out

"""Render findings as text, JSON, lintrunner LintMessages or GitHub workflow annotations.
Every function returns strings; the CLI prints them."""

from __future__ import annotations

import os

from mpsgen.check.model import ERROR, Finding
from mpsgen.check.registry import RULES

FORMATS = ("text", "json", "lintrunner", "github")


def location(f: Finding) -> str:
    return f"{f.path}:{f.line}:{f.col}" if f.col else f"{f.path}:{f.line}"


def text_lines(findings: list[Finding]) -> list[str]:
    return [f"{location(f)}: {f.code} {f.severity}: {f.message} (mpsgen check --explain {f.code})" for f in findings]


def summary(findings: list[Finding], scope: str) -> str:
    if not findings:
        return f"mpsgen check: no findings ({scope})."
    errors = sum(f.severity == ERROR for f in findings)
    warnings = len(findings) - errors
    parts = [f"{errors} error{'s' if errors != 1 else ''}"] if errors else []
    parts += [f"{warnings} warning{'s' if warnings != 1 else ''}"] if warnings else []
    return f"mpsgen check: {len(findings)} finding{'s' if len(findings) != 1 else ''} ({', '.join(parts)}; {scope})."


def finding_dict(f: Finding) -> dict:
    rule = RULES[f.code]
    return {
        "code": f.code,
        "name": rule.name,
        "severity": f.severity,
        "path": f.path,
        "line": f.line,
        "col": f.col,
        "message": f.message,
        "hint": f"mpsgen check --explain {f.code}",
        "symbols": list(f.symbols),
        "locations": [{"path": path, "line": line} for path, line in f.locations],
    }


def json_document(findings: list[Finding], root: str, notes: tuple[str, ...] = ()) -> str:
    import json  # (local: check's text output loads no json)

    errors = sum(f.severity == ERROR for f in findings)
    return json.dumps(
        {
            "root": str(root),
            "findings": [finding_dict(f) for f in findings],
            "counts": {"error": errors, "warning": len(findings) - errors},
            "notes": list(notes),
        },
        indent=2,
    )


def lintrunner_lines(findings: list[Finding], root: str, fixes: dict[str, tuple[str, str]] | None = None) -> list[str]:
    """One LintMessage (lintrunner's JSON Lines protocol) per finding, paths absolute. ``fixes``
    (path -> whole file before, after) ride on the first finding of their file, as
    ``original``/``replacement``: `lintrunner -a` applies them."""
    import json  # (local: check's text output loads no json)

    out = []
    fixes = dict(fixes or {})
    for f in findings:
        rule = RULES[f.code]
        original, replacement = fixes.pop(f.path, (None, None))
        out.append(
            json.dumps(
                {
                    "path": os.path.join(root, f.path),
                    "line": f.line,
                    "char": f.col or None,
                    "code": f.code,
                    "severity": f.severity,
                    "name": rule.name,
                    "original": original,
                    "replacement": replacement,
                    "description": f"{f.message}. {rule.summary[0].upper()}{rule.summary[1:]}; see `mpsgen check --explain {f.code}`.",
                }
            )
        )
    return out


def _escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def github_lines(findings: list[Finding]) -> list[str]:
    """``::error file=…,line=…,col=…,title=…::message`` workflow commands."""
    out = []
    for f in findings:
        props = [f"file={_escape_property(f.path)}", f"line={f.line}"]
        if f.col:
            props.append(f"col={f.col}")
        props.append(f"title={_escape_property(f'{f.code} {RULES[f.code].name}')}")
        out.append(f"::{f.severity} {','.join(props)}::{_escape_data(f.message + f' (mpsgen check --explain {f.code})')}")
    return out

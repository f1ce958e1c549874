"""The test-list step every planner shares (new-op, migrate, new-kernel): the op's entries in
common_mps.py's lists and its OpInfos' MPS ``DecorateInfo``s that exist only because the kernel
was missing go, and the next steps say which tests the change un-xfails and the one pytest
command that runs exactly them."""

from __future__ import annotations

import re
import textwrap

from mpsgen.edits import common_mps as common_mps_edit
from mpsgen.edits import opinfo as opinfo_edit
from mpsgen.patch.changeset import Changeset
from mpsgen.tree import COMMON_MPS, PytorchTree
from mpsgen.tree.op_facts import OpInfoTargets
from mpsgen.tree.opinfo import mps_decorators
from mpsgen.tree.xfails import read_xfail_entries, unedited_mentions
from mpsgen.tree.source import line_of, line_starts


def edit_test_lists(
    tree: PytorchTree, changeset: Changeset, targets: OpInfoTargets, op: str, covered: set[str], complex_keys: set[str],
    migrating: bool = False,
) -> list[tuple[str, str, str, str]]:
    """Remove the op's entries from common_mps.py's lists and its OpInfos' MPS DecorateInfos
    (those that exist because the kernel was missing); returns the tests un-xfailed, as
    (test class, test, OpInfo test name, dtype or "")."""
    keys = targets.keys
    unxfailed: list[tuple[str, str, str, str]] = []
    common = tree.read_optional(COMMON_MPS)
    if common is not None:
        mentions = unedited_mentions(common.text)
        for line, code in sorted({place for key in keys for place in mentions.get(key, ())}):
            changeset.blockers.append(
                f"{COMMON_MPS}:{line}: `{code}` names {op}'s tests in a form mpsgen does not edit (only the "
                "keys of the XFAIL/SKIP dict literals of mps_ops_modifier): the tests would stay xfailed and turn into "
                "unexpected successes. Remove or cut it by hand, then run again (or --force to write the rest)."
            )
        kept_entries: list[tuple[int, str]] = []
        new_common = common_mps_edit.remove_op_entries(
            common.text, keys, covered, complex_keys, kept_entries, tested_dtypes=targets.dtypes
        )
        changeset.kept.extend(f"{COMMON_MPS}:{line}: {why}" for line, why in kept_entries)
        if new_common != common.text:
            changeset.add(common, new_common)
            unxfailed += consistency_unxfailed(common.text, new_common, targets, complex_keys)
            added = f"; {', '.join(sorted(complex_keys))} joins the complex-supporting ops" if complex_keys else ""
            changeset.notes.append(f"{COMMON_MPS}: removed xfail/skip entries for {', '.join(sorted(keys))}{added}")
    for rel, entry_spans in targets.spans:
        src = tree.read(rel)
        kept_decorators: list[tuple[int, str]] = []
        new_text = opinfo_edit.remove_mps_decorators(
            src.text, entry_spans, kept_decorators, migrating=migrating, op=op
        )
        changeset.kept.extend(f"{rel}:{line}: {why}" for line, why in kept_decorators)
        if new_text != src.text:
            changeset.add(src, new_text)
            changeset.notes.append(f"{rel}: removed MPS DecorateInfo entries")
            names = {start: targets.span_names.get((rel, start), op) for start, _end in entry_spans}
            unxfailed += decorated_tests(src.text, entry_spans, {line for line, _why in kept_decorators}, names)
    return unxfailed


_DECORATED_TEST = re.compile(r"""DecorateInfo\(\s*[^,()]+(?:\([^()]*\))?\s*,\s*['"](\w+)['"]\s*,\s*['"](\w+)['"]""")
# a decorator of a whole test class: DecorateInfo(unittest.expectedFailure, 'TestCommon', device_type='mps')
_DECORATED_CLASS = re.compile(r"""DecorateInfo\(\s*[^,()]+(?:\([^()]*\))?\s*,\s*['"](\w+)['"]\s*(?:,\s*\w+\s*=|\))""")
_TEST_FILES = {
    "TestCommon": "test/test_ops.py", "TestCompositeCompliance": "test/test_ops.py", "TestMathBits": "test/test_ops.py",
    "TestTags": "test/test_ops.py", "TestFakeTensor": "test/test_ops.py", "TestRefsOpsInfo": "test/test_ops.py",
    "TestUnaryUfuncs": "test/test_unary_ufuncs.py", "TestBinaryUfuncs": "test/test_binary_ufuncs.py",
    "TestBwdGradients": "test/test_ops_gradients.py", "TestFwdGradients": "test/test_ops_fwd_gradients.py",
    "TestConsistency": "test/test_mps.py", "TestMPS": "test/test_mps.py",
}


def decorated_tests(
    text: str, spans: list[tuple[int, int]], kept_lines: set[int], names: dict[int, str] | None = None
) -> list[tuple[str, str, str, str]]:
    """(class, test, OpInfo test name, "") of the MPS decorators in ``spans`` of ``text`` that
    the edit removed (all but those starting on ``kept_lines``); ``names``: the test name of
    the OpInfo each span starts (by the offset of its "(")."""
    found = set()
    starts = line_starts(text)
    for start, end in spans:
        for s, _e in mps_decorators(text, start, end):
            m = _DECORATED_TEST.match(text, s) or _DECORATED_CLASS.match(text, s)
            if m and line_of(starts, s) + 1 not in kept_lines:
                test = m.group(2) if m.re is _DECORATED_TEST else ""  # "": every test of the class
                found.add((m.group(1), test, (names or {}).get(start, ""), ""))
    return sorted(found)


def consistency_unxfailed(before: str, after: str, targets: OpInfoTargets, complex_keys: set[str]) -> list[tuple[str, str, str, str]]:
    """What the common_mps.py edit (``before`` -> ``after``) un-xfails: mps_ops_modifier's
    lists decorate test_mps.py's TestConsistency.test_output_match, for every dtype of an entry
    of None, else for the dtypes listed; a key joining SUPPORTED_COMPLEX_OPS un-xfails complex64.
    (class, test, OpInfo test name, dtype or "") each, the dtype as tests name it (float16)."""
    old = {(x.dict_name, x.key): x.dtypes for x in read_xfail_entries(before)}
    new = {(x.dict_name, x.key): x.dtypes for x in read_xfail_entries(after)}
    out = set()
    for (dict_name, key), dtypes in old.items():
        if (dict_name, key) in new and new[(dict_name, key)] == dtypes:
            continue
        name = targets.test_names.get(key, key.replace(".", "_"))
        left = new.get((dict_name, key), ())
        if dtypes is None and left == ():
            out.add(("TestConsistency", "test_output_match", name, ""))
            continue
        gone = (set(targets.dtypes) if dtypes is None else set(dtypes)) - set(left or ())
        if dtypes is None and not targets.dtypes:  # the dtypes it covered are unknown: the whole op
            out.add(("TestConsistency", "test_output_match", name, ""))
        out.update(("TestConsistency", "test_output_match", name, d.rpartition(".")[2]) for d in gone)
    for key in sorted(complex_keys):
        if not _in_complex_set(before, key) and _in_complex_set(after, key):
            out.add(("TestConsistency", "test_output_match", targets.test_names.get(key, key.replace(".", "_")), "complex64"))
    return sorted(out)


def _in_complex_set(text: str, key: str) -> bool:
    m = re.search(r"SUPPORTED_COMPLEX_OPS\s*=\s*\{(.*?)\n\s*\}", text, re.S)
    return bool(m) and re.search(rf"""['"]{re.escape(key)}['"]""", m.group(1)) is not None


# the step listing what the test command runs (companions reads it back for the PR text)
UNXFAILED = "un-xfails on MPS: "


def k_expression(unxfailed: list[tuple[str, str, str, str]]) -> tuple[list[str], str]:
    """(the test files, a pytest ``-k`` expression) selecting exactly the MPS tests of
    ``unxfailed``: each by its name up to the device (``test_out_heaviside_mps``, which
    ``test_out_warning_heaviside_mps_float32`` does not contain), with its dtype when only one
    dtype was un-xfailed, and its class when two classes share the test's name."""
    classes: dict[str, set[str]] = {}
    for cls, test, _name, _dtype in unxfailed:
        classes.setdefault(test, set()).add(cls)
    files: list[str] = []
    terms: list[str] = []
    for cls, test, name, dtype in unxfailed:
        where = _TEST_FILES.get(cls, "test/test_ops.py")
        if where not in files:
            files.append(where)
        if not test:  # every test of the class, for the OpInfo
            terms.append(f"({cls}MPS and {name}_mps)")
            continue
        term = f"{test}_{name}_mps" + (f"_{dtype}" if dtype else "")
        terms.append(f"({cls}MPS and {term})" if len(classes[test]) > 1 else term)
    return sorted(files, key=lambda f: f != "test/test_mps.py"), " or ".join(dict.fromkeys(terms))


def next_steps(unxfailed: list[tuple[str, str, str, str]], tested: list[str]) -> list[str]:
    """The command that builds the change, one pytest command running exactly the tests it
    un-xfails (the op's TestConsistency tests when it un-xfails none: ``tested`` are the
    names of the op's OpInfos), and which tests those are."""
    steps = ["build:  python -m pip install --no-build-isolation -v -e .   (at the top of the checkout)"]
    if not unxfailed:
        terms = " or ".join(f"test_output_match_{name}_mps" for name in tested)
        steps.append(f'test:   python -m pytest test/test_mps.py -v -k "{terms}"   (its MPS consistency tests; the change un-xfails none)')
        return steps
    files, expression = k_expression(unxfailed)
    steps.append(f'test:   python -m pytest {" ".join(files)} -v -k "{expression}"')
    names = list(dict.fromkeys(f"{cls}.{test}" if test else f"{cls} (every test)" for cls, test, _n, _d in unxfailed))
    listed = textwrap.wrap(UNXFAILED + ", ".join(names) + ".", 88, break_long_words=False, break_on_hyphens=False)
    steps.append("        " + ("\n" + " " * 10).join(listed))
    return steps

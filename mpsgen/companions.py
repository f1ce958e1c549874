"""What a change command writes beside the change on request: a standalone shader test of the
functor (``--with-test``) and a PR title and body in PyTorch's style (``--pr-description``).
Both are returned as text; the CLI writes or prints them."""

from __future__ import annotations

from mpsgen.changeset import Changeset
from mpsgen.errors import Refused
from mpsgen.registrations import TORCH_DTYPES, input_dtypes
from mpsgen.render import render
from mpsgen.spec import OpSpec


def shader_test(spec: OpSpec, command: str) -> tuple[str, str]:
    """(file name, text) of ``test_<op>_shader.py`` for the spec's functor."""
    from mpsgen.newop import render_functor

    if spec.functor.is_scaffold:
        raise Refused(
            f"--with-test: {spec.name}_functor is a scaffold (no --expr, --functor-file or spec functor): there is nothing to test yet.",
            hint="Give the functor, then ask for the test.",
        )
    if spec.kind not in ("unary", "binary"):
        raise Refused(f"--with-test covers unary and binary ops; {spec.name} is {spec.kind}.")
    pairs = input_dtypes(spec)
    dtypes = [(i, o, TORCH_DTYPES[i], TORCH_DTYPES[o]) for i, o in pairs if i in TORCH_DTYPES and o in TORCH_DTYPES]
    filename = f"test_{spec.name}_shader.py"
    text = render(
        "tests/shader_test.py.j2", op=spec.name, functor=render_functor(spec), dtypes=dtypes, arity=spec.arity,
        command=command, filename=filename,
    )
    return filename, text + "\n"


def pr_description(spec: OpSpec, changeset: Changeset, command: str) -> str:
    """A PR title and body as PyTorch's MPS PRs write them."""
    verb = "Migrate {op} to Metal" if command == "migrate-from-mpsgraph" else "Add Metal kernel for {op}"
    title = f"[MPS] {verb.format(op=spec.name)}"
    dtypes = ", ".join(dict.fromkeys(TORCH_DTYPES.get(i, i).replace("torch.", "") for i, _o in input_dtypes(spec)))
    lines = [title, ""]
    if command == "migrate-from-mpsgraph":
        lines.append(f"Moves `{spec.name}` from its MPSGraph implementation to a Metal kernel dispatched through its stub, as other elementwise ops already are.")
    else:
        lines.append(f"Adds a Metal kernel for `{spec.name}`, dispatched through its stub, so the op no longer falls back or fails on MPS.")
    lines += ["", f"Dtypes: {dtypes}.", "", "Changes:"]
    lines += [f"- {n}" for n in changeset.notes]
    tests = [s.split("test:", 1)[1].strip() for s in changeset.next_steps if s.startswith("test:")]
    if tests:
        lines += ["", "Test plan:", "```"] + [t.split("   (")[0] for t in tests] + ["```"]
    return "\n".join(lines) + "\n"

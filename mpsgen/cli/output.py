"""What the command line prints and how a command ends on an error: the two consoles (standard
output, standard error), a spinner while work lasts, a diff in colour, and :func:`fail`. Also
what an interrupt needs to know about the run (:data:`APPLYING`, :data:`REPORTED`).

rich is imported on first use, not here: ``--help`` and most errors never print through it."""

from __future__ import annotations

import contextlib
import errno
import sys
from typing import TYPE_CHECKING

import typer

from mpsgen.core.errors import MpsgenError
from mpsgen.core.text import visible

if TYPE_CHECKING:
    from mpsgen.patch.changeset import Changeset


class _Console:
    """A rich Console made on first use (rich costs start-up that --help and errors do not need)."""

    def __init__(self, **options) -> None:
        self._options = options
        self._console = None

    def __getattr__(self, name: str):
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return getattr(self._console, name)

    def print(self, *objects, **options) -> None:
        """Print, a tree's or a user's text made visible (:func:`mpsgen.core.text.visible`): a
        str here, a ``Text`` where it is made. A closed stream is an OSError, as a full one."""
        if (sys.stderr if self._options.get("stderr") else sys.stdout) is None:
            raise OSError(errno.EBADF, "the output is closed")
        self.__getattr__("print")(*(visible(o) if isinstance(o, str) else o for o in objects), **options)


def Text(text: str = "", style: str = ""):  # noqa: N802 (rich's name)
    from rich.text import Text as RichText

    return RichText(visible(text), style=style)


@contextlib.contextmanager
def busy(what: str):
    """Say what is being done on stderr while it lasts, when stderr is a terminal (a spinner
    that leaves no line behind); nothing otherwise, so pre-commit and CI logs stay clean."""
    if sys.stderr is not None and sys.stderr.isatty():
        with err.status(what):
            yield
    else:
        yield


def write_out(text: str) -> None:
    """Standard output for text that may hold a tree's names or paths (not for data a program
    reads back as it is, such as `--patch -`)."""
    if sys.stdout is None:
        raise OSError(errno.EBADF, "standard output is closed")
    sys.stdout.write(visible(text))
    sys.stdout.flush()  # a full output fails here, inside the caller's handling


out = _Console(highlight=False, soft_wrap=True, markup=False)  # user text (paths, ops) is never markup
err = _Console(stderr=True, highlight=False, soft_wrap=True, markup=False)

APPLYING: list[Changeset] = []  # the changes this run applies or applied, for an interrupt that comes after
REPORTED: list[int] = []  # the exit codes of the errors this run has printed


def fail(exc: MpsgenError) -> None:
    REPORTED.append(exc.exit_code)
    try:
        err.print(Text("error: ", style="bold red") + Text(str(exc)))
    except (OSError, ValueError):  # stderr closed or full: the exit status still says it
        pass
    raise typer.Exit(exc.exit_code)


def interrupt_message() -> str:
    done = [c for c in APPLYING if c.applied is not None]
    if done:
        return f"interrupted after the change was applied ({len(done[-1].applied)} file(s) in {done[-1].tree.root}): it is complete."
    return "interrupted; nothing written."


def print_diff(diff: str) -> None:
    """The diff, coloured by line, printed as one text (a print per line cost rich's rendering
    once per line: ~60 ms for a new-op's diff)."""
    text = Text()
    for line in diff.splitlines():
        style = None
        if line.startswith(("+++", "---", "diff --git")):
            style = "bold"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        elif line.startswith("@@"):
            style = "cyan"
        text.append(visible(line), style=style)
        text.append("\n")
    out.print(text, end="")

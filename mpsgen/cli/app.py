"""The command line: the typer app, its commands in the order ``--help`` lists them, and
:func:`main`, which turns an interrupt or an OS error into a message and an exit status. The
commands live by family: :mod:`~mpsgen.cli.ops` (new-op, migrate-from-mpsgraph, new-kernel,
spec validate), :mod:`~mpsgen.cli.onboarding` (explain, coverage, doctor, tutorial, demo),
:mod:`~mpsgen.cli.trial` (try), :mod:`~mpsgen.cli.recover`; ``check`` is :mod:`mpsgen.cli.check`'s
own front end. Each command module imports its heavy machinery inside its commands, for
start-up speed."""

from __future__ import annotations

import functools
import sys

import typer
from typer.core import TyperGroup

from mpsgen.cli import onboarding, ops, recover, trial
from mpsgen.cli.output import APPLYING, REPORTED, err, fail, interrupt_message
from mpsgen.core.errors import blank_value, caused_by_interrupt


class _Group(TyperGroup):
    """The app's command groups: every option of a command they hand out refuses an empty or
    whitespace-only value given on the command line (one rule: :func:`mpsgen.core.errors.blank_value`)."""

    def get_command(self, ctx, cmd_name):
        command = super().get_command(ctx, cmd_name)
        for param in getattr(command, "params", ()):
            if getattr(param, "param_type_name", "") == "option" and not param.is_flag and not hasattr(param, "_mpsgen_raw"):
                param._mpsgen_raw = param.process_value
                param.process_value = functools.partial(_nonblank, param)
        return command


def _nonblank(param, ctx, value):
    """``param``'s processing of ``value``, once the value passed :func:`blank_value`."""
    given = getattr(ctx.get_parameter_source(param.name), "name", "") in ("COMMANDLINE", "ENVIRONMENT")
    if given and (refused := blank_value(param.opts[0], value)) is not None:
        fail(refused)
    return param._mpsgen_raw(ctx, value)


app = typer.Typer(
    cls=_Group,
    add_completion=True,  # --install-completion / --show-completion
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain click help: typer's rich help formatter costs ~60 ms of start-up
    no_args_is_help=True,
    help="Write the boilerplate of a Metal (MPS) operator in a PyTorch checkout, and check MPS dispatch.\n\nExample: mpsgen explain heaviside",
    context_settings={"help_option_names": ["-h", "--help"]},
)
spec_app = typer.Typer(cls=_Group, no_args_is_help=True, rich_markup_mode=None, help="Work with op spec files (schema: specs/README.md).\n\nExample: mpsgen spec validate specs/*.yaml")
app.add_typer(spec_app, name="spec")


# The commands, in the order `mpsgen --help` lists them.
app.command("new-op")(ops.new_op)
app.command("new-kernel")(ops.new_kernel)
app.command("demo")(onboarding.demo)
app.command("migrate-from-mpsgraph")(ops.migrate_from_mpsgraph)


@app.command(
    "check",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []},
    add_help_option=False,
)
def check(ctx: typer.Context) -> None:
    """Check MPS dispatch consistency (read-only unless --fix). Exit 0 clean, 1 findings, 2 could
    not run. `mpsgen check --help` for the options."""
    from mpsgen.cli.check import main as check_main

    raise typer.Exit(check_main(list(ctx.args)))


app.command("explain")(onboarding.explain_cmd)
app.command("coverage")(onboarding.coverage_cmd)
app.command("doctor")(onboarding.doctor_cmd)
app.command("recover")(recover.recover_cmd)
app.command("tutorial")(onboarding.tutorial_cmd)
app.command("try")(trial.try_cmd)
spec_app.command("validate")(ops.spec_validate)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            v = version("mpsgen")
        except PackageNotFoundError:
            v = "unknown (not installed)"
        sys.stdout.write(f"mpsgen {v}\n")
        raise typer.Exit(0)


@app.callback()
def _app_options(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="print the version and exit"),
) -> None:
    """Write the boilerplate of a Metal (MPS) operator in a PyTorch checkout, and check MPS dispatch."""


def main() -> None:
    """Run the app; an interrupt before anything is written ends with a message and exit 130
    (not "Aborted!" or a traceback from an import inside a command)."""
    import signal

    from typer._click import exceptions as click_exceptions

    if hasattr(signal, "SIGXFSZ"):
        # over a file-size limit (ulimit -f) a write should fail (EFBIG, and the staged files are
        # removed) rather than kill the process half-way through staging
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    APPLYING.clear()
    REPORTED.clear()
    try:
        code = app(standalone_mode=False)
        if code == 130 and not REPORTED:  # typer turns a Ctrl-C in a command into exit 130, silently
            err.print(interrupt_message())
    except (KeyboardInterrupt, typer.Abort):
        err.print(interrupt_message())
        sys.exit(130)
    except click_exceptions.ClickException as exc:
        exc.show()
        if isinstance(exc, click_exceptions.NoSuchOption):
            _option_before_its_command(exc)
        sys.exit(exc.exit_code)

    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except RecursionError:
        err.print("error: the input is nested too deeply to read; nothing written.")
        sys.exit(2)
    except OSError as exc:  # the system refused a path (a name too long, a loop of symlinks, ...)
        where = f"{exc.filename}: " if exc.filename else ""
        err.print(f"error: {where}{exc.strerror or exc}; nothing written. Check the path and try again.")
        sys.exit(2)
    except BaseException as exc:
        # a library may wrap an interrupt in its own error (libcst re-raises a KeyboardInterrupt
        # from inside its code generator as an error carrying a dump of the tree)
        if caused_by_interrupt(exc):
            err.print(interrupt_message())
            sys.exit(130)
        raise
    sys.exit(code if isinstance(code, int) else 0)


def _option_before_its_command(exc) -> None:
    """A hint for a command's option given before the command (`mpsgen --root . coverage`):
    where it goes, with the command line as typed put in that order."""
    ctx = getattr(exc, "ctx", None)
    group = getattr(ctx, "command", None)
    if ctx is None or not isinstance(group, TyperGroup):
        return
    args = sys.argv[1:]
    command = next((a for a in args if a in group.list_commands(ctx)), None)
    sub = group.get_command(ctx, command) if command is not None else None
    if sub is None or not any(exc.option_name in getattr(p, "opts", ()) for p in sub.params):
        return
    import shlex  # (local: only this error's hint needs it)

    at = args.index(command)
    fixed = shlex.join(["mpsgen", command, *args[:at], *args[at + 1 :]])
    err.print(f"hint: {exc.option_name} is an option of `mpsgen {command}`: it goes after the command's name, as in `{fixed}`.")


if __name__ == "__main__":
    main()

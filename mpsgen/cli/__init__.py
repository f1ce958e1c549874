"""The command line: parse flags, call one planner or report, print. `check` has its own argparse
front end (`cli.check`) so that it starts without typer."""

"""The `medrag` command: thin click groups over plain functions; errors become one line and exit code 2."""

from __future__ import annotations

import importlib
import sys

import click

from medrag.core.errors import MedragError, schema_missing_message, unreachable_message

USAGE_ERROR = 2

# Each command and the modules that define it, imported only when it runs: `medrag codes` at a shell then loads what
# it needs, not the migrations, Prefect's client or the answer pipeline (about 0.13 s of a cold call's second). The
# eval group gathers subcommands from four modules. The flow commands live with the flows (medrag_flows.commands),
# the top layer, which this package does not import: it names them here. tests/test_cli_imports.py checks this
# against each module's COMMANDS.
_CLI = "medrag.cli"
COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "db": (f"{_CLI}.db",), "sql": (f"{_CLI}.db",),
    "fetch": (f"{_CLI}.ingest",), "load": (f"{_CLI}.ingest",), "ingest": (f"{_CLI}.ingest",),
    "releases": (f"{_CLI}.ingest",),
    "mirror": (f"{_CLI}.mirror",),
    "search": (f"{_CLI}.retrieval",), "embed": (f"{_CLI}.retrieval",),
    "refresh": ("medrag_flows.commands",), "flows": ("medrag_flows.commands",),
    "eval": (f"{_CLI}.evaluation", f"{_CLI}.ask", f"{_CLI}.codes", f"{_CLI}.check"),
    "check": (f"{_CLI}.check",),
    "changes": (f"{_CLI}.changes",),
    "ask": (f"{_CLI}.ask",), "log": (f"{_CLI}.ask",),
    "codes": (f"{_CLI}.codes",),
    "serve": (f"{_CLI}.serve",),
}


class MedragGroup(click.Group):
    """A click group that loads each command's module when the command is asked for, and turns expected failures
    into a one-line message instead of a traceback."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command's name, without importing any of them."""
        return sorted(COMMAND_MODULES)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command of that name, its modules imported now (None for an unknown name: click says so)."""
        modules = COMMAND_MODULES.get(cmd_name)
        if modules is None:
            return None
        # the first module defines the command; the others add their subcommands to it as they are imported
        imported = [importlib.import_module(module) for module in modules]
        return next(command for command in imported[0].COMMANDS if command.name == cmd_name)

    def invoke(self, ctx: click.Context) -> object:
        """Run the command; MedragError, database connection failures and a database without medrag's schema exit
        2 with one line."""
        from sqlalchemy.exc import OperationalError, ProgrammingError

        try:
            return super().invoke(ctx)
        except MedragError as exc:
            click.echo(f"medrag: error: {exc}", err=True)
            sys.exit(USAGE_ERROR)
        except OperationalError as exc:
            click.echo(f"medrag: error: {unreachable_message(exc)}", err=True)
            sys.exit(USAGE_ERROR)
        except ProgrammingError as exc:
            message = schema_missing_message(exc)
            if message is None:
                raise
            click.echo(f"medrag: error: {message}", err=True)
            sys.exit(USAGE_ERROR)


@click.group(cls=MedragGroup)
@click.version_option(package_name="medrag")
@click.pass_context
def main(context: click.Context) -> None:
    """medrag: Medicare reference data in Postgres + pgvector, and answers grounded in it."""
    from medrag.core.progress import reporting, terminal_sink

    # Long stages (download, load, documents, embedding) show progress on stderr: bars on a terminal, a line
    # per tenth elsewhere; stdout keeps only results.
    context.with_resource(reporting(terminal_sink()))


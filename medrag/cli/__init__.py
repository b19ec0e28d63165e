"""The `medrag` command: thin click groups over plain functions; errors become one line and exit code 2."""

from __future__ import annotations

import sys

import click

from medrag.core.errors import MedragError, schema_missing_message, unreachable_message

USAGE_ERROR = 2


class MedragGroup(click.Group):
    """A click group that turns expected failures into a one-line message instead of a traceback."""

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


def _register() -> None:
    from medrag.cli import ask as ask_commands
    from medrag.cli import codes as codes_commands
    from medrag.cli import db as db_commands
    from medrag.cli import evaluation as evaluate_commands
    from medrag.cli import flows as flows_commands
    from medrag.cli import ingest as ingest_commands
    from medrag.cli import mirror as mirror_commands
    from medrag.cli import retrieval as retrieval_commands
    from medrag.cli import serve as serve_commands

    for module in (db_commands, ingest_commands, mirror_commands, retrieval_commands, flows_commands,
                   evaluate_commands, ask_commands, codes_commands, serve_commands):
        for command in module.COMMANDS:
            main.add_command(command)


_register()

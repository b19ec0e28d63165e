"""The `medrag` command imports a command's modules only when that command runs."""

from __future__ import annotations

import importlib
import subprocess
import sys

from click.testing import CliRunner

from medrag.cli import COMMAND_MODULES, main


def test_every_command_is_listed_with_the_module_that_defines_it() -> None:
    modules = {module for listed in COMMAND_MODULES.values() for module in listed}
    defined = {}
    for module in modules:
        for command in importlib.import_module(module).COMMANDS:
            defined[command.name] = module
    assert defined == {name: listed[0] for name, listed in COMMAND_MODULES.items()}


def test_help_lists_every_command_and_the_eval_group_gathers_its_subcommands() -> None:
    runner = CliRunner()
    listed = runner.invoke(main, ["--help"])
    assert listed.exit_code == 0
    for name in COMMAND_MODULES:
        assert f"\n  {name} " in listed.output, name
    evaluations = runner.invoke(main, ["eval", "--help"])
    for name in ("retrieval", "answers", "fit-answers", "codes", "pairs", "fit-confidence", "fit-ranker",
                 "fit-fusion"):
        assert f"\n  {name} " in evaluations.output, name
    unknown = runner.invoke(main, ["codez"])
    assert unknown.exit_code == 2 and "No such command 'codez'" in unknown.output


def test_a_code_lookup_loads_neither_the_migrations_nor_the_flows_nor_the_answer_pipeline() -> None:
    """A coder's `medrag codes TERM` at a shell waits for every module imported: those of other commands stay out."""
    probe = ("import sys\nfrom medrag.cli import main\nmain(['codes', '--help'], standalone_mode=False)\n"
             "print(' '.join(sorted(sys.modules)))")
    loaded = set(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
                 .stdout.split("\n")[-2].split())
    assert "medrag.cli.codes" in loaded  # the probe ran the command
    assert not loaded & {"alembic", "medrag.schema.migrate", "prefect", "medrag_flows", "medrag.answer", "fastapi",
                         "medrag.cli.db", "medrag.cli.ask", "medrag.cli.serve"}

"""The benchmark scripts' own readings: paired.py reads every function definition a revision's SQL holds
(generated.sql's plain CREATE too); codes.py reads the CPU of the server's processes."""

from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path

from medrag.schema.generated_sql import generated_script

BENCHMARKS = Path(__file__).parents[1] / "benchmarks"


def load_script(name: str):
    """A benchmark script as a module (benchmarks/ is no package)."""
    spec = importlib.util.spec_from_file_location(f"{name}_benchmark", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_both_create_forms_are_definitions() -> None:
    paired = load_script("paired")
    script = ("CREATE OR REPLACE FUNCTION medrag_a(x integer)\nRETURNS integer\nLANGUAGE sql\nAS $$\n"
              "    SELECT x\n$$;\n\nDROP FUNCTION IF EXISTS medrag_b();\n"
              "CREATE FUNCTION medrag_b()\nRETURNS integer\nLANGUAGE sql\nAS $$\n    SELECT 30\n$$;\n")
    found = paired.functions(script)
    assert sorted(found) == ["medrag_a", "medrag_b"]
    assert found["medrag_b"].startswith("CREATE FUNCTION medrag_b()") and found["medrag_b"].endswith("$$;")


def test_the_settings_function_is_compared() -> None:
    # a changed setting (leg_limit) changes only medrag_settings(), which generated.sql creates with a plain CREATE
    assert "medrag_settings" in load_script("paired").functions(generated_script())


def test_cpu_of_processes_is_read_from_proc() -> None:
    codes = load_script("codes")
    spent = codes.server_cpu_seconds({os.getpid()})
    started = time.process_time()
    while time.process_time() - started < 0.1:  # CPU of this process between the two readings (10 ms ticks)
        pass
    assert spent is not None and codes.server_cpu_seconds({os.getpid()}) > spent
    # a process that cannot be read (a remote server's, one gone): no figure rather than a wrong one
    assert codes.server_cpu_seconds({os.getpid(), 2**22 + 1}) is None

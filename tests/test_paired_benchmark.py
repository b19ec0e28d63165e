"""benchmarks/paired.py reads every function definition a revision's SQL holds, generated.sql's plain CREATE too."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from medrag.schema.generated_sql import generated_script

PAIRED = Path(__file__).parents[1] / "benchmarks" / "paired.py"


def load_paired():
    """The benchmark script as a module (benchmarks/ is no package)."""
    spec = importlib.util.spec_from_file_location("paired_benchmark", PAIRED)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_both_create_forms_are_definitions() -> None:
    paired = load_paired()
    script = ("CREATE OR REPLACE FUNCTION medrag_a(x integer)\nRETURNS integer\nLANGUAGE sql\nAS $$\n"
              "    SELECT x\n$$;\n\nDROP FUNCTION IF EXISTS medrag_b();\n"
              "CREATE FUNCTION medrag_b()\nRETURNS integer\nLANGUAGE sql\nAS $$\n    SELECT 30\n$$;\n")
    found = paired.functions(script)
    assert sorted(found) == ["medrag_a", "medrag_b"]
    assert found["medrag_b"].startswith("CREATE FUNCTION medrag_b()") and found["medrag_b"].endswith("$$;")


def test_the_settings_function_is_compared() -> None:
    # a changed setting (leg_limit) changes only medrag_settings(), which generated.sql creates with a plain CREATE
    assert "medrag_settings" in load_paired().functions(generated_script())

"""Settings come from the environment: a value medrag cannot use is one line and exit 2, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from medrag.core.config import SettingsError, load_settings


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("MEDRAG_HTTP_TIMEOUT", "abc", "MEDRAG_HTTP_TIMEOUT must be a number, got 'abc'"),
        ("MEDRAG_HTTP_RETRIES", "2.5", "MEDRAG_HTTP_RETRIES must be a whole number, got '2.5'"),
        ("MEDRAG_SOURCE", "bogus", "MEDRAG_SOURCE must be 'cms' or 'mirror:URL_OR_PATH', got 'bogus'"),
        ("MEDRAG_EMBEDDING_BACKEND", "fp8",
         "MEDRAG_EMBEDDING_BACKEND must be one of onnx-int8, onnx, torch, got 'fp8'"),
    ],
)
def test_a_bad_setting_is_one_line_and_exit_2(tmp_path, variable: str, value: str, message: str) -> None:
    env = dict(os.environ) | {"MEDRAG_HOME": str(tmp_path), variable: value}
    env.pop("DATABASE_URL", None)
    result = subprocess.run([sys.executable, "-m", "medrag", "db", "status"], capture_output=True, text=True,
                            env=env, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip() == f"medrag: error: {message}"


def test_settings_read_numbers_and_defaults(monkeypatch) -> None:
    monkeypatch.setenv("MEDRAG_HTTP_TIMEOUT", "2.5")
    monkeypatch.setenv("MEDRAG_ANSWER_MAX_SOURCES", "")
    settings = load_settings()
    assert settings.http_timeout == 2.5 and settings.answer_max_sources == 6
    monkeypatch.setenv("MEDRAG_LLM_TIMEOUT", "soon")
    with pytest.raises(SettingsError, match="MEDRAG_LLM_TIMEOUT must be a number"):
        load_settings()


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("rrf=30", "--set 'rrf=30': no setting 'rrf'; `SELECT * FROM medrag_settings()` lists them"),
        ("rrf_k=thirty", "--set 'rrf_k=thirty': rrf_k takes a whole number"),
        ("fit_weight=high", "--set 'fit_weight=high': fit_weight takes a number"),
    ],
)
def test_a_bad_search_setting_override_is_one_line_and_exit_2(tmp_path, override: str, message: str) -> None:
    env = dict(os.environ) | {"MEDRAG_HOME": str(tmp_path)}
    result = subprocess.run([sys.executable, "-m", "medrag", "eval", "retrieval", "--set", override],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1

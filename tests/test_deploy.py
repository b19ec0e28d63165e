"""The compose stack and .env.example agree with the variables and services the code actually uses."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from medrag.core import config

REPO = Path(__file__).resolve().parents[1]


def load_compose() -> dict:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


def test_compose_names_the_services() -> None:
    services = load_compose()["services"]
    assert set(services) == {"postgres", "prefect-server", "prefect-worker", "vllm", "dask-scheduler", "dask-worker",
                             "medrag-api", "medrag-api-replica", "api-proxy"}
    # the Dask scale-out is opt-in (profile "scale") and runs the worker's own image: code and model
    for name in ("dask-scheduler", "dask-worker"):
        assert services[name]["profiles"] == ["scale"]
        assert services[name]["image"] == services["prefect-worker"]["image"]
    assert "tcp://dask-scheduler:8786" in services["dask-worker"]["command"]
    assert {"MEDRAG_EMBED_SHARDS", "MEDRAG_DASK_ADDRESS"} <= set(services["prefect-worker"]["environment"])
    assert services["postgres"]["image"].startswith("pgvector/pgvector:")
    assert services["vllm"]["image"].startswith("vllm/vllm-openai")
    gpu = services["vllm"]["deploy"]["resources"]["reservations"]["devices"][0]
    assert gpu["driver"] == "nvidia" and "gpu" in gpu["capabilities"]
    assert "${VLLM_MODEL" in " ".join(services["vllm"]["command"])
    command = services["vllm"]["command"]  # compact JSON: no whitespace padding until max_tokens
    assert json.loads(command[command.index("--structured-outputs-config") + 1]) == {
        "backend": "xgrammar", "disable_any_whitespace": True}


def test_the_scale_profile_runs_two_api_replicas_behind_a_pinned_proxy() -> None:
    services = load_compose()["services"]
    replica, proxy = services["medrag-api-replica"], services["api-proxy"]
    assert replica["profiles"] == proxy["profiles"] == ["scale"] and replica["deploy"]["replicas"] == 2
    assert replica["image"] == services["medrag-api"]["image"] and "ports" not in replica
    assert replica["environment"]["MEDRAG_API_RATE_STORE"] == "database"  # one limit for both replicas
    assert "DATABASE_READ_URL" in replica["environment"]
    name, tag = proxy["image"].split(":", 1)
    assert name == "nginx" and re.fullmatch(r"\d+\.\d+\.\d+-alpine", tag)  # an official image, pinned
    assert proxy["depends_on"] == {"medrag-api-replica": {"condition": "service_healthy"}}
    conf = (REPO / "deploy" / "nginx-api.conf").read_text()
    assert "medrag-api-replica:8080" in conf and "proxy_buffering off" in conf and "X-Forwarded-For" in conf


def test_the_api_service_serves_on_health_checked_dependencies() -> None:
    services = load_compose()["services"]
    api = services["medrag-api"]
    assert api["image"] == services["prefect-worker"]["image"]
    assert "medrag serve --host 0.0.0.0 --port 8080" in " ".join(api["command"])
    assert "/health" in " ".join(api["healthcheck"]["test"])
    assert api["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    assert {"DATABASE_URL", "MEDRAG_API_TOKEN", "MEDRAG_API_RATE", "VLLM_BASE_URL"} <= set(api["environment"])
    for name in ("prefect-server", "vllm", "medrag-api", "postgres"):
        assert services[name]["healthcheck"]["test"], name
    assert services["prefect-worker"]["depends_on"]["prefect-server"] == {"condition": "service_healthy"}
    # the vLLM image is pinned (a tag, never latest)
    tag = services["vllm"]["image"].split(":", 1)[1]
    assert "latest" not in tag and re.search(r"v\d+\.\d+", tag)


def test_every_long_running_service_has_a_healthcheck_that_its_process_serves() -> None:
    services = load_compose()["services"]
    for name, service in services.items():
        test = service.get("healthcheck", {}).get("test")
        assert test and test[0] in ("CMD", "CMD-SHELL"), f"{name} has no healthcheck"
    worker = (REPO / "deploy" / "worker-entrypoint.sh").read_text()
    probes = {name: " ".join(service["healthcheck"]["test"]) for name, service in services.items()}
    assert "--with-healthcheck" in worker and ":8080/health" in probes["prefect-worker"]
    for name, port in (("dask-scheduler", "8787"), ("dask-worker", "8789")):
        assert f":{port}" in services[name]["command"] and f":{port}/health" in probes[name]
    assert services["dask-worker"]["depends_on"] == {"dask-scheduler": {"condition": "service_healthy"}}


def test_the_image_installs_the_wheel_with_the_lock_and_runs_unprivileged() -> None:
    dockerfile = (REPO / "deploy" / "Dockerfile").read_text()
    steps = [line for line in dockerfile.splitlines() if line and not line.startswith("#")]
    assert any(line.startswith("RUN pip wheel") for line in steps)
    installs = [line for line in steps if "pip install" in line]
    assert installs and not any(" -e " in line for line in installs)
    assert all("-c /etc/medrag/constraints.txt" in line for line in installs if "torch" not in line)
    user = [line for line in steps if line.startswith("USER ")]
    assert user and user[-1] != "USER root" and steps.index(user[-1]) > steps.index(installs[-1])
    assert "COPY deploy/constraints.txt" in dockerfile


def test_worker_gets_every_connection_variable_the_code_reads() -> None:
    worker_env = load_compose()["services"]["prefect-worker"]["environment"]
    source = (REPO / "medrag" / "core" / "config.py").read_text()
    for variable in ("DATABASE_URL", "MEDRAG_HOME", "MEDRAG_SOURCE", "VLLM_BASE_URL", "VLLM_MODEL"):
        assert f'"{variable}"' in source, f"config.py no longer reads {variable}"
        assert variable in worker_env
    assert worker_env["VLLM_BASE_URL"].startswith("http://vllm:8000")
    assert "@postgres:5432/" in worker_env["DATABASE_URL"]


def test_every_compose_variable_is_documented_in_env_example() -> None:
    compose_text = (REPO / "docker-compose.yml").read_text()
    used = set(re.findall(r"\$\{([A-Z_]+)", compose_text))
    documented = {line.split("=", 1)[0] for line in (REPO / ".env.example").read_text().splitlines() if "=" in line}
    assert used <= documented, f"undocumented: {sorted(used - documented)}"


def test_mirror_source_rewrites_every_cms_url_onto_the_mirror(tmp_path: Path) -> None:
    urls = config.source_urls_for("mirror:http://127.0.0.1:9999/")
    assert set(urls) == set(config.CMS_SOURCE_URLS)
    for name, url in urls.items():
        assert url.startswith("http://127.0.0.1:9999/")
        assert url.endswith(config.CMS_SOURCE_URLS[name].split("cms.gov", 1)[1])
    local = config.source_urls_for(f"mirror:{tmp_path}")
    assert all(url.startswith("file://") for url in local.values())

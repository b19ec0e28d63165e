"""The quarterly deployment on a real `prefect server start`: schedule, the run the scheduler creates, serve, yaml."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest
import yaml
from medrag_flows import (
    DEFAULT_TIMEZONE,
    DEPLOYMENT_NAME,
    ENTRYPOINT,
    FLOW_NAME,
    QUARTERLY_CRON,
    TIMEZONE_ENV,
    WORK_POOL_ENV,
)

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
FULL_NAME = f"{FLOW_NAME}/{DEPLOYMENT_NAME}"
SERVER_STARTUP_SECONDS = 180


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(condition: Callable[[], Any], seconds: float, what: str, process: subprocess.Popen | None = None) -> Any:
    """Poll `condition` until it returns something truthy; fail naming `what` after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            pytest.fail(f"{what}: the process exited with {process.returncode}")
        value = condition()
        if value:
            return value
        time.sleep(0.5)
    pytest.fail(f"{what}: not within {seconds} s")


def stop(process: subprocess.Popen) -> None:
    """SIGTERM the process group (servers start children), then SIGKILL what is left."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def next_quarter_start(now: datetime, timezone: str) -> datetime:
    """06:00 on the next Jan/Apr/Jul/Oct 1 after `now`, on the wall clock of `timezone`."""
    zone = ZoneInfo(timezone)
    local_now = now.astimezone(zone)
    candidates = [datetime(year, month, 1, 6, tzinfo=zone)
                  for year in (local_now.year, local_now.year + 1) for month in (1, 4, 7, 10)]
    return min(candidate for candidate in candidates if candidate > local_now)


@pytest.fixture(scope="module")
def server_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A real `prefect server start --host 127.0.0.1` (SQLite under a temp PREFECT_HOME): the environment to use it."""
    port = free_port()
    base = {name: value for name, value in os.environ.items() if not name.startswith("PREFECT_")}
    env = base | {
        "PREFECT_HOME": str(tmp_path_factory.mktemp("prefect-home")),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS": "1",
        "PREFECT_SERVER_UI_ENABLED": "false",
        "PREFECT_API_URL": f"http://127.0.0.1:{port}/api",
        "PREFECT_RUNNER_POLL_FREQUENCY": "1",
    }
    log = (Path(env["PREFECT_HOME"]) / "server.log").open("wb")
    server = subprocess.Popen([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                              env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        def healthy() -> bool:
            try:
                return httpx.get(f"{env['PREFECT_API_URL']}/health", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(healthy, SERVER_STARTUP_SECONDS, "prefect server /api/health", server)
        yield env
    finally:
        stop(server)
        log.close()


@pytest.fixture(scope="module")
def client(server_env: dict[str, str]) -> Iterator[object]:
    """A Prefect client on that server."""
    import prefect.settings as prefect_settings
    from prefect.client.orchestration import get_client

    with prefect_settings.temporary_settings(updates={prefect_settings.PREFECT_API_URL: server_env["PREFECT_API_URL"]}):
        with get_client(sync_client=True) as prefect_client:
            yield prefect_client


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, env=env, cwd=REPO, capture_output=True, text=True, timeout=180)


def scheduled_runs(client, deployment_id) -> list:
    from prefect.client.schemas.filters import (
        DeploymentFilter,
        DeploymentFilterId,
        FlowRunFilter,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType
    from prefect.client.schemas.sorting import FlowRunSort

    return client.read_flow_runs(
        deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[deployment_id])),
        flow_run_filter=FlowRunFilter(state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.SCHEDULED]))),
        sort=FlowRunSort.EXPECTED_START_TIME_ASC,
    )


def test_prefect_yaml_matches_the_flow_and_the_cli() -> None:
    from prefect.flows import load_flow_from_entrypoint

    config = yaml.safe_load((REPO / "deploy" / "prefect.yaml").read_text())
    (deployment,) = config["deployments"]
    assert deployment["name"] == DEPLOYMENT_NAME and deployment["entrypoint"] == ENTRYPOINT
    (schedule,) = deployment["schedules"]
    assert schedule["cron"] == QUARTERLY_CRON
    assert schedule["timezone"] == f"{{{{ ${TIMEZONE_ENV} }}}}"
    assert deployment["work_pool"]["name"] == f"{{{{ ${WORK_POOL_ENV} }}}}"
    assert config["pull"] == [{"prefect.deployments.steps.set_working_directory": {"directory": "/app"}}]
    flow = load_flow_from_entrypoint(ENTRYPOINT)  # a module: imported from wherever medrag is installed
    assert flow.name == FLOW_NAME
    assert set(deployment["parameters"]) == set(flow.parameters.properties)
    assert "prefect.yaml" in (REPO / "deploy" / "worker-entrypoint.sh").read_text()


def test_deploy_registers_the_quarterly_schedule_and_the_server_schedules_the_next_run(server_env, client) -> None:
    env = {name: value for name, value in server_env.items() if name != TIMEZONE_ENV} | {WORK_POOL_ENV: "test-pool"}
    before = datetime.now(UTC)
    result = run([str(BIN / "medrag"), "flows", "deploy"], env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "work pool test-pool" in result.stdout and DEFAULT_TIMEZONE in result.stdout

    deployment = client.read_deployment_by_name(FULL_NAME)
    (schedule,) = deployment.schedules
    assert (schedule.schedule.cron, schedule.schedule.timezone, schedule.active) == (
        QUARTERLY_CRON, DEFAULT_TIMEZONE, True)
    assert deployment.work_pool_name == "test-pool" and client.read_work_pool("test-pool").type == "process"
    assert deployment.entrypoint == ENTRYPOINT and deployment.tags == ["medrag"]
    assert deployment.global_concurrency_limit.limit == 1
    assert not deployment.pull_steps  # nothing to fetch or change into: the worker imports the installed module

    runs = wait_for(lambda: scheduled_runs(client, deployment.id), 60, "a scheduled run of the deployment")
    assert runs[0].expected_start_time == next_quarter_start(before, DEFAULT_TIMEZONE)
    assert all(run.expected_start_time > before for run in runs)


def assert_a_worker_ran_it(client, deployment_id, prefect: list[str], pool: str, env: dict[str, str],
                           cwd: Path) -> None:
    """A run of the deployment for an unknown source, taken by `prefect worker start --run-once`: it fails in the
    flow's first line, proof enough that the worker imported the entrypoint and ran the flow, refreshing nothing."""
    flow_run = client.create_flow_run_from_deployment(deployment_id, parameters={"sources": ["nowhere"]})
    worker = subprocess.run([*prefect, "worker", "start", "--pool", pool, "--run-once"], cwd=cwd,
                            env=env | {"PREFECT_WORKER_PREFETCH_SECONDS": "60"}, capture_output=True, text=True,
                            timeout=300)
    assert worker.returncode == 0, worker.stdout + worker.stderr

    def final_state() -> object:
        state = client.read_flow_run(flow_run.id).state
        return state if state.is_final() else None

    state = wait_for(final_state, 60, f"the {pool} worker's flow run to finish")
    assert state.is_failed() and "unknown source 'nowhere'" in state.message


def test_a_process_worker_runs_the_deployed_flow(server_env, client) -> None:
    import prefect.settings as prefect_settings
    from medrag_flows.quarterly_refresh import deploy_quarterly

    with prefect_settings.temporary_settings(updates={prefect_settings.PREFECT_API_URL: server_env["PREFECT_API_URL"]}):
        deployment_id = deploy_quarterly("test-pool", timezone=DEFAULT_TIMEZONE)
    assert_a_worker_ran_it(client, deployment_id, [str(BIN / "prefect")], "test-pool", server_env, REPO)


def test_a_worker_runs_the_deployment_from_an_installed_wheel(server_env, client, tmp_path) -> None:
    """medrag as a wheel in a fresh venv, far from any checkout: `medrag flows deploy` from it, and a worker of that
    venv imports the module entrypoint from the wheel and runs the flow."""
    from installed_wheel import build_wheel, install_wheel

    site = install_wheel(build_wheel(tmp_path), tmp_path / "venv")
    python, away = str(tmp_path / "venv" / "bin" / "python"), tmp_path / "elsewhere"
    away.mkdir()
    env = {name: value for name, value in server_env.items() if name != "PYTHONPATH"} | {WORK_POOL_ENV: "wheel-pool"}
    where = subprocess.run([python, "-c", "import medrag_flows.quarterly_refresh as m; print(m.__file__)"], cwd=away,
                           env=env, check=True, capture_output=True, text=True).stdout.strip()
    assert where.startswith(str(site)), where
    deploy = subprocess.run([str(tmp_path / "venv" / "bin" / "medrag"), "flows", "deploy"], cwd=away, env=env,
                            capture_output=True, text=True, timeout=300)
    assert deploy.returncode == 0, deploy.stdout + deploy.stderr
    deployment = client.read_deployment_by_name(FULL_NAME)
    assert deployment.work_pool_name == "wheel-pool" and deployment.entrypoint == ENTRYPOINT
    assert_a_worker_ran_it(client, deployment.id, [python, "-m", "prefect"], "wheel-pool", env, away)


def test_the_failed_refresh_automation_is_created_as_shipped(server_env, client, tmp_path) -> None:
    import prefect.settings as prefect_settings
    from prefect.blocks.notifications import CustomWebhookNotificationBlock

    with prefect_settings.temporary_settings(updates={prefect_settings.PREFECT_API_URL: server_env["PREFECT_API_URL"]}):
        block_id = CustomWebhookNotificationBlock(name="medrag-alerts", url="http://127.0.0.1:9/alert").save(
            "medrag-alerts", overwrite=True)
    shipped = (REPO / "deploy" / "automation-failed-refresh.yaml").read_text()
    ours = tmp_path / "automation.yaml"
    ours.write_text(shipped.replace("00000000-0000-0000-0000-000000000000", str(block_id)))
    created = run([str(BIN / "prefect"), "automation", "create", "--from-file", str(ours)], server_env)
    assert created.returncode == 0, created.stdout + created.stderr
    (automation,) = [item for item in client.read_automations() if item.name == "medrag refresh failed"]
    assert set(automation.trigger.expect) == {"prefect.flow-run.Failed", "prefect.flow-run.Crashed"}
    related = automation.trigger.match_related
    assert dict(related.root if hasattr(related, "root") else related) == {"prefect.resource.role": "flow",
                                                                           "prefect.resource.name": FLOW_NAME}
    assert automation.actions[0].type == "send-notification" and automation.actions[0].block_document_id == block_id


def test_prefect_yaml_deploys_with_prefect_deploy(server_env, client) -> None:
    env = server_env | {WORK_POOL_ENV: "test-pool", TIMEZONE_ENV: "Pacific/Auckland"}
    if not any(pool.name == "test-pool" for pool in client.read_work_pools()):
        run([str(BIN / "medrag"), "flows", "deploy"], env)
    before = datetime.now(UTC)
    result = run([str(BIN / "prefect"), "--no-prompt", "deploy", "--all", "--prefect-file", "deploy/prefect.yaml"], env)
    assert result.returncode == 0, result.stdout + result.stderr

    deployment = client.read_deployment_by_name(FULL_NAME)
    (schedule,) = deployment.schedules
    assert (schedule.schedule.cron, schedule.schedule.timezone) == (QUARTERLY_CRON, "Pacific/Auckland")
    assert deployment.pull_steps == [{"prefect.deployments.steps.set_working_directory": {"directory": "/app"}}]
    assert deployment.work_pool_name == "test-pool" and deployment.entrypoint == ENTRYPOINT
    assert deployment.tags == ["medrag"] and deployment.global_concurrency_limit.limit == 1
    expected = next_quarter_start(before, "Pacific/Auckland")
    wait_for(lambda: [r for r in scheduled_runs(client, deployment.id) if r.expected_start_time == expected], 60,
             f"a run scheduled at {expected.isoformat()}")


def test_serve_creates_the_deployment_and_polls_it(server_env, client) -> None:
    from prefect.exceptions import ObjectNotFound

    try:
        client.delete_deployment(client.read_deployment_by_name(FULL_NAME).id)
    except ObjectNotFound:
        pass
    log = Path(server_env["PREFECT_HOME"]) / "serve.log"
    with log.open("wb") as output:
        serve = subprocess.Popen([str(BIN / "medrag"), "flows", "serve", "--timezone", "Asia/Kolkata"],
                                 env=server_env, cwd=REPO, stdout=output, stderr=subprocess.STDOUT,
                                 start_new_session=True)
    try:
        def served() -> object:
            try:
                deployment = client.read_deployment_by_name(FULL_NAME)
            except ObjectNotFound:
                return None
            return deployment if deployment.status and deployment.status.value == "READY" else None

        deployment = wait_for(served, 90, "the served deployment, polled by its runner", serve)
        (schedule,) = deployment.schedules
        assert (schedule.schedule.cron, schedule.schedule.timezone) == (QUARTERLY_CRON, "Asia/Kolkata")
        assert deployment.work_pool_name is None  # served: this process runs its flow runs
        assert deployment.global_concurrency_limit.limit == 1
    finally:
        stop(serve)
    assert "Traceback" not in log.read_text()


def test_flows_commands_fail_in_one_line_without_a_server_or_with_a_bad_schedule() -> None:
    import prefect.settings as prefect_settings
    from click.testing import CliRunner

    from medrag.cli import main

    closed = f"http://127.0.0.1:{free_port()}/api"
    with prefect_settings.temporary_settings(updates={prefect_settings.PREFECT_API_URL: closed}):
        cases = {
            "no server": (["flows", "deploy"], f"no Prefect server answers at {closed}"),
            "bad timezone": (["flows", "serve", "--timezone", "Mars/Olympus"], "unknown timezone 'Mars/Olympus'"),
            "bad cron": (["flows", "serve", "--cron", "61 * * * *"], "invalid cron '61 * * * *'"),
        }
        for case, (args, message) in cases.items():
            result = CliRunner().invoke(main, args)
            lines = result.stderr.strip().splitlines()
            assert result.exit_code == 2, case
            assert len(lines) == 1 and lines[0].startswith("medrag: error: ") and message in lines[0], case

"""`medrag serve` under load: N concurrent clients on 127.0.0.1, mixed search / codes / ask (extractive).

Run against the indexed database of `make run` (MEDRAG_HOME / DATABASE_URL as for the CLI):
  .venv/bin/python benchmarks/serve.py [--clients 1 8 32] [--seconds 30] [--out docs/results/bench_serve.json]
The server is a real `medrag serve` subprocess; the clients are threads of this process with keep-alive
connections, on the same machine (on 2 cores they compete with the server for CPU). The closed-loop runs send
the next request as soon as the last one answered (no think time: the worst case, where latency grows with the
number of clients once the CPU is busy); the paced runs give each client a mean pause of CODER_THINK_S, as a
person reading the answer does. Per run: requests/s,
p50/p95 per route, errors (goal 0). Then the CLI subprocess path (one `medrag ... --json` process per request,
sequential), per route, and its ratio to one API client: what a user feels from a warm server. --finder-cache off
runs the code finder on every request; on (the default) empties its cache first, so the runs include filling it
(the inputs are drawn at random from the sets: a question is often asked again, as a team's are); warm leaves the
cache as an earlier run left it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from check import postgres_cpu_seconds  # benchmarks/ is the script's folder, first on sys.path
from sqlalchemy import text as sql

from medrag.core.db import get_engine
from medrag.retrieval.evaluation import percentile

REPO = Path(__file__).resolve().parents[1]
# The mix one coder's session sends: mostly lookups, some questions.
MIX = (("search", 0.5), ("codes", 0.35), ("ask", 0.15))
# A person reads an answer before the next lookup: the paced run gives each client this mean pause.
CODER_THINK_S = 2.0
GOAL_SEARCH_P95_MS = 50.0


def read_jsonl(path: Path, field: str) -> list[str]:
    """One field of every line of an eval file."""
    return [json.loads(line)[field] for line in path.read_text().splitlines() if line.strip()]


def workload() -> dict[str, list[str]]:
    """The inputs per route, from the evaluation sets: real questions and terms."""
    return {"search": read_jsonl(REPO / "eval" / "retrieval_dev.jsonl", "question"),
            "codes": read_jsonl(REPO / "eval" / "codes_dev.jsonl", "term"),
            "ask": read_jsonl(REPO / "eval" / "answers_dev.jsonl", "question")}


def request(client: httpx.Client, route: str, text: str) -> httpx.Response:
    """One API call for the route."""
    if route == "search":
        return client.get("/search", params={"q": text})
    if route == "codes":
        return client.get("/codes", params={"term": text})
    return client.post("/ask", json={"question": text, "llm": "extractive"})


def pct(values: list[float]) -> dict[str, float]:
    """p50 / p95 / mean in ms."""
    if not values:
        return {"n": 0}
    return {"n": len(values), "p50_ms": round(percentile(values, 50), 1), "p95_ms": round(percentile(values, 95), 1),
            "mean_ms": round(statistics.fmean(values), 1)}


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and of its children it has waited for (uvicorn's workers), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def cpu_seconds(server_pid: int) -> dict[str, float]:
    """CPU used so far by the server, PostgreSQL and this process (the clients)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {"server": process_cpu_seconds(server_pid), "postgres": postgres_cpu_seconds(),
            "clients": usage.ru_utime + usage.ru_stime}


def load_run(base_url: str, clients: int, seconds: float, inputs: dict[str, list[str]], seed: int,
             routes: tuple[tuple[str, float], ...] = MIX, think_s: float = 0.0,
             server_pid: int | None = None) -> dict[str, object]:
    """`clients` threads sending the mix for `seconds`; latencies per route, errors, requests/s, and with server_pid
    the CPU milliseconds a request cost the server (Python), PostgreSQL and the clients.

    think_s: each client's mean pause between an answer and its next request (exponential; 0: none, the worst case).
    """
    latencies: dict[str, list[float]] = {route: [] for route, _ in routes}
    errors: list[str] = []
    lock = threading.Lock()
    stop_at = time.perf_counter() + seconds

    def run(number: int) -> None:
        rng = random.Random(seed * 1000 + number)
        names, weights = zip(*routes, strict=True)
        with httpx.Client(base_url=base_url, timeout=120) as client:
            while time.perf_counter() < stop_at:
                route = rng.choices(names, weights)[0]
                started = time.perf_counter()
                try:
                    response = request(client, route, rng.choice(inputs[route]))
                    ok = response.status_code == 200
                    problem = f"{route}: {response.status_code} {response.text[:120]}"
                except httpx.HTTPError as error:
                    ok, problem = False, f"{route}: {type(error).__name__} {error}"
                elapsed = (time.perf_counter() - started) * 1000
                with lock:
                    (latencies[route].append(elapsed) if ok else errors.append(problem))
                if think_s:
                    time.sleep(rng.expovariate(1.0 / think_s))

    cpu_before = cpu_seconds(server_pid) if server_pid else {}
    started = time.perf_counter()
    threads = [threading.Thread(target=run, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    done = sum(len(values) for values in latencies.values())
    cpu_after = cpu_seconds(server_pid) if server_pid else {}
    cpu_ms = {name: round((cpu_after[name] - cpu_before[name]) * 1000 / max(done, 1), 1) for name in cpu_after}
    return {"clients": clients, "think_s": think_s, "seconds": round(wall, 1), "requests": done, "errors": len(errors),
            "error_examples": errors[:3], "requests_per_s": round(done / wall, 1),
            "cpu_ms_per_request": cpu_ms, "routes": {route: pct(values) for route, values in latencies.items()}}


def cli_path(inputs: dict[str, list[str]], per_route: int, seed: int) -> dict[str, dict[str, float]]:
    """Wall time of one `medrag <command> --json` subprocess per request, sequential."""
    rng = random.Random(seed)
    commands = {"search": lambda text: ["search", text, "--json"],
                "codes": lambda text: ["codes", text, "--json"],
                "ask": lambda text: ["ask", text, "--json", "--llm", "extractive"]}
    out = {}
    for route, command in commands.items():
        times = []
        for text in rng.sample(inputs[route], per_route):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-m", "medrag", *command(text)], check=True, capture_output=True)
            times.append((time.perf_counter() - started) * 1000)
        out[route] = pct(times)
    return out


def free_port() -> int:
    """A port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(port: int, log_path: Path, finder_cache: bool) -> subprocess.Popen:
    """`medrag serve` on 127.0.0.1:port, returned once /health answers 200.

    finder_cache False runs every session with code_cache_rows 0 (libpq's PGOPTIONS): the code finder each time.
    """
    env = os.environ.copy()
    if not finder_cache:
        env["PGOPTIONS"] = f"{env.get('PGOPTIONS', '')} -c medrag.code_cache_rows=0".strip()
    process = subprocess.Popen([sys.executable, "-m", "medrag", "serve", "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=log_path.open("w"), env=env)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 200:
                return process
        except httpx.TransportError:
            pass
        if process.poll() is not None:
            break
        time.sleep(0.5)
    process.kill()
    raise SystemExit(f"medrag serve did not become healthy; see {log_path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--seconds", type=float, default=30.0, help="Length of each load run.")
    parser.add_argument("--cli-per-route", type=int, default=5, help="CLI subprocesses timed per route.")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "serve.json")
    parser.add_argument("--finder-cache", choices=("on", "warm", "off"), default="on",
                        help="on: the code finder's answers kept, the cache emptied first; warm: kept, the cache as it "
                             "is; off: the finder each time")
    args = parser.parse_args()

    finder_cache = args.finder_cache != "off"
    if args.finder_cache == "on":
        with get_engine().begin() as conn:  # every figure includes filling it
            conn.execute(sql("DELETE FROM medrag_code_cache"))
    inputs = workload()
    port = free_port()
    log_path = Path(tempfile.gettempdir()) / "medrag-bench-serve.log"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    process = start_server(port, log_path, finder_cache)
    base_url = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base_url, timeout=120) as warm:  # first use of each route's caches
            for route in inputs:
                request(warm, route, inputs[route][0])
        pid = process.pid
        runs = [load_run(base_url, clients, args.seconds, inputs, args.seed, server_pid=pid)
                for clients in args.clients]
        search_only = load_run(base_url, 8, args.seconds, inputs, args.seed, routes=(("search", 1.0),),
                               server_pid=pid)
        paced = [load_run(base_url, clients, args.seconds, inputs, args.seed, think_s=CODER_THINK_S, server_pid=pid)
                 for clients in (8, 32)]
        metrics = httpx.get(f"{base_url}/metrics").text
    finally:
        process.terminate()
        process.wait(timeout=30)
    cli = cli_path(inputs, args.cli_per_route, args.seed) if args.cli_per_route else {}

    single = next((run for run in runs if run["clients"] == 1), None)
    ratios = {route: round(cli[route]["p50_ms"] / single["routes"][route]["p50_ms"], 1)
              for route in cli if single and single["routes"][route].get("n")}
    eight = next((run for run in runs if run["clients"] == 8), None)
    report = {
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "seconds_per_run": args.seconds, "finder_cache": args.finder_cache, "mix": dict(MIX), "runs": runs,
        "search_only_8_clients": search_only,
        "paced_runs": paced,
        "cli_subprocess": cli, "cli_over_api_p50": ratios,
        "goal": {"search_p95_ms_at_8_clients": GOAL_SEARCH_P95_MS,
                 "mixed": eight["routes"]["search"].get("p95_ms") if eight else None,
                 "search_only": search_only["routes"]["search"].get("p95_ms"),
                 "paced": paced[0]["routes"]["search"].get("p95_ms")},
        "server_requests_counted": sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
                                       if line.startswith("medrag_http_requests_total{")),
    }
    header = "  ".join(f"{route + ' p50/p95 ms':>22}" for route, _ in MIX)
    print(f"{'clients':>7} {'req/s':>7} {'errors':>6}  {header}  CPU ms a request: server/postgres/clients")
    shown = [*runs, {**search_only, "clients": "8 (search only)"},
             *({**run, "clients": f"{run['clients']} (think {CODER_THINK_S:g} s)"} for run in paced)]
    for run in shown:
        cells = []
        for route, _ in MIX:
            figures = run["routes"].get(route, {})
            cells.append(f"{figures.get('p50_ms', '-'):>10} / {figures.get('p95_ms', '-'):>9}")
        cpu = run["cpu_ms_per_request"]
        print(f"{run['clients']!s:>7} {run['requests_per_s']:>7} {run['errors']:>6}  " + "  ".join(cells)
              + f"  {cpu['server']}/{cpu['postgres']}/{cpu['clients']}")
    if cli:
        print("CLI subprocess p50/p95 ms: " + ", ".join(f"{route} {figures['p50_ms']}/{figures['p95_ms']}"
                                                       for route, figures in cli.items()))
        print("CLI p50 / one API client p50: " + ", ".join(f"{route} {ratio}x" for route, ratio in ratios.items()))
    print(f"goal /search p95 <= {GOAL_SEARCH_P95_MS:.0f} ms at 8 clients: mixed {report['goal']['mixed']} ms, "
          f"search only {report['goal']['search_only']} ms, paced {report['goal']['paced']} ms")
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"written {args.out}")


if __name__ == "__main__":
    main()

"""`medrag serve` under load with the code finder's cache off and on, alternating, in one run of this script.

Run against the indexed database of `make run` (MEDRAG_HOME / DATABASE_URL as for the CLI):
  .venv/bin/python benchmarks/finder_cache.py [--rounds 2] [--seconds 20] [--out docs/results/bench_finder_cache.json]
Each round runs benchmarks/serve.py at 8 clients with `--finder-cache off` (the finder on every request), then `on`
(its cache emptied first, so the run includes filling it). Alternating the two spreads whatever else the machine
does over both. Per run: mixed and search-only requests/s with the CPU milliseconds a request cost the server and
PostgreSQL, /search p50/p95, paced p95, errors; and the median of each figure per setting, with the ratio on / off.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIGURES = ("mixed_req_s", "mixed_server_cpu_ms", "mixed_postgres_cpu_ms", "search_only_req_s", "search_only_p50_ms",
           "search_only_p95_ms", "search_only_server_cpu_ms", "search_only_postgres_cpu_ms", "paced_8_search_p95_ms",
           "paced_32_search_p95_ms", "codes_p50_ms", "errors")


def figures(report: dict) -> dict[str, float]:
    """The figures of one benchmarks/serve.py report this comparison keeps."""
    mixed = next(run for run in report["runs"] if run["clients"] == 8)
    search_only = report["search_only_8_clients"]["routes"]["search"]
    paced = {run["clients"]: run["routes"]["search"] for run in report["paced_runs"]}
    return {"mixed_req_s": mixed["requests_per_s"], "mixed_server_cpu_ms": mixed["cpu_ms_per_request"]["server"],
            "mixed_postgres_cpu_ms": mixed["cpu_ms_per_request"]["postgres"],
            "search_only_req_s": report["search_only_8_clients"]["requests_per_s"],
            "search_only_server_cpu_ms": report["search_only_8_clients"]["cpu_ms_per_request"]["server"],
            "search_only_postgres_cpu_ms": report["search_only_8_clients"]["cpu_ms_per_request"]["postgres"],
            "search_only_p50_ms": search_only["p50_ms"], "search_only_p95_ms": search_only["p95_ms"],
            "paced_8_search_p95_ms": paced[8]["p95_ms"], "paced_32_search_p95_ms": paced[32]["p95_ms"],
            "codes_p50_ms": mixed["routes"]["codes"]["p50_ms"],
            "errors": sum(run["errors"] for run in (*report["runs"], report["search_only_8_clients"],
                                                     *report["paced_runs"]))}


def serve_run(finder_cache: str, seconds: float) -> dict[str, float]:
    """One benchmarks/serve.py run (8 clients, no CLI part) with the cache off or on."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "serve.json"
        subprocess.run([sys.executable, str(REPO / "benchmarks" / "serve.py"), "--clients", "8", "--seconds",
                        str(seconds), "--cli-per-route", "0", "--finder-cache", finder_cache, "--out", str(out)],
                       check=True, stdout=subprocess.DEVNULL)
        return figures(json.loads(out.read_text()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=20.0, help="Length of each load run.")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "finder_cache.json")
    args = parser.parse_args()
    runs = []
    for round_number in range(1, args.rounds + 1):
        for finder_cache in ("off", "on"):
            runs.append({"round": round_number, "finder_cache": finder_cache, **serve_run(finder_cache, args.seconds)})
            print(json.dumps(runs[-1]), flush=True)
    medians = {setting: {name: round(statistics.median(run[name] for run in runs if run["finder_cache"] == setting), 1)
                         for name in FIGURES} for setting in ("off", "on")}
    ratios = {name: round(medians["on"][name] / medians["off"][name], 2) for name in FIGURES if medians["off"][name]}
    report = {"benchmark": f"benchmarks/serve.py --clients 8 --seconds {args.seconds:g}, finder cache off then on, "
                           f"{args.rounds} rounds", "runs": runs, "medians": medians, "on_over_off": ratios}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"{'figure':24} {'off':>9} {'on':>9} {'on/off':>7}")
    for name in FIGURES:
        print(f"{name:24} {medians['off'][name]:>9} {medians['on'][name]:>9} {ratios.get(name, '-')!s:>7}")
    print(f"written {args.out}")


if __name__ == "__main__":
    main()

"""Load throughput on the real CMS files: rows/s per table with COPY (what medrag uses) vs SQLAlchemy executemany.

Run: .venv/bin/python benchmarks/load.py [--cms-dir ../shared/cms] [--out benchmarks/results/load.json]
Uses DATABASE_URL if set, else a throwaway embedded PostgreSQL. Every insert is rolled back.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path

from scratch import scratch_database  # benchmarks/ is the script's folder, first on sys.path
from sqlalchemy import MetaData, Table, create_engine

from medrag.ingest.copy import copy_rows
from medrag.sources import hcpcs, icd10cm, mcd

REPO = Path(__file__).resolve().parents[1]


def parsed_tables(cms_dir: Path) -> dict[str, tuple[list[tuple[str, str]], list[dict], float]]:
    """table -> (columns, rows, parse seconds) for the biggest tables of each source."""
    out = {}
    started = time.perf_counter()
    rows = hcpcs.parse_hcpcs_file(cms_dir / "hcpcs" / "HCPC2019_CONTR_ANWEB.txt")
    out["hcpcs_code"] = (hcpcs.HCPCS_COLUMNS, rows, time.perf_counter() - started)
    started = time.perf_counter()
    tabular = icd10cm.parse_tabular(cms_dir / "icd10cm" / "icd10c-tabular-April-1-2026.xml")
    out["icd10cm_code"] = (icd10cm.ICD10CM_CODE_COLUMNS, tabular.codes, time.perf_counter() - started)
    started = time.perf_counter()
    order = icd10cm.parse_order_file(cms_dir / "icd10cm" / "icd10cm-order-Jan-2021.txt")
    out["icd10cm_order_code"] = (icd10cm.ICD10CM_ORDER_COLUMNS, order, time.perf_counter() - started)
    for table, csv in (("mcd_lcd_x_contractor", "current_lcd/current_lcd_csv/lcd_x_contractor.csv"),
                       ("mcd_lcd_x_hcpc_code", "current_lcd/current_lcd_csv/lcd_x_hcpc_code.csv")):
        spec = mcd.MCD_TABLES[table]
        started = time.perf_counter()
        out[table] = (list(spec.columns), mcd.read_table(cms_dir / "mcd" / csv, spec), time.perf_counter() - started)
    started = time.perf_counter()
    trkg = mcd.read_table(cms_dir / "mcd/ncd/ncd_csv/ncd_trkg.csv", mcd.MCD_TABLES["mcd_ncd_trkg"])
    out["ncd"] = (mcd.NCD_COLUMNS, mcd.ncd_documents(trkg), time.perf_counter() - started)
    return out


def timed_rollback(engine, work: Callable) -> float:
    """Seconds `work(conn)` takes inside a transaction that is then rolled back."""
    with engine.connect() as conn:
        transaction = conn.begin()
        started = time.perf_counter()
        work(conn)
        seconds = time.perf_counter() - started
        transaction.rollback()
    return seconds


def best_of(repeats: int, measure: Callable[[], float]) -> float:
    return min(measure() for _ in range(repeats))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cms-dir", type=Path, default=REPO.parent / "shared" / "cms")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "load.json")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    with scratch_database("medrag_bench_load") as url:
        engine = create_engine(url)
        with engine.begin() as conn:
            release_id = conn.exec_driver_sql(
                "INSERT INTO release (source, label) VALUES ('bench', 'bench') RETURNING id").scalar_one()
        metadata = MetaData()
        results = []
        for table_name, (columns, rows, parse_seconds) in parsed_tables(args.cms_dir).items():
            table = Table(table_name, metadata, autoload_with=engine)
            constants = {"release_id": release_id}

            def copy_work(conn, table_name=table_name, columns=columns, rows=rows, constants=constants):  # noqa: ANN001
                copy_rows(conn, table_name, columns, rows, constants=constants)

            with_release = [{**row, "release_id": release_id} for row in rows]

            def insert_work(conn, table=table, with_release=with_release):  # noqa: ANN001
                conn.execute(table.insert(), with_release)

            copy_seconds = best_of(args.repeats, lambda work=copy_work: timed_rollback(engine, work))
            insert_seconds = best_of(args.repeats, lambda work=insert_work: timed_rollback(engine, work))
            results.append({
                "table": table_name, "rows": len(rows), "parse_rows_per_s": round(len(rows) / parse_seconds),
                "copy_rows_per_s": round(len(rows) / copy_seconds),
                "executemany_rows_per_s": round(len(rows) / insert_seconds),
                "copy_speedup": round(insert_seconds / copy_seconds, 2),
            })
        engine.dispose()

    header = f"{'table':24} {'rows':>8} {'parse r/s':>11} {'COPY r/s':>10} {'executemany r/s':>16} {'COPY x':>7}"
    print(header)
    print("-" * len(header))
    for r in results:
        print(f"{r['table']:24} {r['rows']:>8,} {r['parse_rows_per_s']:>11,} {r['copy_rows_per_s']:>10,} "
              f"{r['executemany_rows_per_s']:>16,} {r['copy_speedup']:>7}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    report = {"benchmark": "load", "machine": platform.machine(), "cpus": os.cpu_count(),
              "repeats": args.repeats, "results": results}
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwritten {args.out}")


if __name__ == "__main__":
    main()

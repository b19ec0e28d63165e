"""The Prefect flows on a slice of the real corpus: first run, an idempotent second run, a failing source.

Embedding the whole corpus on a CPU takes far too long for a test (MCD alone is ~3,800 chunks), so the flows run
against a real HTTP mirror (tests/cms_mirror.py) built from a slice of the real files: the first HCPCS records of
the real record file and the first NCDs / a few LCDs of the real MCD CSVs, each cut at record boundaries so every
byte served is a byte CMS published.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from medrag_flows import FLOW_NAME
from medrag_flows.commands import load_warnings
from medrag_flows.quarterly_refresh import (
    DIGEST_ARTIFACT_KEY,
    _load_summary,
    documents_task,
    embed_task,
    fetch_task,
    load_cache_key,
    load_task,
    quarterly_refresh,
    source_flow,
    worth_retrying,
)
from prefect.states import Failed
from sqlalchemy import text

from medrag.cli import main
from medrag.core.config import load_settings
from medrag.core.errors import MedragError
from medrag.core.registry import spec
from medrag.index.embedding import DocumentEmbedder, embed_pending
from medrag.ingest.fetch import DownloadError
from medrag.ingest.mirror import HCPCS_PAGE, HCPCS_ZIP_LINK_TEXT, ICD10CM_PAGE, write_zip
from medrag.refresh.documents import build_documents
from medrag.sources.hcpcs.release import find_hcpcs_member

HCPCS_RECORDS = 200
# chunks the embedding stage has not given a vector
UNEMBEDDED_CHUNKS = ("SELECT count(*) FROM chunk c "
                     "WHERE NOT EXISTS (SELECT 1 FROM chunk_vector v WHERE v.chunk_id = c.id)")
NCD_RECORDS = 25
LCD_COUNT = 10
HCPCS_2019_ZIP = "2019-Alpha-Numeric-HCPCS-File.zip"
HCPCS_2025_ZIP = "january-2025-alpha-numeric-hcpcs-file.zip"  # the newest release the mirror serves
# The MCD tables every LCD document is assembled from (documents.mcd_drafts): cut to the chosen LCDs.
LCD_CONTEXT_FILES = ("lcd_x_contractor.csv", "lcd_x_hcpc_code.csv", "lcd_x_hcpc_code_group.csv",
                     "lcd_related_ncd_documents.csv")


# -- a slice of the real corpus ------------------------------------------------------------------------------------


def hcpcs_record_prefix(record_file: bytes, records: int) -> bytes:
    """The record file's bytes up to the end of its `records`-th code (disclaimer lines and continuations kept)."""
    kept, starts = [], 0
    for line in io.BytesIO(record_file):
        if line[10:11] in (b"3", b"7"):  # record identification code of a code's first line
            starts += 1
            if starts > records:
                break
        kept.append(line)
    return b"".join(kept)


def csv_records(data: bytes) -> list[tuple[list[str], bytes]]:
    """(fields, exact bytes) of each CSV record, header first; quoted fields may span lines."""
    lines = [line.decode("latin-1") for line in io.BytesIO(data)]  # latin-1: one char per byte, so cuts are exact
    reader = csv.reader(iter(lines))
    records, start = [], 0
    for fields in reader:
        records.append((fields, "".join(lines[start:reader.line_num]).encode("latin-1")))
        start = reader.line_num
    return records


def write_hcpcs_zip(cms_dir: Path, target: Path, records: int, release: str = HCPCS_2019_ZIP) -> Path:
    """A real HCPCS release zip's record file cut after `records` codes, with its text members, as the mirror zips."""
    with zipfile.ZipFile(cms_dir / "hcpcs" / release) as archive:
        names = archive.namelist()
        record_file = find_hcpcs_member(names)
        members = [(record_file, hcpcs_record_prefix(archive.read(record_file), records))]
        members += [(name, archive.read(name)) for name in names
                    if name != record_file and name.lower().endswith(".txt")]
    with target.open("wb") as out:
        write_zip(out, members)
    return target


def hcpcs_page(folder: Path, zip_path: Path, link_text: str) -> str:
    """A file:// page linking one HCPCS release zip the way the CMS quarterly page does."""
    page = folder / f"{zip_path.stem}.html"
    page.write_text(f'<ul><li><a href="{zip_path.name}">{link_text}</a></li></ul>')
    return page.as_uri()


def slice_corpus(cms_dir: Path, dest: Path) -> Path:
    """A corpus folder like cms_dir (links to the real files) with HCPCS, NCDs and LCDs cut down."""
    for source in cms_dir.rglob("*"):
        if source.is_file():
            (dest / source.relative_to(cms_dir)).parent.mkdir(parents=True, exist_ok=True)
            (dest / source.relative_to(cms_dir)).symlink_to(source)
    for release in (HCPCS_2019_ZIP, HCPCS_2025_ZIP):
        (dest / "hcpcs" / release).unlink()
        write_hcpcs_zip(cms_dir, dest / "hcpcs" / release, HCPCS_RECORDS, release)

    ncd_file = Path("mcd/ncd/ncd_csv/ncd_trkg.csv")
    records = csv_records((cms_dir / ncd_file).read_bytes())
    (dest / ncd_file).unlink()
    (dest / ncd_file).write_bytes(b"".join(raw for _fields, raw in records[: NCD_RECORDS + 1]))

    lcd_dir = Path("mcd/current_lcd/current_lcd_csv")
    contractor_rows = csv_records((cms_dir / lcd_dir / LCD_CONTEXT_FILES[0]).read_bytes())[1:]
    chosen = list(dict.fromkeys(fields[0] for fields, _raw in contractor_rows))[:LCD_COUNT]
    for name in LCD_CONTEXT_FILES:
        header, *rows = csv_records((cms_dir / lcd_dir / name).read_bytes())
        (dest / lcd_dir / name).unlink()
        (dest / lcd_dir / name).write_bytes(header[1] + b"".join(raw for fields, raw in rows if fields[0] in chosen))
    return dest


@pytest.fixture(scope="module")
def sliced_mirror(tmp_path_factory: pytest.TempPathFactory, cms_dir: Path) -> Iterator[object]:
    """A real HTTP mirror of the CMS sites serving the sliced corpus."""
    from cms_mirror import start_cms_mirror

    corpus = slice_corpus(cms_dir, tmp_path_factory.mktemp("sliced-corpus"))
    mirror = start_cms_mirror(tmp_path_factory.mktemp("sliced-mirror"), corpus)
    yield mirror
    mirror.stop()


# -- Prefect: a temporary server for the whole session -----------------------------------------------------------


@pytest.fixture(scope="session")
def prefect_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """prefect_test_harness: a temporary Prefect server (SQLite) and result storage in a temp dir."""
    import prefect.settings as prefect_settings
    from prefect.testing.utilities import prefect_test_harness

    updates = {
        prefect_settings.PREFECT_SERVER_ANALYTICS_ENABLED: False,
        prefect_settings.PREFECT_LOCAL_STORAGE_PATH: tmp_path_factory.mktemp("prefect-results"),
    }
    with prefect_settings.temporary_settings(updates=updates), prefect_test_harness(server_startup_timeout=120):
        yield prefect_settings.PREFECT_API_URL.value()


@pytest.fixture(scope="module")
def flow_settings(db_url: str, sliced_mirror, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """The environment the flows read (load_settings inside the flow): the module's database, the sliced mirror."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DATABASE_URL", db_url)
        patch.setenv("MEDRAG_HOME", str(tmp_path_factory.mktemp("medrag-home")))
        patch.setenv("MEDRAG_SOURCE", f"mirror:{sliced_mirror.base_url}")
        patch.setenv("MEDRAG_HTTP_RETRIES", "1")
        patch.setenv("MEDRAG_EMBED_SHARDS", "2")  # the scale-out path: embed tasks mapped over the task runner
        for source in ("IOM", "MCD", "HCPCS", "ICD10CM"):
            patch.delenv(f"MEDRAG_{source}_URL", raising=False)
        yield load_settings()


@pytest.fixture(scope="module")
def first_run(prefect_api: str, flow_settings, engine) -> tuple[dict, float]:
    """quarterly_refresh over MCD + HCPCS into an empty database: (summary, seconds)."""
    started = time.perf_counter()
    summary = quarterly_refresh(sources=["hcpcs", "mcd"])
    return summary, time.perf_counter() - started


def scalar(engine, sql: str, **params):
    with engine.connect() as conn:
        return conn.execute(text(sql), params).scalar()


def documents_by_source(engine) -> dict[str, int]:
    with engine.connect() as conn:
        return dict(conn.execute(text("SELECT source, count(*) FROM document GROUP BY source")).all())


# -- the flow, end to end ------------------------------------------------------------------------------------------


def test_first_run_loads_chunks_and_embeds_every_source(first_run, engine) -> None:
    summary, _seconds = first_run
    assert list(summary["sources"]) == ["mcd", "hcpcs"]  # refresh order, not the order asked for
    assert summary["failed"] == {}
    mcd, hcpcs = summary["sources"]["mcd"], summary["sources"]["hcpcs"]

    assert hcpcs["loads"][0]["status"] == "loaded" and not hcpcs["loads"][0]["cached"]
    assert hcpcs["loads"][0]["rows"]["hcpcs_code"] == HCPCS_RECORDS
    assert mcd["loads"][0]["status"] == "partial"  # lcd.csv is not in the real export
    assert mcd["loads"][0]["rows"]["ncd"] == NCD_RECORDS
    assert all(release["downloaded_bytes"] > 0 for done in (mcd, hcpcs) for release in done["releases"])

    in_database = documents_by_source(engine)
    assert in_database["hcpcs"] == hcpcs["documents"]["documents"]["hcpcs"] == HCPCS_RECORDS
    assert in_database["ncd"] == mcd["documents"]["documents"]["ncd"] == NCD_RECORDS
    assert 0 < in_database["lcd"] == mcd["documents"]["documents"]["lcd"] <= LCD_COUNT
    chunks = scalar(engine, "SELECT count(*) FROM chunk")
    assert chunks == mcd["documents"]["chunks"] + hcpcs["documents"]["chunks"]
    assert scalar(engine, "SELECT count(*) FROM document d WHERE NOT EXISTS "
                          "(SELECT 1 FROM chunk c WHERE c.document_id = d.id)") == 0
    assert scalar(engine, UNEMBEDDED_CHUNKS) == 0
    distinct_texts = scalar(engine, "SELECT count(DISTINCT content_hash) FROM chunk")
    embedded = mcd["embedding"]["embedded"] + hcpcs["embedding"]["embedded"]
    assert embedded + mcd["embedding"]["reused"] + hcpcs["embedding"]["reused"] == chunks
    assert embedded >= distinct_texts
    assert set(mcd["seconds"]) == {"download", "load", "documents", "changes", "embed"}


def test_the_run_publishes_what_changed_as_a_markdown_artifact(first_run) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.client.schemas.sorting import ArtifactSort

    summary, _seconds = first_run
    # one release of each here: the MCD export still dates its own changes; HCPCS says it has nothing to compare
    assert [item["from"] for item in summary["sources"]["mcd"]["changes"]] == [None]
    assert summary["sources"]["hcpcs"]["changes"] == []
    with get_client(sync_client=True) as client:
        (artifact, *_older) = client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[DIGEST_ARTIFACT_KEY])),
            sort=ArtifactSort.CREATED_DESC)
    assert artifact.type == "markdown" and artifact.flow_run_id is not None
    assert artifact.data.startswith("# What changed")
    assert "## Medicare Coverage Database: what export" in artifact.data
    assert "- hcpcs: one loaded release (2025Q1), so no release-to-release changes yet" in artifact.data


def test_the_flow_run_log_carries_each_stages_progress(first_run) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName, LogFilter, LogFilterFlowRunId
    from prefect.client.schemas.sorting import FlowRunSort
    from prefect.logging.handlers import APILogHandler

    APILogHandler().flush()  # run logs reach the API in the background; wait for them
    with get_client(sync_client=True) as client:
        first = client.read_flow_runs(flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=["refresh-hcpcs"])),
                                      sort=FlowRunSort.START_TIME_ASC, limit=1)
        logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[first[0].id])))
    messages = [log.message for log in logs]
    # what the Prefect UI shows for the run: the same count / rate lines the CLI prints on a pipe
    assert any(m.startswith(f"hcpcs: documents: {HCPCS_RECORDS}/{HCPCS_RECORDS} documents (100%), ")
               for m in messages), messages
    assert any(m.startswith("hcpcs 2025Q1: load: ") and " rows, " in m for m in messages), messages
    assert any(m.startswith("hcpcs: embed (shard ") and "(100%)" in m for m in messages), messages


def test_embedding_ran_as_one_mapped_task_per_shard(first_run) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import TaskRunFilter, TaskRunFilterName

    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(task_run_filter=TaskRunFilter(name=TaskRunFilterName(like_="embed after")))
    names = {run.name for run in runs if run.state is not None and run.state.is_completed()}
    assert {"embed after mcd (shard 0 of 2)", "embed after mcd (shard 1 of 2)",
            "embed after hcpcs (shard 0 of 2)", "embed after hcpcs (shard 1 of 2)"} <= names


def test_second_run_embeds_nothing_and_writes_nothing(first_run, engine, sliced_mirror) -> None:
    first_summary, first_seconds = first_run

    def snapshot() -> dict[str, object]:
        with engine.connect() as conn:
            return {
                table: tuple(conn.execute(text(f"SELECT count(*), sum(xmin::text::bigint) FROM {table}")).one())
                for table in ("release", "raw_file", "hcpcs_code", "ncd", "mcd_lcd_x_contractor", "document", "chunk",
                              "medrag_synonym", "medrag_term", "medrag_word")
            }

    before, seen = snapshot(), len(sliced_mirror.requests)
    started = time.perf_counter()
    summary = quarterly_refresh(sources=["mcd", "hcpcs"])
    seconds = time.perf_counter() - started

    assert snapshot() == before
    for source, done in summary["sources"].items():
        assert [release["downloaded_bytes"] for release in done["releases"]] == [0], source
        assert [(load["status"], load["cached"]) for load in done["loads"]] == [("unchanged", True)], source
        assert done["documents"]["skipped"], source
        assert (done["embedding"]["embedded"], done["embedding"]["reused"]) == (0, 0), source
    file_requests = [r for r in sliced_mirror.requests[seen:] if r.path.endswith(".zip")]
    assert file_requests and {r.status for r in file_requests} == {304}
    embedded = sum(done["embedding"]["embedded"] for done in first_summary["sources"].values())
    print(f"\nfirst run {first_seconds:.1f} s ({first_summary['seconds']:.1f} s in the flow, {embedded} chunks "
          f"embedded), second run {seconds:.1f} s: ratio {seconds / first_seconds:.3f}")


WHEELCHAIR = "medrag_find_codes_cached('power wheelchair', ARRAY['HCPCS'], NULL, 5, NULL)"


def test_documents_built_by_an_older_format_are_rebuilt_and_re_embedded(first_run, engine, flow_settings) -> None:
    # a database built before HCPCS chunks were embedded from their own descriptions (migration 0012)
    with engine.begin() as conn:
        conn.execute(text("UPDATE chunk SET embedding_text = NULL, content_hash = 'old ' || content_hash "
                          "WHERE source = 'hcpcs'"))
        conn.execute(text("UPDATE release SET documents_format = NULL WHERE source = 'hcpcs'"))
        conn.execute(text(f"SELECT {WHEELCHAIR}"))  # a user's term, kept on the data before the refresh
    summary = quarterly_refresh(sources=["hcpcs"])
    hcpcs = summary["sources"]["hcpcs"]
    assert summary["code_cache"]["asked"] >= 1  # asked again on the new data: the user's next ask is a lookup
    assert scalar(engine, f"SELECT {WHEELCHAIR} ->> 'cached'") == "true"
    assert [load["status"] for load in hcpcs["loads"]] == ["unchanged"]  # nothing downloaded or loaded again
    assert not hcpcs["documents"]["skipped"]
    assert (hcpcs["embedding"]["embedded"], hcpcs["embedding"]["reused"]) == (HCPCS_RECORDS, 0)
    assert scalar(engine, "SELECT documents_format FROM release WHERE source = 'hcpcs' AND is_current") \
        == spec("hcpcs").documents_format
    with engine.connect() as conn:
        title, body, words, vector = conn.execute(text(
            "SELECT d.title, c.text, c.embedding_text, v.embedding::real[] FROM chunk c "
            "JOIN chunk_vector v ON v.chunk_id = c.id JOIN document d ON d.id = c.document_id "
            "WHERE d.source = 'hcpcs' ORDER BY d.key LIMIT 1")).one()
    assert words.startswith(title) and "Category:" in body and "Category" not in words
    embedder = DocumentEmbedder.for_settings(flow_settings)
    # int8's activation scale is per batch: alone, the text's vector moves a little from the one made in its batch
    from_words, from_body = embedder.encode([words, body])
    stored = np.asarray(vector, dtype=np.float32)
    assert float(stored @ from_words) >= 0.98 and float(stored @ from_words) > float(stored @ from_body)

    # a forced rebuild writes the same chunks again and keeps their vectors: nothing goes back to the model
    label = scalar(engine, "SELECT label FROM release WHERE source = 'hcpcs' AND is_current")
    assert not build_documents(engine, "hcpcs", label, force=True).skipped
    assert scalar(engine, UNEMBEDDED_CHUNKS) == 0
    idle = DocumentEmbedder.for_settings(flow_settings)
    assert embed_pending(engine, idle).embedded == 0 and not idle.is_loaded


def test_refresh_json_prints_the_summary_on_stdout_and_progress_lines_on_stderr(first_run, engine) -> None:
    result = CliRunner().invoke(main, ["refresh", "--source", "hcpcs", "--force", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)  # stdout is the JSON and nothing else
    hcpcs = summary["sources"]["hcpcs"]
    assert set(hcpcs["seconds"]) == {"download", "load", "documents", "changes", "embed"} and summary["seconds"] > 0
    assert hcpcs["embedding"]["embedded"] == 0  # forced, yet every text kept its vector
    assert hcpcs["embedding"]["reused"] == 0 and "onnx-int8" in hcpcs["embedding"]["model"]
    lines = result.stderr.splitlines()
    # stderr, not a terminal: a line per stage, and the long stages' counts, rates and ETAs by tenths
    assert "… hcpcs: discover + download" in lines and "… hcpcs: embed + index" in lines
    assert any(line.startswith("download ") and " MB (100%), " in line for line in lines), lines
    assert any(line.startswith("hcpcs 2025Q1: load: ") and " rows, " in line for line in lines), lines
    documents = [line for line in lines if line.startswith("hcpcs: documents: ")]
    # a stage of under two seconds: only its last line, with its seconds
    assert documents == [line for line in documents if line.startswith(
        f"hcpcs: documents: {HCPCS_RECORDS:,}/{HCPCS_RECORDS:,} documents (100%), ") and line.endswith(" s")]
    assert documents


def test_failing_source_fails_the_run_naming_it_and_the_others_still_load(
    first_run, engine, flow_settings, sliced_mirror, cms_dir: Path, tmp_path: Path, monkeypatch
) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName
    from prefect.client.schemas.sorting import FlowRunSort

    # MCD's page is gone (404) while HCPCS publishes a new, smaller release: MCD fails, HCPCS still loads.
    new_zip = write_hcpcs_zip(cms_dir, tmp_path / "april-2025-alpha-numeric-hcpcs-file.zip", 150, HCPCS_2025_ZIP)
    monkeypatch.setenv("MEDRAG_MCD_URL", sliced_mirror.url("/medicare-coverage-database/no-such-page.aspx"))
    monkeypatch.setenv("MEDRAG_HCPCS_URL", hcpcs_page(tmp_path, new_zip, "April 2025 Alpha-Numeric HCPCS File (ZIP)"))

    result = CliRunner().invoke(main, ["refresh", "--source", "mcd", "--source", "hcpcs"])

    assert result.exit_code == 2, result.output
    error_lines = [line for line in result.stderr.splitlines() if line.startswith("medrag: error:")]
    assert len(error_lines) == 1 and "mcd: " in error_lines[0] and "404" in error_lines[0]
    assert "hcpcs:" not in error_lines[0]
    assert "hcpcs: discover + download" in result.stderr and "hcpcs: embed + index" in result.stderr
    assert "refreshed 1 source(s), 1 failed" in result.stdout

    assert scalar(engine, "SELECT label FROM release WHERE source = 'hcpcs' AND is_current") == "2025Q2"
    assert scalar(engine, "SELECT count(*) FROM hcpcs_code h JOIN release r ON r.id = h.release_id "
                          "WHERE r.source = 'hcpcs' AND r.label = '2025Q2'") == 150
    assert scalar(engine, "SELECT count(*) FROM document WHERE source = 'hcpcs' AND is_current") == 150
    assert scalar(engine, UNEMBEDDED_CHUNKS) == 0
    assert scalar(engine, "SELECT label FROM release WHERE source = 'mcd' AND is_current") is not None

    with get_client(sync_client=True) as client:
        (run,) = client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=[FLOW_NAME])),
                                       sort=FlowRunSort.START_TIME_DESC, limit=1)
    assert run.state.is_failed()
    assert "mcd" in run.state.message and "hcpcs" not in run.state.message


# -- the tasks without Prefect -------------------------------------------------------------------------------------


@pytest.fixture
def scratch_settings(pg_server_url: str, migrated_template: str, cms_dir: Path, tmp_path: Path) -> Iterator[object]:
    """Settings on a fresh database whose HCPCS page (file://) links a 20-code slice of the real release."""
    from conftest import fresh_database

    page = hcpcs_page(tmp_path, write_hcpcs_zip(cms_dir, tmp_path / "hcpcs-20.zip", 20), HCPCS_ZIP_LINK_TEXT)
    for url in fresh_database(pg_server_url, migrated_template):
        settings = load_settings()
        yield dataclasses.replace(settings, database_url=url, home=tmp_path / "home",
                                  source_urls=settings.source_urls | {"hcpcs": page})


def test_task_functions_run_without_prefect(scratch_settings) -> None:
    from medrag.core.db import get_engine

    (fetched,) = fetch_task.fn(scratch_settings, "hcpcs", None, False)
    assert fetched.label == "2019" and fetched.downloaded_bytes > 0
    outcome = load_task.fn(scratch_settings, fetched, False)
    assert (outcome.status, outcome.rows["hcpcs_code"]) == ("loaded", 20)
    assert load_task.fn(scratch_settings, fetched, False).status == "unchanged"
    documents = documents_task.fn(scratch_settings, "hcpcs", False)
    assert documents.documents == {"hcpcs": 20} and documents.chunks >= 20
    stats = embed_task.fn(scratch_settings, "hcpcs")
    assert stats.embedded + stats.reused == documents.chunks
    engine = get_engine(scratch_settings)
    assert scalar(engine, UNEMBEDDED_CHUNKS) == 0
    assert embed_task.fn(scratch_settings, "hcpcs").embedded == 0


def test_load_cache_key_is_database_source_and_files(scratch_settings, db_url: str) -> None:
    (fetched,) = fetch_task.fn(scratch_settings, "hcpcs", None, False)
    key = load_cache_key(None, {"settings": scratch_settings, "fetched": fetched, "force": False})
    assert key == load_cache_key(None, {"settings": scratch_settings, "fetched": fetched, "force": True})
    reordered = dataclasses.replace(fetched, records=list(reversed(fetched.records)), downloaded_bytes=0)
    assert load_cache_key(None, {"settings": scratch_settings, "fetched": reordered}) == key
    other_bytes = dataclasses.replace(
        fetched, records=[dataclasses.replace(fetched.records[0], sha256="0" * 64)])
    assert load_cache_key(None, {"settings": scratch_settings, "fetched": other_bytes}) != key
    other_database = dataclasses.replace(scratch_settings, database_url=db_url)
    assert load_cache_key(None, {"settings": other_database, "fetched": fetched}) != key


def test_fetch_retries_only_what_a_later_attempt_could_fix(scratch_settings, sliced_mirror) -> None:
    def failure_of(source: str, url: str) -> BaseException:
        settings = dataclasses.replace(scratch_settings, http_retries=0,
                                       source_urls=scratch_settings.source_urls | {source: url})
        with pytest.raises(MedragError) as caught:
            fetch_task.fn(settings, source, None, False)
        return caught.value

    missing = failure_of("hcpcs", sliced_mirror.url("/no-such-page"))
    busy = failure_of("hcpcs", sliced_mirror.flaky_url(HCPCS_PAGE, failures=5))
    nothing_found = failure_of("hcpcs", sliced_mirror.url(ICD10CM_PAGE))  # a page without HCPCS links
    assert isinstance(missing, DownloadError) and missing.status == 404
    assert isinstance(busy, DownloadError) and busy.status == 503
    assert not isinstance(nothing_found, DownloadError)

    def retried(error: BaseException) -> bool:
        return worth_retrying(None, None, Failed(data=error))

    assert not retried(missing) and not retried(nothing_found)
    assert retried(busy) and retried(ConnectionResetError("reset by peer"))


def test_embedding_shards_run_on_a_dask_cluster(first_run, engine, flow_settings, monkeypatch) -> None:
    """MEDRAG_DASK_ADDRESS: the per-source flow's tasks (the embedding shards) run on that Dask scheduler."""
    from distributed import LocalCluster

    with engine.begin() as conn:  # forget some vectors so the embedding stage has work to hand out
        forgotten = conn.execute(text(
            "DELETE FROM chunk_vector WHERE chunk_id IN (SELECT id FROM chunk ORDER BY id LIMIT 7)")).rowcount
    with LocalCluster(n_workers=1, processes=False, dashboard_address=None) as cluster:
        monkeypatch.setenv("MEDRAG_DASK_ADDRESS", cluster.scheduler_address)
        per_source = source_flow(load_settings())
        assert type(per_source.task_runner).__name__ == "DaskTaskRunner"
        assert per_source.task_runner.address == cluster.scheduler_address
        summary = per_source("mcd")
        with cluster.get_client() as client:
            # the scheduler saw the work: tasks ran on its worker, not in the flow's own threads
            assert client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.task_prefixes)) > 0
    embedding = summary["embedding"]
    assert embedding["embedded"] + embedding["reused"] == forgotten
    assert scalar(engine, UNEMBEDDED_CHUNKS) == 0


def test_refresh_summary_warns_about_chapter_pdfs_without_sections(scratch_settings, cms_mirror) -> None:
    """The mirror's IOM chapters are stand-in PDFs without numbered sections: the refresh says so, not just "0"."""
    from medrag.core.config import source_urls_for

    settings = dataclasses.replace(scratch_settings, source_urls=source_urls_for(f"mirror:{cms_mirror.base_url}"))
    (fetched,) = fetch_task.fn(settings, "iom", None, False)
    outcome = load_task.fn(settings, fetched, False)
    assert outcome.rows == {"iom_section": 0}
    empty = outcome.notes["chapters_without_sections"]
    assert empty and len(empty) == len(fetched.records)
    summary = {"sources": {"iom": {"loads": [_load_summary(outcome, cached=False)]}}}
    (warning,) = load_warnings(summary)
    assert warning.startswith(f"warning: iom {outcome.label}: {len(empty)} chapter PDF(s) without numbered sections")
    assert all(name in warning for name in empty)
    loaded = {"sources": {"hcpcs": {"loads": [{"label": "2019", "notes": {}}]}}}
    assert load_warnings(loaded) == []

"""The code finder's kept answers (medrag_find_codes_cached, sql/finder_cache.sql): the same call on the same data is
answered from medrag_code_cache with what the finder gave; anything the answer depends on makes a new key."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import create_engine, text

from medrag.cli.evaluation import overridden_engine
from medrag.codes.cache import WarmError, warm_code_cache
from medrag.codes.finder import CodeFinder
from medrag.core.db import get_engine
from medrag.core.tuning import override_in_process
from medrag.retrieval.search import search

CACHED = "SELECT medrag_find_codes_cached(:term, NULL, NULL, 5, NULL)"
FRESH = "SELECT medrag_find_codes(:term, NULL, NULL, 5, NULL)"
KEY = "SELECT medrag_code_cache_key(:term, NULL, NULL, 5, NULL)"


def kept(conn, term: str) -> int:
    return conn.execute(text("SELECT count(*) FROM medrag_code_cache WHERE term = :term"), {"term": term}).scalar_one()


def test_a_term_asked_again_is_answered_from_the_cache_as_the_finder_answered_it(indexed_engine) -> None:
    term = "type 2 diabetes with hyperglycemia"
    with indexed_engine.connect() as conn:
        conn.execute(text("DELETE FROM medrag_code_cache WHERE term = :term"), {"term": term})
        first = conn.execute(text(CACHED), {"term": term}).scalar_one()
        again = conn.execute(text(CACHED), {"term": term}).scalar_one()
        fresh = conn.execute(text(FRESH), {"term": term}).scalar_one()
        assert kept(conn, term) == 1
        conn.rollback()
    assert "cached" not in first and again["cached"] is True
    assert again["results"] == first["results"] == fresh["results"] and first["results"]
    assert again["trace"][0].startswith("cache: kept at ") and again["trace"][1:] == first["trace"]
    assert set(again["timings"]) == {"cache", "total"} and again["timings"]["total"] < first["timings"]["total"]


def test_a_setting_a_release_or_the_synonyms_changed_is_a_new_key_and_the_cache_size_is_not(indexed_engine) -> None:
    term = "chest pain"
    with indexed_engine.connect() as conn:
        key = conn.execute(text(KEY), {"term": term}).scalar_one()
        conn.execute(text("SET LOCAL medrag.code_cache_rows = 7"))
        assert conn.execute(text(KEY), {"term": term}).scalar_one() == key
        conn.execute(text("SET LOCAL medrag.max_rounds = 2"))
        assert conn.execute(text(KEY), {"term": term}).scalar_one() != key
        conn.rollback()
        for change in ("UPDATE release SET loaded_at = loaded_at + interval '1 second' WHERE source = 'hcpcs'",
                       # another generated.sql: the synonym table's rows, which the finder reads as constants
                       "UPDATE medrag_sql_script SET sha256 = md5(sha256) WHERE name = 'generated.sql'",
                       "DELETE FROM chunk_vector WHERE chunk_id = (SELECT max(chunk_id) FROM chunk_vector)"):
            assert conn.execute(text(KEY), {"term": term}).scalar_one() == key
            conn.execute(text(change))
            assert conn.execute(text(KEY), {"term": term}).scalar_one() != key, change
            conn.rollback()
        assert conn.execute(text(KEY.replace("5, NULL", "3, NULL")), {"term": term}).scalar_one() != key


def test_a_read_only_transaction_or_a_size_of_0_keeps_nothing_and_the_oldest_go_past_the_size(indexed_engine) -> None:
    terms = [f"{word} fracture" for word in ("wrist", "ankle", "hip")]
    with indexed_engine.connect() as conn:
        conn.execute(text("SET TRANSACTION READ ONLY"))
        assert conn.execute(text(CACHED), {"term": terms[0]}).scalar_one()["results"]
        assert kept(conn, terms[0]) == 0
        conn.rollback()
        conn.execute(text("SET LOCAL medrag.code_cache_rows = 0"))
        conn.execute(text(CACHED), {"term": terms[0]})
        assert "cached" not in conn.execute(text(CACHED), {"term": terms[0]}).scalar_one()
        assert kept(conn, terms[0]) == 0
        conn.rollback()
        conn.execute(text("LOCK TABLE medrag_code_cache"))  # no other test's answer counts among the newest two
        conn.execute(text("SET LOCAL medrag.code_cache_rows = 2"))
        for term in terms:
            conn.execute(text(CACHED), {"term": term})
        assert [kept(conn, term) for term in terms] == [0, 1, 1]
        assert conn.execute(text("SELECT count(*) FROM medrag_code_cache")).scalar_one() == 2
        conn.rollback()


def test_a_search_keeps_the_finders_answer_for_its_code_slots_and_lists_the_same_again(indexed_engine) -> None:
    query = "power wheelchair"
    with indexed_engine.begin() as conn:
        conn.execute(text("DELETE FROM medrag_code_cache WHERE term = :term"), {"term": query})
    first = search(indexed_engine, query, k=10)
    with indexed_engine.connect() as conn:
        assert kept(conn, query) == 1  # the search committed what it kept
    again = search(indexed_engine, query, k=10)
    assert [(hit.source, hit.key, hit.score, hit.matched) for hit in again.hits] == \
           [(hit.source, hit.key, hit.score, hit.matched) for hit in first.hits]
    assert any(hit.ranked_by == "codes" for hit in first.hits)


def test_the_code_finder_asked_for_its_cache_says_when_it_answered_from_it(indexed_engine) -> None:
    term = "left knee osteoarthritis"
    with indexed_engine.begin() as conn:
        conn.execute(text("DELETE FROM medrag_code_cache WHERE term = :term"), {"term": term})
    with CodeFinder(indexed_engine, cached=True) as finder:
        first, again = finder.find(term), finder.find(term)
    with CodeFinder(indexed_engine) as finder:
        fresh = finder.find(term)
    assert (first.cached, again.cached, fresh.cached) == (False, True, False)
    assert again.results == first.results == fresh.results and again.as_json()["cached"] is True


def test_an_evaluation_runs_without_the_cache_on_an_engine_of_its_own(indexed_engine, monkeypatch) -> None:
    monkeypatch.setenv("DATABASE_URL", indexed_engine.url.render_as_string(hide_password=False))
    engine, settings = overridden_engine(("max_rounds=2",))
    size = text("SELECT code_cache_rows, max_rounds FROM medrag_settings()")
    try:
        with engine.connect() as conn:
            assert tuple(conn.execute(size).one()) == (0, 2)
    finally:
        engine.dispose()
        override_in_process({})
    with get_engine().connect() as conn:  # the process's shared engine keeps the registry's values
        assert tuple(conn.execute(size).one()) == (20000, 3)
    assert settings == {"code_cache_rows": "0", "max_rounds": "2"}


# A new data version as a refresh makes one: one release's row rewritten (moved back after the test).
NEW_VERSION = "UPDATE release SET loaded_at = loaded_at + :by WHERE id = (SELECT min(id) FROM release)"


def stale(conn) -> list[str]:
    return [row.term for row in conn.execute(text("SELECT term FROM medrag_code_cache_stale(1000)"))]


def test_a_warm_up_asks_the_recent_calls_again_on_new_data_so_the_next_search_is_a_lookup(indexed_engine) -> None:
    queries = ["oxygen concentrator", "walker with wheels"]
    with indexed_engine.begin() as conn:
        conn.execute(text("DELETE FROM medrag_code_cache WHERE term = ANY (:terms)"), {"terms": queries})
    first = {query: search(indexed_engine, query, k=10) for query in queries}
    with indexed_engine.connect() as conn:
        assert not set(queries) & set(stale(conn))  # answered on this data already
    try:
        with indexed_engine.begin() as conn:
            conn.execute(text(NEW_VERSION), {"by": timedelta(seconds=1)})
        with indexed_engine.connect() as conn:
            assert set(queries) <= set(stale(conn))
        warmed = warm_code_cache(indexed_engine)
        assert warmed.asked >= len(queries) and warmed.already_kept == 0
        with indexed_engine.connect() as conn:
            assert not set(queries) & set(stale(conn))
            kept_answer = conn.execute(text(
                "SELECT found FROM medrag_code_cache WHERE term = :term ORDER BY id DESC LIMIT 1"),
                {"term": queries[0]}).scalar_one()
        assert kept_answer["trace"] and "cached" not in kept_answer  # the finder's own answer, kept
        for query in queries:
            again = search(indexed_engine, query, k=10)
            assert [(hit.key, hit.score) for hit in again.hits] == [(hit.key, hit.score) for hit in first[query].hits]
        assert warm_code_cache(indexed_engine).asked == 0  # nothing left to ask
    finally:
        with indexed_engine.begin() as conn:
            conn.execute(text(NEW_VERSION), {"by": timedelta(seconds=-1)})


def test_a_warm_up_asks_only_calls_kept_under_the_same_settings_and_no_more_than_asked(indexed_engine) -> None:
    terms = ["knee brace", "hearing aid battery", "glucose test strips"]
    try:
        with indexed_engine.begin() as conn:
            conn.execute(text("DELETE FROM medrag_code_cache WHERE term = ANY (:terms)"), {"terms": terms})
            for term in terms[:2]:
                conn.execute(text(CACHED), {"term": term})
            conn.execute(text("SET LOCAL medrag.max_rounds = 2"))  # another setting: another session's answers
            conn.execute(text(CACHED), {"term": terms[2]})
            conn.execute(text(NEW_VERSION), {"by": timedelta(seconds=1)})
        with indexed_engine.connect() as conn:
            assert stale(conn)[:2] == [terms[1], terms[0]] and terms[2] not in stale(conn)  # newest first
        assert warm_code_cache(indexed_engine, most=1).asked == 1
        with indexed_engine.connect() as conn:
            assert terms[1] not in stale(conn) and terms[0] in stale(conn)
        with pytest.raises(WarmError, match="0 or more"):
            warm_code_cache(indexed_engine, most=-1)
    finally:
        with indexed_engine.begin() as conn:
            conn.execute(text(NEW_VERSION), {"by": timedelta(seconds=-1)})


def test_a_warm_up_that_loses_its_database_says_so_in_one_line(indexed_engine) -> None:
    url = indexed_engine.url.set(port=1, password="x")  # nothing listens there
    broken = create_engine(url)
    with pytest.raises(WarmError) as raised:
        warm_code_cache(broken)
    broken.dispose()
    assert str(raised.value).startswith("code cache warm-up stopped after 0 calls: ")
    assert "\n" not in str(raised.value)


def test_medrag_db_warm_says_what_it_asked_and_refuses_a_negative_count(cli, indexed_engine) -> None:
    try:
        with indexed_engine.begin() as conn:
            conn.execute(text("DELETE FROM medrag_code_cache WHERE term = 'cane with a quad tip'"))
            conn.execute(text(CACHED), {"term": "cane with a quad tip"})
            conn.execute(text(NEW_VERSION), {"by": timedelta(seconds=1)})
        code, out, _ = cli("db", "warm", "--most", "1")
        assert code == 0 and out.startswith("code cache warmed: 1 calls asked again (0 already kept) in ")
    finally:
        with indexed_engine.begin() as conn:
            conn.execute(text(NEW_VERSION), {"by": timedelta(seconds=-1)})
    code, _, err = cli("db", "warm", "--most", "-1")
    assert code == 2 and "-1 is not in the range x>=0" in err

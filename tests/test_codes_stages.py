"""The code finder's six stages (sql/finder*.sql), each called on its own as psql would, and their composition."""

from __future__ import annotations

import json
import re

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from medrag.core import tuning

ANALYSIS = "SELECT medrag_code_analysis(:term, NULL, NULL, 5, false)"
STAGES = {name: f"SELECT {name}(CAST(:state AS jsonb))" for name in
          ("medrag_code_round_lookups", "medrag_code_candidates", "medrag_code_scoring", "medrag_code_reflect",
           "medrag_code_choice")}


def run(conn, stage: str, state: dict) -> dict | list:
    return conn.execute(text(STAGES[stage]), {"state": json.dumps(state)}).scalar_one()


def analysed(conn, term: str) -> dict:
    return conn.execute(text(ANALYSIS), {"term": term}).scalar_one()


def scored(conn, term: str) -> dict:
    """A term's state after the first round's candidates and scoring."""
    return run(conn, "medrag_code_scoring", run(conn, "medrag_code_candidates", analysed(conn, term)))


def test_the_analysis_starts_the_state(indexed_engine) -> None:
    with indexed_engine.connect() as conn:
        state = analysed(conn, "type 2 diabetes, no retinopathy")
        with pytest.raises(DBAPIError, match="the term is empty"):
            analysed(conn, "  ")
    assert state["searched"] == ["ICD-10-CM", "HCPCS"] and state["round"] == 1 and state["done"] is False
    assert set(state["releases"]) == {"ICD-10-CM", "HCPCS"} and state["releases"]["ICD-10-CM"]["is_current"]
    assert [concept["words"] for concept in state["concepts"] if concept["negated"]] == [["retinopathy"]]
    assert any(line.startswith("negation: not retinopathy") for line in state["trace"])
    assert state["changed"] == state["searched"] and state["best"] == {} and state["pool"] == []
    assert state["semantic_systems"] == []  # no embedding given: the vector lookup is not planned


def test_the_candidates_stage_runs_the_rounds_lookups_and_merges_what_they_find(indexed_engine) -> None:
    with indexed_engine.connect() as conn:
        state = analysed(conn, "type 2 diabetes")
        lookups = run(conn, "medrag_code_round_lookups", state)
        found = run(conn, "medrag_code_candidates", state)
        later = run(conn, "medrag_code_candidates", found | {"round": 2, "changed": [], "headers": []})
    legs = {(lookup["leg"], lookup["system"]) for lookup in lookups}
    assert {("words", "ICD-10-CM"), ("fulltext", "ICD-10-CM"), ("words", "HCPCS")} <= legs
    assert not any(leg == "vector" for leg, _ in legs)
    assert any(key.startswith("ICD-10-CM|E11.9|") for key in found["best"])
    assert found["details"]["ICD-10-CM|E11.9"]["billable"] is True
    assert found["trace"][-1].startswith("round 1: ") and found["seq"] > 0
    assert later["done"] is True and later["trace"][-1] == "round 2: nothing new to look up"


def test_the_features_describe_each_candidate_and_the_score_weighs_them_by_the_registry(indexed_engine) -> None:
    """medrag_code_features (stage 3) and medrag_score_codes (stage 4) on the same candidates: without vectors the
    score is (lexical, rank, specificity) weighed and scaled up by 1 / (1 - semantic weight), times the prior."""
    inputs = """SELECT medrag_code_scoring_input(CAST(:s AS jsonb) -> 'best', CAST(:s AS jsonb) -> 'details',
                                              CAST(:s AS jsonb) -> 'similarities', 'ICD-10-CM') AS candidates,
                       medrag_term_json(CAST(:s AS jsonb) -> 'concepts', 'ICD-10-CM', CAST(:s AS jsonb) ->> 'term_text',
                                        false, 1.0, false, (SELECT origin_weights FROM medrag_settings())) AS term,
                       (CAST(:s AS jsonb) -> 'releases' -> 'ICD-10-CM' ->> 'id')::int AS release"""
    with indexed_engine.connect() as conn:
        state = run(conn, "medrag_code_candidates", analysed(conn, "type 2 diabetes"))
        given = conn.execute(text(inputs), {"s": json.dumps(state)}).one()
        arguments = {"r": given.release, "c": json.dumps(given.candidates), "t": json.dumps(given.term)}
        features = {row.code: row for row in conn.execute(text(
            "SELECT * FROM medrag_code_features(:r, ARRAY['diagnosis'], CAST(:c AS jsonb), CAST(:t AS jsonb))"),
            arguments)}
        scores = {row.code: row for row in conn.execute(text(
            "SELECT * FROM medrag_score_codes(:r, ARRAY['diagnosis'], CAST(:c AS jsonb), CAST(:t AS jsonb))"),
            arguments)}
    assert features.keys() == scores.keys() and "E11.9" in features
    e119 = features["E11.9"]
    assert e119.coverage == 1.0 and e119.specificity == 1.0 and not e119.contradicted and e119.semantic is None
    weights = {name: tuning.value(f"{name}_weight") for name in ("lexical", "rank", "specificity", "semantic")}
    checked = 0
    for code, row in features.items():
        if row.exact or row.contradicted or row.coverage < tuning.value("min_coverage"):
            continue
        total = (weights["lexical"] * row.lexical + weights["rank"] * row.rank
                 + weights["specificity"] * row.specificity) / (1.0 - weights["semantic"])
        assert scores[code].score == pytest.approx(min(1.0, total), abs=0.0005), code
        checked += 1
    assert checked > 3
    # the guess is the score without the evidence a code needs: the same weights, for every code holding some of the
    # term that the term does not contradict
    guessed = 0
    for code, row in features.items():
        if row.exact or row.contradicted or row.coverage == 0:
            assert scores[code].guess == 0.0, code
            continue
        total = (weights["lexical"] * row.lexical + weights["rank"] * row.rank
                 + weights["specificity"] * row.specificity) / (1.0 - weights["semantic"])
        assert scores[code].guess == pytest.approx(min(1.0, total), abs=0.0005), code
        guessed += 1
    assert guessed >= checked
    assert max(scores.values(), key=lambda row: row.score).code == "E11.9"


def test_the_scoring_stage_scores_the_pool_with_confidence_and_tier(indexed_engine) -> None:
    with indexed_engine.connect() as conn:
        state = scored(conn, "type 2 diabetes")
    pool = {(item["system"], item["code"]): item for item in state["pool"]}
    assert pool[("ICD-10-CM", "E11.9")]["tier"] == "high"
    assert all({"score", "confidence", "tier", "features", "legs"} <= item.keys() for item in pool.values())
    assert "scoring" in state["timings"]


def test_reflection_corrects_a_misspelling_for_the_next_round_or_says_it_is_enough(indexed_engine) -> None:
    with indexed_engine.connect() as conn:
        misspelt = run(conn, "medrag_code_reflect", scored(conn, "tuberculosus"))
        enough = run(conn, "medrag_code_reflect", scored(conn, "E11.9"))
        capped = conn.execute(text("SET LOCAL medrag.max_rounds = 1")) and run(
            conn, "medrag_code_reflect", scored(conn, "tuberculosus"))
    assert misspelt["round"] == 2 and misspelt["done"] is False and "ICD-10-CM" in misspelt["changed"]
    assert any("tuberculosus -> tuberculosis (ICD-10-CM" in line for line in misspelt["trace"])
    assert any(wording["origin"] == "spelling" for concept in misspelt["concepts"] for wording in concept["wordings"])
    assert enough["done"] is True and enough["trace"][-1] == "reflect: enough"
    assert capped["done"] is True and capped["trace"][-1] == "stop after 1 rounds"


def test_the_choice_lists_each_systems_best_codes_with_their_tiers(indexed_engine) -> None:
    with indexed_engine.connect() as conn:
        state = run(conn, "medrag_code_reflect", scored(conn, "type 2 diabetes"))
        chosen = run(conn, "medrag_code_choice", state | {"top": 2})
    assert chosen["results"][0]["code"] == "E11.9" and chosen["results"][0]["tier"] == "high"
    per_system = {}
    for result in chosen["results"]:
        per_system[result["system"]] = per_system.get(result["system"], 0) + 1
    assert max(per_system.values()) <= 2
    assert chosen["trace"][-1].startswith("consolidate: ") and "total" in chosen["timings"]


@pytest.mark.parametrize("term", ["tuberculosus", "diabetes", "E11.9 and a walker", "knee replacement"])
def test_the_finder_is_its_stages_composed(indexed_engine, term) -> None:
    """medrag_find_codes and the stages called one by one from here give the same codes, confidences and trace."""
    with indexed_engine.connect() as conn:
        whole = conn.execute(text("SELECT medrag_find_codes(:t, NULL, NULL, 5)"), {"t": term}).scalar_one()
        state = analysed(conn, term)
        while True:
            state = run(conn, "medrag_code_candidates", state)
            if state["done"]:
                break
            state = run(conn, "medrag_code_reflect", run(conn, "medrag_code_scoring", state))
            if state["done"]:
                break
        parts = run(conn, "medrag_code_choice", state)

    def timeless(trace: list[str]) -> list[str]:
        return [re.sub(r"[0-9.]+ ms", "N ms", line) for line in trace]

    assert parts["results"] == whole["results"] and timeless(parts["trace"]) == timeless(whole["trace"])


def test_a_codes_ancestors_are_its_prefixes_at_the_category_and_after_the_dot(engine) -> None:
    """medrag_code_ancestors: every code above an ICD-10-CM code that may exist, whatever letter or digit comes second
    in its category (QA0, since FY2026), none for a category or a HCPCS code; inlined into a caller's plan."""
    with engine.connect() as conn:
        ancestors = {code: conn.execute(text("SELECT codes FROM medrag_code_ancestors(:code, :kind)"),
                                        {"code": code, "kind": kind}).scalar_one()
                     for code, kind in (("E11.621", "diagnosis"), ("QA0.0101", "diagnosis"),
                                        ("T36.0X1A", "diagnosis"), ("E11", "diagnosis"), ("E0601", "equipment"))}
        plan = "\n".join(conn.execute(text(
            "EXPLAIN SELECT a.codes FROM (VALUES ('E11.621', 'diagnosis')) AS d(code, kind) "
            "CROSS JOIN LATERAL medrag_code_ancestors(d.code, d.kind) a")).scalars())
    assert ancestors == {"E11.621": ["E11", "E11.6", "E11.62"], "QA0.0101": ["QA0", "QA0.0", "QA0.01", "QA0.010"],
                         "T36.0X1A": ["T36", "T36.0", "T36.0X", "T36.0X1"], "E11": [], "E0601": []}
    assert "medrag_code_ancestors" not in plan  # inlined: no Function Scan on it

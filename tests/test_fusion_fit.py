"""The search's fusion weights, fitted on (phrase, document) pairs the releases give: the published weights are what
its rows fit to, the search reads the kept ones, and the pairs and rows are made from the real releases as
`medrag eval fit-fusion` makes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from medrag.core import tuning
from medrag.core.pairwise import FitError, rows_path
from medrag.retrieval.fusion import FEATURES, KINDS, collect_rows, first_in_group, fit_fusion, read_rows, write_rows
from medrag.retrieval.training import SOURCES, misspelled, pairs_hash, training_pairs

FIT_RESULT = Path(__file__).resolve().parents[1] / "docs" / "results" / "fusion_fit.json"


def test_the_published_fit_is_what_its_rows_fit_to() -> None:
    model = json.loads(FIT_RESULT.read_text())
    refit = fit_fusion(read_rows(rows_path(FIT_RESULT)))
    assert refit["weights"] == model["weights"] and refit["rows"] == model["rows"]
    assert refit["comparisons"] == model["comparisons"] and refit["first_in_group"] == model["first_in_group"]
    assert model["training"]["pairs"] == sum(model["training"]["by_kind"].values())
    assert set(model["training"]["by_kind"]) == set(KINDS) and len(model["training"]["sha256"]) == 64


def test_the_search_reads_the_kept_weights() -> None:
    kept = json.loads(tuning.FUSION_MODEL_FILE.read_text())["weights"] if tuning.FUSION_MODEL_FILE.exists() \
        else tuning.HAND_SET_FUSION
    registry = {setting.name: setting.value for setting in tuning.SEARCH}
    assert {name: registry[name] for name in tuning.FUSION_SETTINGS.values()} == kept
    assert kept["vector_leg_weight"] == 1.0  # the unit the others are scaled to


def test_a_misspelling_is_one_reproducible_slip_in_the_longest_word() -> None:
    slips = {phrase: misspelled(phrase, 7) for phrase in ("colonic hydrotherapy", "hyperbaric oxygen therapy",
                                                          "blood glucose monitor", "continuous passive motion")}
    assert slips == {phrase: misspelled(phrase, 7) for phrase in slips}
    for phrase, slip in slips.items():
        assert slip is not None and slip != phrase
        before, after = phrase.split(), slip.split()
        changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
        assert len(changed) == 1 and len(changed[0][0]) == max(len(word) for word in before)
        assert abs(len(changed[0][0]) - len(changed[0][1])) <= 1
    assert misspelled("knee brace", 7) is None  # no word of six letters


def test_rows_round_trip_and_the_legs_are_scaled_to_the_vector_leg(tmp_path) -> None:
    # the pair's document leads on the text leg, its rival on the vector leg by less
    rows = []
    for pair in range(30):
        rows += [{"pair": pair, "kind": "index", "source": "ncd", "key": "1", "vector": 0.04, "text": 0.05,
                  "trigram": 0.0, "fit": 0.0, "label": 1},
                 {"pair": pair, "kind": "index", "source": "ncd", "key": "2", "vector": 0.045, "text": 0.03,
                  "trigram": 0.0, "fit": 0.0, "label": 0},
                 {"pair": pair, "kind": "index", "source": "ncd", "key": "3", "vector": 0.02, "text": 0.02,
                  "trigram": 0.0, "fit": 0.0, "label": 0}]
    path = tmp_path / "rows.csv.gz"
    write_rows(rows, path)
    assert read_rows(path) == rows
    model = fit_fusion(rows)
    assert model["weights"]["vector_leg_weight"] == 1.0 and model["weights"]["text_leg_weight"] > 1.0
    assert model["first_in_group"] == {"hand_set": 1.0, "fitted": 1.0}
    assert first_in_group(rows, {**tuning.HAND_SET_FUSION, "text_leg_weight": 0.0}) == 0.0
    with pytest.raises(FitError, match="vector leg does not separate"):
        fit_fusion([{**row, "vector": -row["vector"]} for row in rows])
    with pytest.raises(FitError, match="are the current releases loaded and indexed"):
        fit_fusion([])  # a database without releases gives no pairs: a MedragError, one line from the CLI


def test_pairs_come_from_the_releases_in_a_fixed_order(indexed_engine) -> None:
    with indexed_engine.connect() as conn:
        first, again = training_pairs(conn, 6, 7, KINDS), training_pairs(conn, 6, 7, KINDS)
        other = training_pairs(conn, 6, 8, KINDS)
    assert first == again and pairs_hash(first) != pairs_hash(other)
    assert {pair.kind for pair in first} == set(KINDS) and len(first) == 6 * len(KINDS)
    assert all(pair.source == SOURCES[pair.kind] for pair in first if pair.kind != "misspelled")
    originals = {(pair.code, pair.source) for pair in first if pair.kind != "misspelled"}
    assert all((pair.code, pair.source) in originals for pair in first if pair.kind == "misspelled")


def test_each_phrase_becomes_rows_of_its_documents_group(indexed_engine) -> None:
    from medrag.cli.retrieval import query_embedder

    with indexed_engine.connect() as conn:
        pairs = training_pairs(conn, 4, 7, ("ncd_keyword",))
        rows = collect_rows(conn, query_embedder(), pairs)
    labelled = [row for row in rows if row["label"]]
    assert len(labelled) >= len(pairs) // 2  # an NCD's keyword mostly finds its NCD
    assert all(row["source"] == pairs[row["pair"]].source and row["key"] == pairs[row["pair"]].code
               for row in labelled)
    assert all(row[name] >= 0.0 for row in rows for name in FEATURES)
    assert {row["pair"] for row in rows} == {row["pair"] for row in labelled}  # rows only where the document was found


def test_a_documents_score_is_its_leg_shares_weighed(indexed_engine) -> None:
    query = "transcutaneous electrical nerve stimulation unit"
    weightings = (tuning.HAND_SET_FUSION,
                  {"vector_leg_weight": 1.0, "text_leg_weight": 2.5, "trigram_leg_weight": 0.5, "fit_weight": 0.3})
    engine = create_engine(indexed_engine.url)  # its own pool: the settings must not reach other tests
    try:
        with engine.connect() as conn:
            shares = {row.key: row for row in conn.execute(
                text("SELECT * FROM medrag_search_leg_shares(NULL, :q)"), {"q": query})}
            for weights in weightings:
                for name, value in weights.items():
                    conn.execute(text(f"SET medrag.{name} = {value}"))
                scores = {row.key: row.score for row in conn.execute(
                    text("SELECT key, score FROM medrag_search_documents(NULL, :q)"), {"q": query})}
                assert len(scores) >= 5 and any(shares[key].fit > 0 for key in scores)
                for key, score in scores.items():
                    leg = shares[key]
                    assert leg.exact == 0.0  # the query names no code or document
                    assert score == pytest.approx(sum(weights[setting] * getattr(leg, feature)
                                                      for feature, setting in tuning.FUSION_SETTINGS.items()))
    finally:
        engine.dispose()


def test_fit_fusion_writes_the_model_and_its_rows(cli, indexed_engine, tmp_path) -> None:
    out = tmp_path / "fusion.json"
    code, stdout, _ = cli("eval", "fit-fusion", "--per-kind", "10", "--out", str(out))
    assert code == 0, stdout
    model = json.loads(out.read_text())
    assert model["training"]["by_kind"] == {kind: 10 for kind in KINDS}
    assert fit_fusion(read_rows(rows_path(out)))["weights"] == model["weights"]
    assert "pairs (index 10" in stdout and str(out) in stdout


def test_an_out_file_that_cannot_be_written_is_refused_before_the_work(cli, tmp_path) -> None:
    for command in ("fit-fusion", "fit-ranker"):
        code, _, stderr = cli("eval", command, "--out", str(tmp_path / "missing" / "model.json"))
        assert code == 2 and "does not exist or cannot be written" in stderr
        assert len(stderr.strip().splitlines()) == 1

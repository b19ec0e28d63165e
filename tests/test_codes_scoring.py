"""The code finder's scoring in PostgreSQL (medrag_code_features and medrag_score_codes, sql/finder_features.sql
and sql/finder_score.sql) on real codes of the loaded releases."""

from __future__ import annotations

import json
import math

import pytest
from sqlalchemy import text

from medrag.codes import consolidate
from medrag.codes.classify import HCPCS, ICD10CM, SYSTEMS
from medrag.codes.consolidate import MIN_SCORE, TIERS, calibration, code_words_sql
from medrag.codes.terms import SPELLING, TYPED
from medrag.core import tuning

# the term as medrag_find_codes hands it to the scoring (medrag_term_json over the term's concepts)
SCORE = text("SELECT * FROM medrag_score_codes(:release, CAST(:kinds AS text[]), CAST(:candidates AS jsonb), "
             "medrag_term_json(CAST(:concepts AS jsonb), :system, :text, :wants_modifiers, 1.0, false, "
             "(SELECT origin_weights FROM medrag_settings())))")


def _concept(text_: str, wordings: list[tuple[str, set[str], str]], *, negated: bool = False) -> dict:
    """A concept as medrag_code_concepts writes it."""
    return {"words": text_.split(), "systems": list(SYSTEMS), "qualifier": False, "negated": negated,
            "explains": [], "wordings": [{"words": words.split(), "lexemes": sorted(lexemes), "origin": origin}
                                         for words, lexemes, origin in wordings]}


def _query(*concepts: tuple[str, set[str]], negated: tuple[str, set[str]] | None = None) -> dict:
    """A term of typed concepts (and one it negates): {"text", "concepts"}."""
    found = [_concept(text_, [(text_, lexemes, TYPED)]) for text_, lexemes in concepts]
    if negated:
        found.append(_concept(negated[0], [(negated[0], negated[1], TYPED)], negated=True))
    return {"text": " ".join(text_ for text_, _ in concepts), "concepts": found}


def _candidate(code: str, place: int = 1, index: list | None = None) -> dict:
    return {"code": code, "exact": False, "similarity": None, "hits": [["words", place]], "index": index}


@pytest.fixture(scope="module")
def score(indexed_engine):
    """Score codes of the current release of a system for a term: {code: row}."""
    with indexed_engine.connect() as conn:
        releases = dict(conn.execute(text("SELECT source, id FROM release WHERE is_current "
                                          "AND source IN ('icd10cm', 'hcpcs')")).all())

    def run(query: dict, candidates: list[dict], system: str = ICD10CM, *, wants_modifiers: bool = False):
        kinds = ["diagnosis"] if system == ICD10CM else ["procedure", "modifier"]
        with indexed_engine.connect() as conn:
            rows = conn.execute(SCORE, {"release": releases["icd10cm" if system == ICD10CM else "hcpcs"],
                                        "kinds": kinds, "candidates": json.dumps(candidates), "system": system,
                                        "concepts": json.dumps(query["concepts"]), "text": query["text"],
                                        "wants_modifiers": wants_modifiers}).all()
        return {row.code: row for row in rows}

    return run


def test_the_fit_rewards_coverage_then_precision(score) -> None:
    found = score(_query(("diabetes", {"diabet"})), [_candidate("E23.2"), _candidate("E11.620", 2),
                                                      _candidate("I10", 3), _candidate("E11.999", 4)])
    assert set(found) == {"E23.2", "E11.620", "I10"}  # a code the release lacks is not scored
    assert found["E23.2"].lexical > found["E11.620"].lexical > 0  # "Diabetes insipidus" says less besides
    assert found["I10"].coverage == 0 and found["I10"].score == 0  # no evidence: not listed


def test_the_number_of_a_hyphenated_name_is_not_a_word_the_term_leaves_unexplained(score) -> None:
    """PostgreSQL reads "COVID-19" as covid and -19: "covid" explains all of it, but not all of "Post COVID-19
    condition"."""
    found = score(_query(("covid", {"covid"})), [_candidate("U07.1"), _candidate("U09.9", 2)])
    assert found["U07.1"].lexical == 1.0
    assert found["U09.9"].lexical < 1.0


def test_a_without_clause_covers_nothing_in_any_wording(score) -> None:
    """R11.0 "Nausea" has the inclusion term "Nausea without vomiting": it does not cover the vomiting."""
    codes = [_candidate("R11.0"), _candidate("R11.2", 2)]
    found = score(_query(("nausea", {"nausea"}), ("vomiting", {"vomit"})), codes)
    assert found["R11.0"].coverage == 0.5 and found["R11.2"].coverage == 1.0
    asks_without = score(_query(("nausea", {"nausea"}), ("without", {"without"}), ("vomiting", {"vomit"})), codes)
    assert asks_without["R11.0"].coverage == 1.0  # "nausea without vomiting" asks for it


def test_what_the_description_excludes_no_other_wording_covers(score) -> None:
    """I11.9's Index entry (Hypertension > heart) carries the alias "Failure, heart, with hypertension"; the code
    is still "without heart failure"."""
    index = ["Index: Hypertension, hypertensive > heart -> I11.9", "I11.9", ["failur", "heart", "hypertens"],
             ["heart", "hypertens"], []]
    query = _query(("hypertensive", {"hypertens"}), ("heart", {"heart"}), ("failure", {"failur"}))
    found = score(query, [_candidate("I11.9", index=index)])
    assert found["I11.9"].coverage == pytest.approx(2 / 3)


def test_a_code_reached_through_a_wording_above_it_holds_what_it_adds_to_it(score) -> None:
    """"Fracture, traumatic > radius" gives S52.9-: S52.91, "Unspecified fracture of right forearm", is that entry
    and the side it adds, so it holds all of "fracture of right radius", as M84.333 "Stress fracture, right radius"
    does without saying "stress"."""
    core = ["fractur", "radius"]
    query = _query(("fracture", {"fractur"}), ("right", {"right"}), ("radius", {"radius"}))
    found = score(query, [_candidate("M84.333"),
                          _candidate("S52.91", 2, index=["Index: Fracture, traumatic > radius -> S52.9-", "S52.9",
                                                         ["fractur", "radius", "traumat"], core, []])])
    assert found["S52.91"].coverage == 1.0 and found["S52.91"].best_term.startswith("Index: Fracture, traumatic")
    assert found["S52.91"].lexical > found["M84.333"].lexical
    # what S52.92 adds ("left") covers nothing the term says: the Index's wording alone holds two of its three words
    left = score(query, [_candidate("S52.92", index=["Index: Fracture, traumatic > radius -> S52.9-", "S52.9",
                                                      ["fractur", "radius", "traumat"], core, []])])
    assert left["S52.92"].coverage == pytest.approx(2 / 3) and left["S52.92"].score == 0.0  # another side


def test_a_code_taking_a_seventh_character_holds_what_its_form_says_beyond_the_encounter(score) -> None:
    """S82.891A is "Other fracture of right lower leg, initial encounter for closed fracture": it holds a closed
    fracture, which M84.371's forms ("... initial encounter for fracture") do not; no form's encounter covers the
    term's "encounter" (Z23, "Encounter for immunization", is what says it)."""
    closed = score(_query(("closed", {"close"}), ("fracture", {"fractur"}), ("right", {"right"}),
                          ("lower leg", {"lower", "leg"})), [_candidate("S82.891"), _candidate("M84.361", 2)])
    assert closed["S82.891"].coverage == 1.0 and closed["M84.361"].coverage == 0.5
    encounter = score(_query(("encounter", {"encount"}), ("fracture", {"fractur"})), [_candidate("S82.891")])
    assert encounter["S82.891"].coverage == 0.5


def test_an_inherited_nos_term_makes_the_default_child_win(score) -> None:
    """E11's inclusion term "diabetes NOS" applies to the codes under it, and makes E11.9 the default."""
    found = score(_query(("diabetes", {"diabet"})), [_candidate("E11.9"), _candidate("E11.620", 2)])
    assert found["E11.9"].best_term == "diabetes NOS"
    assert found["E11.9"].lexical > found["E11.620"].lexical
    assert found["E11.9"].specificity == 1.0 and found["E11.9"].is_default


def test_a_term_that_says_other_asks_for_the_other_code_not_the_default(score) -> None:
    """H15.0- scleritis: "Unspecified scleritis, left eye" (H15.002) is the default, unless the term says "other",
    which the Tabular's "Other scleritis, left eye" (H15.092) is."""
    candidates = [_candidate("H15.002"), _candidate("H15.092", 2)]
    plain = score(_query(("scleritis", {"scleriti"}), ("left eye", {"left", "eye"})), candidates)
    assert plain["H15.002"].specificity == 1.0 and plain["H15.092"].specificity < 1.0
    assert plain["H15.002"].score > plain["H15.092"].score
    other = {"text": "other scleritis left eye", "concepts": _query(("scleritis", {"scleriti"}),
                                                                   ("left eye", {"left", "eye"}))["concepts"]}
    asked = score(other, candidates)
    assert asked["H15.092"].specificity == 1.0 and asked["H15.002"].specificity < 1.0
    assert asked["H15.092"].score > asked["H15.002"].score


def test_spelling_corrections_count_a_little_less(score) -> None:
    query = {"text": "tuberculosus", "concepts": [_concept("tuberculosus", [
        ("tuberculosus", {"tuberculosus"}, TYPED), ("tuberculosis", {"tuberculosi"}, SPELLING)])]}
    assert score(query, [_candidate("A15.0")])["A15.0"].coverage == pytest.approx(0.9)


def test_headers_and_unrequested_codes_are_less_specific(score) -> None:
    wheelchair = _query(("wheelchair", {"wheelchair"}))
    assert score(wheelchair, [_candidate("E11")])["E11"].specificity < 0.5  # a header: its codes get reported
    modifier = [_candidate("KA")]
    assert (score(wheelchair, modifier, HCPCS)["KA"].specificity
            < score(wheelchair, modifier, HCPCS, wants_modifiers=True)["KA"].specificity)
    pregnancy = [_candidate("O24.419")]
    assert score(_query(("diabetes", {"diabet"})), pregnancy)["O24.419"].specificity < 0.8
    assert score(_query(("pregnancy diabetes", {"pregnanc", "diabet"})), pregnancy)["O24.419"].specificity == 1.0


def test_a_code_medicare_does_not_pay_is_less_specific(score) -> None:
    """S0285 (coverage code I: a private payer's colonoscopy consultation) below G0121 for a Medicare claim."""
    found = score(_query(("screening colonoscopy", {"screen", "colonoscopi"})),
                  [_candidate("G0121"), _candidate("S0285", 2)], HCPCS)
    expected = tuning.value("specificity_not_in_lcd") * tuning.value("not_medicare_factor")
    assert found["S0285"].specificity == pytest.approx(expected)
    assert found["S0285"].specificity < found["G0121"].specificity


def test_a_code_that_names_what_the_term_negates_or_another_side_scores_nothing(score) -> None:
    liver = score(_query(("fatty liver", {"fatti", "liver"}), negated=("alcohol", {"alcohol"})),
                  [_candidate("K70.0"), _candidate("K76.0", 2)])
    assert liver["K70.0"].score == 0 and liver["K76.0"].score > 0  # "Alcoholic fatty liver"
    knee = score(_query(("osteoarthritis", {"osteoarthr"}), ("right", {"right"}), ("knee", {"knee"})),
                 [_candidate("M17.11"), _candidate("M17.12", 2), _candidate("M17.0", 3)])
    assert knee["M17.11"].score > 0 and knee["M17.12"].score == 0  # the left knee is another code
    assert knee["M17.0"].score == 0  # "Bilateral primary osteoarthritis of knee" names both


def test_scores_and_their_distance_to_the_best_are_rounded_as_python_rounds(indexed_engine) -> None:
    """medrag_round3 rounds a float's exact value half to even, as round(x, 3) does: 0.4125 is 0.41249999..."""
    values = [0.4125, 0.0625, 0.1875, 0.6875 * 0.6, 0.94444, 0.0005, 1.0, 0.0, 0.3 * 3, 2 / 3]
    with indexed_engine.connect() as conn:
        rounded = conn.execute(text("SELECT medrag_round3(x) FROM unnest(CAST(:v AS float8[])) WITH ORDINALITY "
                                    "AS t(x, n) ORDER BY n"), {"v": values}).scalars().all()
    assert rounded == [round(value, 3) for value in values]


def test_the_scoring_words_sql_reads_are_the_ones_python_names(indexed_engine) -> None:
    """medrag_code_words() is rendered from consolidate.py: what the database holds is what Python says."""
    with indexed_engine.connect() as conn:
        words = conn.execute(text("SELECT * FROM medrag_code_words()")).one()._mapping
        settings = conn.execute(text("SELECT * FROM medrag_settings()")).one()._mapping
    assert set(words["neutral_lexemes"]) == consolidate.NEUTRAL_LEXEMES
    assert words["side_lexemes"] == consolidate.SIDE_LEXEMES
    assert "medrag_code_words" in code_words_sql()
    assert settings["lexical_weight"] == consolidate.WEIGHTS["lexical"]
    assert settings["leg_weights"] == tuning.bundle("leg_weights") and settings["code_rrf_k"] == 20


def test_tiers_follow_the_calibrated_confidence_and_a_listed_code_hides_its_header(indexed_engine) -> None:
    """medrag_code_pool / medrag_code_ranked: E11 is left out under E11.9; E10.9 is below the listing score; the
    confidence is the calibration's sigmoid, 1 for a code written in the term."""
    settings_sql = "medrag_code_finder_config()"
    hits = {f"ICD-10-CM|{code}|words": {"system": ICD10CM, "code": code, "leg": "words", "rank": 1, "seq": n}
            for n, code in enumerate(("E11", "E11.9", "E10.9", "X99.9"))}
    details = {"ICD-10-CM|E11": {"ord": 1, "billable": False, "has_children": True},
               "ICD-10-CM|E11.9": {"ord": 2, "billable": True, "has_children": False},
               "ICD-10-CM|E10.9": {"ord": 3, "billable": True, "has_children": False},
               "ICD-10-CM|X99.9": None}  # not in the release: never a candidate
    scores = {f"ICD-10-CM|{code}": {"score": score, "behind": 0.0} for code, score in
              (("E11", 0.9), ("E11.9", 0.81), ("E10.9", 0.29))}
    with indexed_engine.connect() as conn:
        pool = conn.execute(text(f"SELECT medrag_code_pool(CAST(:b AS jsonb), CAST(:d AS jsonb), CAST(:s AS jsonb), "
                                 f"{settings_sql})"),
                            {"b": json.dumps(hits), "d": json.dumps(details), "s": json.dumps(scores)}).scalar_one()
        ranked = conn.execute(text(f"SELECT r ->> 'code' FROM medrag_code_ranked(CAST(:p AS jsonb), {settings_sql}, "
                                   "'ICD-10-CM') r"), {"p": json.dumps(pool)}).scalars().all()
        cases = [(0.95, 0.0), (0.81, 0.0), (0.6, 0.0), (0.6, 0.3), (0.29, 0.0)]
        rows = [conn.execute(text(f"SELECT c, medrag_code_tier(:s, c, {settings_sql}) "
                                  f"FROM medrag_code_confidence(:s, :b, false, {settings_sql} -> 'calibration') c"),
                             {"s": score, "b": behind}).one() for score, behind in cases]
        exact = conn.execute(text(f"SELECT medrag_code_confidence(0.5, 0.2, true, {settings_sql} -> 'calibration')"))
        assert exact.scalar_one() == 1.0
    assert sorted(candidate["code"] for candidate in pool) == ["E10.9", "E11", "E11.9"]
    assert ranked == ["E11.9"]
    model = calibration()
    for (score, behind), (confidence, tier) in zip(cases, rows, strict=True):
        z = (model.score_weight * score + model.behind_weight * behind + model.best_weight * (behind == 0)
             + model.intercept)
        probability = 1 / (1 + math.exp(-z))
        assert confidence == pytest.approx(round(probability, 3))
        assert tier == (None if score < MIN_SCORE else next(name for floor, name in TIERS if probability > floor))
    assert rows[2][0] > rows[3][0]  # the same score further behind its system's best is less likely right

"""The abbreviations of HCPCS short descriptions, mined from the real January 2025 release, and the code finder
searching what a typed abbreviation stands for."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from medrag.codes.finder import CodeFinder
from medrag.codes.terms import ABBREVIATION, analyze_term
from medrag.core import tuning
from medrag.sources.hcpcs.abbreviations import description_words, mine_abbreviations, spells
from medrag.sources.hcpcs.release import parse_hcpcs_zip


def test_an_abbreviation_spells_its_word_in_order_from_its_first_letter() -> None:
    assert spells("inj", "injection") and spells("w/c", "wheelchair") and spells("ots", "off-the-shelf")
    assert not spells("inj", "conjunctiva")  # another first letter
    assert not spells("cath", "cast")  # a letter it lacks
    assert not spells("injection", "injection")  # not shorter
    assert description_words("INJ, DEXAMETHASONE (W/C)") == ["inj", "dexamethasone", "w/c"]


@pytest.fixture(scope="module")
def mined_2025(cms_dir: Path) -> dict[str, str]:
    records = parse_hcpcs_zip(cms_dir / "hcpcs" / "january-2025-alpha-numeric-hcpcs-file.zip")
    pairs = [(r["short_description"], r["long_description"]) for r in records
             if r["short_description"] and r["long_description"]]
    return {item.abbreviation: item.word
            for item in mine_abbreviations(pairs, tuning.value("abbreviation_min_support"))}


def test_the_release_teaches_its_abbreviations(mined_2025) -> None:
    assert mined_2025["inj"] == "injection"
    assert mined_2025["wc"] == "wheelchair"
    assert mined_2025["ots"] == "off-the-shelf"  # not orthosis: hyphens aside, its letters spell this word
    assert mined_2025["w/o"] == "without"
    assert "ext" not in mined_2025  # external, extremity or extension: no word takes most of its alignments
    assert "seat" not in mined_2025  # a word long descriptions use is no abbreviation


def test_a_loaded_release_holds_its_abbreviations_and_the_finder_searches_them(indexed_engine) -> None:
    with indexed_engine.connect() as conn:
        words = dict(conn.execute(text(
            "SELECT a.abbreviation, a.word FROM hcpcs_abbreviation a "
            "JOIN release r ON r.id = a.release_id AND r.source = 'hcpcs' AND r.is_current")).all())
    assert words["inj"] == "injection"
    _, query = analyze_term(indexed_engine, "inj dexamethasone sodium phosphate")
    (inj,) = [concept for concept in query.concepts if concept.text == "inj"]
    assert [(w.words, w.origin) for w in inj.wordings][1:] == [(("injection",), ABBREVIATION)]
    def no_embedder():
        raise RuntimeError("the test corpus has no code-document embeddings: no query embedder is needed")

    with CodeFinder(indexed_engine, embedder_factory=no_embedder) as finder:
        found = finder.find("inj dexamethasone sodium phosphate", systems=["HCPCS"])
    assert found.results[0].code == "J1100"  # Injection, dexamethasone sodium phosphate, 1 mg
    assert any("HCPCS abbreviation: inj = injection" in step for step in found.trace)


def test_a_slashed_abbreviation_is_spelled_out_before_the_term_is_split(indexed_engine) -> None:
    """A term's words split at a slash, so "w/o" and "w/c" are read whole first, as the release teaches them: a short
    description pasted from a claim then says what is absent ("w/o bdr") as its long description does."""
    with indexed_engine.connect() as conn:
        spelled = [conn.execute(text("SELECT medrag_slashes_spelled_out(:t)"), {"t": term}).scalar_one()
                   for term in ("Absorpt drg >16 <=48 w/o bdr", "Catheter w/bag 3-way", "W/C seat lift mechanism,",
                                "1/2 tablet and/or more", "no slash here")]
        absences = conn.execute(text("SELECT medrag_absences(medrag_classify_code_term(:t) ->> 'text')"),
                                {"t": "absorpt drg >16 <=48 w/o bdr"}).scalar_one()
    assert spelled == ["Absorpt drg >16 <=48 without bdr", "Catheter with bag 3-way", "wheelchair seat lift mechanism,",
                       "1/2 tablet and/or more", "no slash here"]
    assert absences == [["without", ["bdr"], ["bdr"]]]

    def no_embedder():
        raise RuntimeError("the test corpus has no code-document embeddings: no query embedder is needed")

    with CodeFinder(indexed_engine, embedder_factory=no_embedder) as finder:
        lift = finder.find("w/c seat lift mechanism", systems=["HCPCS"])
        dressing = finder.find("absorpt drg >16 <=48 w/o bdr", systems=["HCPCS"])
    assert lift.results[0].code == "E0985", lift.trace  # Wheelchair accessory, seat lift mechanism
    # Specialty absorptive dressing, ..., more than 16 sq. in. but less than or equal to 48 sq. in., without adhesive
    # border: not A6255, the same size "with any size adhesive border"
    assert dressing.results[0].code == "A6252", dressing.trace

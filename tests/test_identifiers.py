"""Identifier shapes are defined once (medrag.core.identifiers): the finder, the answer gates and the rewrite check
recognise the same codes."""

from __future__ import annotations

import re

import pytest

from medrag.answer.validate import find_code_tokens
from medrag.codes.classify import HCPCS, ICD10CM, classify
from medrag.core import identifiers


@pytest.mark.parametrize(
    ("text", "hcpcs", "icd"),
    [
        ("E0601", ("E0601",), ("E06.01",)),        # five characters: the tables decide which it is
        ("S72.001A", (), ("S72.001A",)),
        ("M1A0710", (), ("M1A.0710",)),            # a letter third in an undotted code
        ("E11.621.", (), ("E11.621",)),            # a sentence's full stop is not part of the code
        ("a1c test", (), ()),                      # a bare letter-digit-letter is a word
        ("vitamin B17 and Coenzyme-Q10", (), ()),  # nutrients (B17 and Q10 are categories too)
        ("B17.1 after vitamins", (), ("B17.1",)),
    ],
)
def test_the_finder_and_the_answer_gates_see_the_same_codes(engine, text: str, hcpcs: tuple, icd: tuple) -> None:
    found = classify(engine, text).literal_codes
    assert found.get(HCPCS, ()) == hcpcs and found.get(ICD10CM, ()) == icd
    keys = {token.key for token in find_code_tokens(text.upper())}
    assert set(hcpcs) | {identifiers.dotted_icd10cm(code) for code in icd} >= {
        identifiers.dotted_icd10cm(key) if "." not in key else key for key in keys}


def test_determination_identifiers() -> None:
    tokens = {(token.kind, token.key) for token in find_code_tokens("See NCD 240.2, LCD 33718, L33797 and A52458.")}
    assert tokens == {("ncd", "240.2"), ("lcd", "L33718"), ("lcd", "L33797"), ("article", "A52458")}
    assert re.search(identifiers.NCD, "NCD 2400") is None  # not NCD 240 followed by a stray digit


def test_dotted_form() -> None:
    assert identifiers.dotted_icd10cm("e11621") == "E11.621"
    assert identifiers.dotted_icd10cm("E11") == "E11"
    assert identifiers.dotted_icd10cm("S72.001A") == "S72.001A"


def test_the_search_sql_reads_the_same_shapes(engine) -> None:
    """medrag_query_identifiers is rendered from these patterns into generated.sql by `medrag db migrate`."""
    from sqlalchemy import text

    query = ("E0601, e11621, M1A0710, S72.001A, NCD 240.2, LCD 33718, L33797, A52458, a1c, NCD 2400, "
             "laetrile (vitamin B17), coenzyme q10")
    with engine.connect() as conn:
        found = set(conn.execute(text("SELECT source, key FROM medrag_query_identifiers(:q)"), {"q": query}).all())
        definition = conn.execute(text("SELECT pg_get_functiondef('medrag_query_identifiers'::regproc)")).scalar()
    assert found == {("hcpcs", "E0601"), ("icd10cm", "E06.01"), ("icd10cm", "E11.621"), ("icd10cm", "M1A.0710"),
                     ("icd10cm", "S72.001A"), ("ncd", "240.2"), ("lcd", "L33718"), ("lcd", "L33797"),
                     ("article", "A52458"),
                     # a search token is only looked up: these shapes are ICD-10-CM's too, and find nothing
                     ("icd10cm", "A1C"), ("icd10cm", "L33.797"), ("icd10cm", "A52.458")}
    assert identifiers.ICD10CM_ANY in definition and identifiers.HCPCS in definition


CUE_PHRASES = [
    ("type 2 diabetes without complications", "uncomplicated"),
    ("shingles, no complication", "uncomplicated"),
    ("stroke, not further specified", "unspecified"),
    ("pneumonia NOT otherwise specified", "unspecified"),
    ("diabetes, type not documented", "unspecified"),
    ("fever of unknown origin", "unspecified"),
    ("unknownness", None),  # a word, not the cue
    ("specified pneumonia", None),
]


def test_the_search_and_the_finder_read_the_same_cues(engine) -> None:
    """medrag_default_cue (the search) and the finder's "unspecified" reading share medrag.core.identifiers."""
    from sqlalchemy import text

    with engine.connect() as conn:
        sql = {phrase: conn.execute(text("SELECT medrag_default_cue(:q)"), {"q": phrase}).scalar()
               for phrase, _ in CUE_PHRASES}
        assert sql == dict(CUE_PHRASES)
        for phrase, cue in CUE_PHRASES:
            found = classify(conn, phrase)
            assert bool(found.unspecified) == (cue == "unspecified"), phrase
            assert ("unspecified" in found.searched.lower()) == (cue == "unspecified"
                                                                 or "unspecified" in phrase.lower())
        stroke = classify(conn, "stroke, not further specified")
    assert (stroke.unspecified, stroke.searched) == (("not further specified",), "stroke, unspecified")

"""The clinical code finder on the real code sets (HCPCS 2019, ICD-10-CM FY2026 + FY2021, MCD LCD tables)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from medrag.codes import HCPCS, ICD10CM, CodeFinder, CodeQueryError
from medrag.codes.evaluation import DevTerm, evaluate, read_dev_set
from medrag.codes.terms import analyze_term
from medrag.core.synonyms import SYSTEM_VALUES, synonym_rows
from medrag.retrieval.training import training_pairs

DEV_SET = Path(__file__).resolve().parents[1] / "eval" / "codes_dev.jsonl"
DESCRIPTIVE_DEV_SET = DEV_SET.with_name("codes_dev_descriptive.jsonl")
TIER_FLOORS = {"high": 0.8, "medium": 0.5, "possible": 0.0}


@pytest.fixture(scope="module")
def embedder_requests() -> list[str]:
    """Times the finder asked for a query embedder."""
    return []


@pytest.fixture(scope="module")
def finder(indexed_engine, embedder_requests):
    """One finder for the module; the test corpus has no code-document embeddings, so no model is loaded."""

    def factory():
        embedder_requests.append("asked")
        raise RuntimeError("no query embedder is needed when code documents have no embeddings")

    with CodeFinder(indexed_engine, embedder_factory=factory) as code_finder:
        yield code_finder


def codes_of(search, system: str | None = None) -> list[str]:
    return [result.code for result in search.results if system is None or result.system == system]


def test_diabetes_finds_type_2_diabetes_codes(finder) -> None:
    search = finder.find("diabetes")
    icd = codes_of(search, ICD10CM)
    assert any(code.startswith("E11.") for code in icd)
    # Unqualified, the term codes to the default "without complications" leaf, not to the E11 header.
    assert icd[0] == "E11.9"
    assert search.results[0].billable is True
    assert ("icd10cm", "E11") in [(item.source, item.key) for item in search.results[0].related]


def test_the_scored_candidates_come_only_when_asked_for(finder, indexed_engine) -> None:
    plain = finder.find("diabetes")
    assert plain.candidates == []
    asked = finder.find("diabetes", with_candidates=True)
    assert [result.code for result in asked.results] == codes_of(plain)
    scored = {(candidate.system, candidate.code): candidate for candidate in asked.candidates}
    assert len(scored) > len(asked.results)
    for result in asked.results:  # each listed code is a scored candidate, its confidence the one listed
        assert scored[(result.system, result.scored)].confidence == result.confidence
    with indexed_engine.connect() as conn:
        found = conn.execute(text("SELECT medrag_find_codes('diabetes')")).scalar_one()
        found_with = conn.execute(text("SELECT medrag_find_codes('diabetes', with_candidates => true)")).scalar_one()
    assert "candidates" not in found and len(found_with["candidates"]) == len(scored)
    assert found["results"] == found_with["results"]


def test_wheelchair_finds_k_range_wheelchairs(finder) -> None:
    search = finder.find("wheelchair")
    hcpcs = codes_of(search, HCPCS)
    assert search.results[0].system == HCPCS  # both systems searched, the device word favours HCPCS
    assert "K0001" <= hcpcs[0] <= "K0108"
    assert all(result.billable is None for result in search.results if result.system == HCPCS)


def test_misspelled_tuberculosis_is_corrected_to_a15_a19(finder) -> None:
    search = finder.find("tuberculosus")
    icd = codes_of(search, ICD10CM)
    assert icd and all("A15" <= code[:3] <= "A19" for code in icd)
    # one edit from both "tuberculosis" and "tuberculous" (A17.0 Tuberculous meningitis, nearer by trigrams): the
    # word more descriptions hold
    corrected = [step for step in search.trace if step.startswith("spelling:")]
    assert any("tuberculosus -> tuberculosis (ICD-10-CM" in step for step in corrected), corrected
    # reclassified once the word is known to be a disease: a diagnosis first, well above any HCPCS code
    assert any(step.startswith("reclassify:") and "routing priors" in step for step in search.trace), search.trace
    hcpcs_best = max((r.confidence for r in search.results if r.system == HCPCS), default=0.0)
    assert search.results[0].system == ICD10CM and search.results[0].confidence > hcpcs_best + 0.3, search.results


def test_a_misspelt_word_is_corrected_to_the_word_the_fewest_edits_away(finder) -> None:
    """"therepy" is nearer "there" than "therapy" by trigrams, but one letter away from "therapy"."""
    corrected = [step for step in finder.find("hyperbaric oxygen therepy").trace if step.startswith("spelling:")]
    assert any("therepy -> therapy (HCPCS" in step for step in corrected), corrected


def test_a_word_the_corpus_knows_is_not_spelling_corrected(finder, indexed_engine) -> None:
    """"medicare" is in no code's wording but is no misspelt "medical": only words the corpus lacks are corrected."""
    with indexed_engine.connect() as conn:
        known = dict(conn.execute(text("SELECT w, medrag_known_word(w) FROM unnest(CAST(:words AS text[])) AS w"),
                                  {"words": ["medicare", "cover", "underactive", "zolpidem", "tuberculosus"]}).all())
    # "zolpidem": no code description or document holds it, the Table of Drugs does
    assert known == {"medicare": True, "cover": True, "underactive": True, "zolpidem": True, "tuberculosus": False}
    search = finder.find("does medicare cover tuberculosus treatment")
    corrected = [step for step in search.trace if step.startswith("spelling:")]
    assert any("tuberculosus -> tuberculosis" in step for step in corrected), search.trace
    assert not any("medicare" in step or "cover" in step for step in corrected), corrected
    # a drug only the Table of Drugs names is looked up as typed, never "corrected" to a word some description holds
    drug = finder.find("trospium adverse effect")
    assert not any("trospium" in step for step in drug.trace if "spelling" in step), drug.trace
    assert drug.results[0].code == "T44.3X5A", drug.results


def test_each_code_release_keeps_the_words_spelling_is_corrected_to(indexed_engine) -> None:
    """medrag_code_word holds each code release's description words, rewritten with the release's documents."""
    with indexed_engine.begin() as conn:
        words = dict(conn.execute(text(
            "SELECT r.source || ' ' || r.label, count(w.word) FROM medrag_usable_release r "
            "LEFT JOIN medrag_code_word w ON w.release_id = r.id GROUP BY r.source, r.label")).all())
        current_id, current_label = conn.execute(text(
            "SELECT id, label FROM release WHERE source = 'icd10cm' AND is_current")).one()
        holds = conn.execute(text(
            "SELECT w.word, r.source FROM medrag_code_word w JOIN release r ON r.id = w.release_id AND r.is_current "
            "WHERE w.word IN ('tuberculosis', 'wheelchair') ORDER BY 1, 2")).all()
        rewritten = conn.execute(text("SELECT medrag_refresh_code_words(:r)"), {"r": current_id}).scalar()
    code_releases = {name: count for name, count in words.items() if name.split()[0] in ("icd10cm", "hcpcs")}
    assert code_releases and all(count > 1_000 for count in code_releases.values()), words
    assert all(count == 0 for name, count in words.items() if name not in code_releases), words
    assert ("tuberculosis", "icd10cm") in holds and ("wheelchair", "hcpcs") in holds, holds
    assert rewritten == words[f"icd10cm {current_label}"]  # rewriting a release leaves its words as they were


def test_each_code_release_keeps_its_codes_stemmed_wordings(indexed_engine) -> None:
    """medrag_code_detail and medrag_code_term hold every code of every code release, written as it loads, and a
    rewrite leaves them as they were."""
    terms = text("SELECT n, text, lexemes, core, negated, filler, says_other FROM medrag_code_term "
                 "WHERE release_id = :r AND code = :code ORDER BY n")
    with indexed_engine.begin() as conn:
        missing = conn.execute(text(
            "SELECT r.source, r.label, count(*) FROM release r "
            "JOIN (SELECT release_id, code FROM icd10cm_code UNION ALL SELECT release_id, code FROM hcpcs_code) c "
            "ON c.release_id = r.id LEFT JOIN medrag_code_detail d ON d.release_id = c.release_id AND d.code = c.code "
            "LEFT JOIN medrag_code_term t ON t.release_id = c.release_id AND t.code = c.code AND t.n = 0 "
            "WHERE d.code IS NULL OR t.code IS NULL GROUP BY r.source, r.label")).all()
        icd_id = conn.execute(text("SELECT id FROM release WHERE source = 'icd10cm' AND is_current")).scalar_one()
        before = {code: conn.execute(terms, {"r": icd_id, "code": code}).all() for code in ("E11", "E11.9", "R11.0")}
        detail = text("SELECT * FROM medrag_code_detail WHERE release_id = :r AND code = :code")
        diabetes, poisoning = (conn.execute(detail, {"r": icd_id, "code": code}).one() for code in ("E11.9", "T39.1X1"))
        conn.execute(text("SELECT medrag_refresh_code_details(:r)"), {"r": icd_id})
        after = {code: conn.execute(terms, {"r": icd_id, "code": code}).all() for code in ("E11", "E11.9", "R11.0")}
    assert missing == []
    description = before["E11.9"][0]
    assert description.text == "Type 2 diabetes mellitus without complications"
    assert description.negated == ["complic"] and description.filler == ["complic"]  # "without complications"
    assert "diabetes NOS" in [term.text for term in before["E11"]]  # what the codes under E11 inherit
    insulin = next(term for term in before["E11"] if term.text.startswith("insulin resistant diabetes"))
    assert "mellitus" in insulin.lexemes and "mellitus" not in insulin.core  # a nonessential modifier is not core
    assert [(term.text, term.negated) for term in before["R11.0"]][1:] == [("Nausea NOS", None),
                                                                            ("Nausea without vomiting", ["vomit"])]
    assert diabetes.is_default and diabetes.says_without and diabetes.billable
    assert [form[0] for form in poisoning.seventh] == ["T39.1X1A", "T39.1X1D", "T39.1X1S"]
    assert before == after


ILIKE_ON_THE_TABLES = text("""
    SELECT m.code, (row_number() OVER (ORDER BY m.matched DESC, m.size, m.code))::int, m.matched::float8
    FROM (SELECT found.code, found.size, count(*) AS matched
          FROM unnest(CAST(:patterns AS text[])) AS p(pattern)
          CROSS JOIN LATERAL (
              SELECT c.code, length(c.description) AS size FROM icd10cm_code c
              WHERE :source = 'icd10cm' AND c.release_id = :r AND c.description ILIKE p.pattern
                AND c.seventh_character IS NULL
              UNION ALL
              SELECT c.code, length(c.long_description) FROM hcpcs_code c
              WHERE :source = 'hcpcs' AND c.release_id = :r AND c.long_description ILIKE p.pattern
                AND c.kind = ANY (CAST(:kinds AS text[]))
                AND (c.termination_date IS NULL OR c.termination_date >= current_date)) found
          GROUP BY found.code, found.size) m
    ORDER BY m.matched DESC, m.size, m.code
    LIMIT 30""")


@pytest.mark.parametrize(("source", "patterns", "kinds"), [
    ("icd10cm", ["%close%", "%fractur%", "%RIGHT%", "%ankl%"], ["diagnosis"]),
    ("icd10cm", ["%diabet%", "%Complic%"], ["diagnosis"]),
    ("hcpcs", ["%wheelchair%", "%CUSHION%"], ["procedure"]),
    ("hcpcs", ["%oxygen%"], ["procedure", "modifier"]),
])
def test_the_words_leg_matches_what_ilike_on_the_tabular_matches(indexed_engine, source, patterns, kinds) -> None:
    """The words leg reads medrag_code_description (each description lower-cased, revision 0048), which every code
    release holds as it loads; its codes, ranks and counts are those ILIKE over the loaded tables gives."""
    with indexed_engine.begin() as conn:
        release = conn.execute(text("SELECT id FROM release WHERE source = :s AND is_current"),
                               {"s": source}).scalar_one()
        missing = conn.execute(text(
            "SELECT c.release_id, count(*) FROM (SELECT release_id, code FROM icd10cm_code "
            "WHERE seventh_character IS NULL UNION ALL SELECT release_id, code FROM hcpcs_code) c "
            "LEFT JOIN medrag_code_description d ON d.release_id = c.release_id AND d.code = c.code "
            "WHERE d.code IS NULL GROUP BY 1")).all()
        args = {"r": release, "source": source, "patterns": patterns, "kinds": kinds}
        expected = conn.execute(ILIKE_ON_THE_TABLES, args).all()
        found = conn.execute(text("SELECT * FROM medrag_code_words_leg(:r, :source, :patterns, :kinds, 30)"),
                             args).all()
        conn.execute(text("SELECT medrag_refresh_code_details(:r)"), {"r": release})
        rewritten = conn.execute(text("SELECT * FROM medrag_code_words_leg(:r, :source, :patterns, :kinds, 30)"),
                                 args).all()
    assert missing == []
    assert len(expected) == 30 and found == expected and rewritten == expected


def test_a_negated_word_leaves_out_the_codes_that_name_it(finder) -> None:
    search = finder.find("fatty liver not caused by alcohol")
    icd = codes_of(search, ICD10CM)
    assert icd[0] == "K76.0", icd  # Fatty (change of) liver, not elsewhere classified
    assert not any(code.startswith("K70.") for code in icd)  # alcoholic liver disease
    assert any(step.startswith("negation: not caused, alcohol") for step in search.trace), search.trace
    assert "K70.0" in codes_of(finder.find("fatty liver caused by alcohol"), ICD10CM)


def test_not_enough_of_something_is_its_deficiency(finder) -> None:
    search = finder.find("anemia from not enough iron")
    assert codes_of(search, ICD10CM)[0] == "D50.9", search.trace  # Iron deficiency anemia, unspecified
    assert not any(step.startswith("negation:") for step in search.trace)


def test_a_negated_word_leaves_out_the_codes_classified_under_it(finder) -> None:
    """No S code names "injury", but chapter 19 ("Injury, poisoning and certain other consequences of external
    causes") holds them all: its title counts as what each of them says."""
    for term in ("knee pain, no injury", "hip pain, not from an injury"):
        icd = codes_of(finder.find(term), ICD10CM)
        assert icd[0].startswith("M25.5"), icd  # Pain in joint
        assert not any(code[0] in "ST" for code in icd), (term, icd)  # T84.84XA: pain due to an orthopedic device
    assert any(code[0] == "S" for code in codes_of(finder.find("knee pain after an injury"), ICD10CM))


def test_both_is_read_as_bilateral(finder) -> None:
    """ICD-10-CM says "bilateral" where people say "both": a stop word the synonym table gives a meaning."""
    search = finder.find("osteoarthritis of both knees")
    assert codes_of(search, ICD10CM)[0] == "M17.0", search.trace  # Bilateral primary osteoarthritis of knee
    assert codes_of(finder.find("osteoarthritis of the knee"), ICD10CM)[0] != "M17.0"


def test_a_detail_said_to_be_unknown_is_searched_as_unspecified(finder) -> None:
    """ "not otherwise specified" is the Tabular's "unspecified", not the words "otherwise" and "specified" to look
    for: J84.111 "Idiopathic interstitial pneumonia, not otherwise specified" and "specified NEC" Index entries won
    on those words."""
    search = finder.find("pneumonia, not otherwise specified")
    assert codes_of(search, ICD10CM)[0] == "J18.9", search.trace  # Pneumonia, unspecified organism
    assert 'not known: "not otherwise specified" searched as "unspecified"' in search.trace[1]
    assert codes_of(finder.find("stroke, not further specified"), ICD10CM)[0] == "I63.9"


def test_a_code_of_another_side_is_not_offered(finder) -> None:
    both = finder.find("hearing aid for both ears")
    displays = [result.display.lower() for result in both.results if result.system == HCPCS]
    assert displays and ("binaural" in displays[0] or "bilateral" in displays[0]), displays
    assert not any("monaural" in text for text in displays), displays
    assert "monaural" in " ".join(r.display.lower() for r in finder.find("hearing aid").results)  # the test can fail
    right = finder.find("osteoarthritis of the right knee")
    assert codes_of(right, ICD10CM)[0] == "M17.11", right.trace  # Unilateral primary osteoarthritis, right knee
    assert not any("left" in result.display.lower() or "bilateral" in result.display.lower()
                   for result in right.results), codes_of(right)


def test_a_term_naming_no_side_gets_the_unspecified_side(finder, indexed_engine) -> None:
    """ICD-10-CM codes a side only when it is documented: the unspecified side of a right / left pair is a default,
    as an ", unspecified" code is (medrag_refresh_side_defaults)."""
    with indexed_engine.connect() as conn:
        defaults = conn.execute(text(
            "SELECT r.label, d.code, d.is_default FROM medrag_code_detail d JOIN release r ON r.id = d.release_id "
            "WHERE r.source = 'icd10cm' AND d.code IN ('T25.219', 'T25.211', 'H26.9') ORDER BY 1, 2")).all()
    labels = sorted({label for label, _, _ in defaults})
    assert labels and defaults == [(label, code, code != "T25.211") for label in labels
                                   for code in ("H26.9", "T25.211", "T25.219")]
    assert codes_of(finder.find("second degree ankle burn"), ICD10CM)[0] == "T25.219A"  # unspecified ankle
    assert codes_of(finder.find("second degree burn of the left ankle"), ICD10CM)[0] == "T25.212A"


def test_a_term_naming_a_side_is_not_coded_to_the_unspecified_side(finder, indexed_engine) -> None:
    """"..., unspecified eye" explains the word "eyes", and is the default, but a term that names the side its
    siblings offer ("both eyes": bilateral) contradicts it (medrag_code_detail.unspecified_side_of)."""
    with indexed_engine.connect() as conn:
        sides = dict(conn.execute(text(
            "SELECT d.code, d.unspecified_side_of FROM medrag_code_detail d JOIN release r ON r.id = d.release_id "
            "AND r.source = 'icd10cm' AND r.is_current WHERE d.code IN ('H35.029', 'H35.023', 'T25.219')")).all())
    assert sides == {"H35.029": ["both", "left", "right"], "H35.023": None, "T25.219": ["left", "right"]}
    both = finder.find("exudative retinopathy, both eyes", systems=[ICD10CM])
    assert codes_of(both)[0] == "H35.023", both.trace  # Exudative retinopathy, bilateral
    assert "H35.029" not in codes_of(both)
    assert codes_of(finder.find("exudative retinopathy", systems=[ICD10CM]))[0] == "H35.029"  # no side: the default
    left = finder.find("fracture of humerus following insertion of a joint prosthesis, left arm", systems=[ICD10CM])
    assert codes_of(left)[0].startswith("M96.622"), left.trace


def test_a_service_word_the_index_pairs_with_another_word_is_a_diagnosis_concept_too(finder, indexed_engine) -> None:
    """"Screening (for) > hypertension" files Z13.6 under the main term "Screening": the word signals a HCPCS service,
    but with "hypertension" it is ICD-10-CM's concept as well, so the screening code outranks the disease."""
    _, query = analyze_term(indexed_engine, "screening for hypertension")
    assert {concept.text: concept.systems for concept in query.concepts} == {
        "screening": {ICD10CM, HCPCS}, "hypertension": {ICD10CM}}
    _, supplies = analyze_term(indexed_engine, "diabetes a1c test strips")  # no entry under "Test" names the others
    assert {concept.text: concept.systems for concept in supplies.concepts
            if concept.text in ("test", "strips")} == {"test": {HCPCS}, "strips": {HCPCS}}
    assert codes_of(finder.find("screening for hypertension"), ICD10CM)[0] == "Z13.6"
    assert codes_of(finder.find("hypertension"), ICD10CM)[0] == "I10"


def test_a_brand_the_table_of_drugs_names_with_a_columns_word_is_a_diagnosis_too(finder, indexed_engine) -> None:
    """"dilaudid" is a HCPCS brand synonym (hydromorphone injections), and the Table of Drugs has a "Dilaudid" row;
    with "overdose", a word that leads to its poisoning columns ("Overdose": see the Table), it is ICD-10-CM's
    concept as well, so the poisoning is found. Nothing in the Table pairs it with "injection", "cancer" or "pain",
    and a stop word ("for") pairs it with nothing: HCPCS's alone."""
    _, overdose = analyze_term(indexed_engine, "dilaudid overdose")
    assert {concept.text: concept.systems for concept in overdose.concepts}["dilaudid"] == {ICD10CM, HCPCS}
    _, injection = analyze_term(indexed_engine, "dilaudid injection for cancer pain")
    assert {concept.text: concept.systems for concept in injection.concepts}["dilaudid"] == {HCPCS}
    assert codes_of(finder.find("dilaudid overdose"), ICD10CM)[0] == "T40.2X1A"
    # a brand the Table does not list is its generic's row: "zofran" (ondansetron, T45.0-)
    _, zofran = analyze_term(indexed_engine, "zofran overdose")
    assert {concept.text: concept.systems for concept in zofran.concepts}["zofran"] == {ICD10CM, HCPCS}
    assert codes_of(finder.find("zofran overdose"), ICD10CM)[0] == "T45.0X1A"


def test_an_overdose_is_a_poisoning_and_its_intent_unsaid_is_accidental(finder) -> None:
    """The Index: "Overdose, overdosage (drug) - see Table of Drugs and Chemicals, by drug, poisoning"; the synonym
    table's "overdose" -> "poisoning" lets the Table's poisoning columns explain the word, and T42.4X1's "Poisoning
    by benzodiazepines NOS" makes the accidental one the default."""
    assert codes_of(finder.find("valium overdose"), ICD10CM)[0] == "T42.4X1A"
    assert codes_of(finder.find("valium overdose, assault"), ICD10CM)[0] == "T42.4X3A"


def test_multi_intent_term_queries_both_systems(finder) -> None:
    search = finder.find("diabetes a1c test")
    assert set(search.systems) == {ICD10CM, HCPCS}
    first_round = next(step for step in search.trace if step.startswith("round 1:"))
    assert "ICD-10-CM" in first_round and "HCPCS" in first_round


def test_gibberish_finds_no_codes(finder, cli) -> None:
    search = finder.find("asdfghjkl")
    assert search.results == []
    assert search.summary.startswith("No matching codes found")
    # "plugh" is one letter from "plug", but half a term is not enough to offer a code, nor a guess: a word nobody
    # knows may be what the term is about
    assert finder.find("xyzzy plugh").results == []
    code, out, _ = cli("codes", "asdfghjkl", "--json")
    assert code == 0
    printed = json.loads(out)
    assert printed["results"] == [] and printed["summary"].startswith("No matching codes found")


def test_a_term_no_code_holds_enough_of_lists_its_best_partial_matches_as_guesses(finder, cli) -> None:
    """"passing too much gas": the Index's "Gas" (R14.3) holds one of its three concepts, below the share a code needs;
    rather than nothing, the codes holding the most of the term are listed as guesses, confidence 0."""
    search = finder.find("passing too much gas", systems=[ICD10CM])
    assert search.results and {result.tier for result in search.results} == {"guess"}
    assert {result.confidence for result in search.results} == {0.0}
    assert "R14.3" in codes_of(search)[:5]
    assert search.summary.startswith('No code holds enough of "passing too much gas"')
    assert any(step.startswith("no code holds enough of the term:") for step in search.trace)
    # a term with evidence lists no guess
    assert "guess" not in {result.tier for result in finder.find("flatulence").results}
    code, out, _ = cli("codes", "passing too much gas", "--system", "ICD-10-CM", "--json")
    assert code == 0 and json.loads(out)["results"][0]["tier"] == "guess"


def test_literal_hcpcs_code_comes_first_with_its_lcd(finder) -> None:
    search = finder.find("E0601")
    first = search.results[0]
    assert (first.system, first.code, first.confidence, first.tier) == (HCPCS, "E0601", 1.0, "high")
    lcds = {item.key: item for item in first.related if item.source == "lcd"}
    assert "L33718" in lcds
    assert lcds["L33718"].contractors  # the DME MACs that publish it
    assert not codes_of(search, ICD10CM)  # "E06.01" is not an ICD-10-CM code


def test_empty_term_is_exit_2_with_a_clear_message(cli) -> None:
    code, _, err = cli("codes", "")
    assert code == 2
    assert "term is empty" in err and "Traceback" not in err


def test_a_database_without_code_sets_is_a_clear_error(engine) -> None:
    with CodeFinder(engine) as empty, pytest.raises(CodeQueryError, match="no ICD-10-CM or HCPCS release is loaded"):
        empty.find("diabetes")


@pytest.mark.parametrize(("term", "top", "systems", "message"), [
    ("   ", 5, None, "the term is empty"),
    ("x" * 1501, 5, None, "the term is 1,501 characters; the limit is 500"),
    ("oxygen", 0, None, "top must be between 1 and 50, not 0"),
    ("oxygen", 5, ["icd10", "CPT"], "unknown code system 'CPT'; choose ICD-10-CM or HCPCS"),
])
def test_a_bad_query_is_refused_by_the_one_check_for_python_and_psql(engine, term, top, systems, message) -> None:
    """medrag_check_code_query is the only check: the Python door and psql's medrag_find_codes say the same."""
    with CodeFinder(engine) as finder, pytest.raises(CodeQueryError, match=message):
        finder.find(term, top=top, systems=systems)
    with engine.connect() as conn, pytest.raises(DBAPIError, match=message):
        conn.execute(text("SELECT medrag_find_codes(:t, CAST(:s AS text[]), NULL, :k)"),
                     {"t": term, "s": systems, "k": top})
    with engine.connect() as conn:
        assert conn.execute(text("SELECT medrag_check_code_query('oxygen', 5, ARRAY['ICD-10-CM', 'hcpcs', 'icd'])")
                            ).scalar_one() == [ICD10CM, HCPCS]


@pytest.mark.parametrize(("args", "message"), [
    (["codes", "oxygen", "--release", "FY1999"], "no ICD-10-CM or HCPCS release labelled 'FY1999'"),
    (["codes", "oxygen", "--system", "CPT"], "unknown code system 'CPT'"),
    (["codes", "oxygen", "--top", "0"], "Invalid value for '--top'"),
])
def test_bad_options_are_exit_2(cli, args, message) -> None:
    code, _, err = cli(*args)
    assert code == 2
    assert message in err


def test_json_output_has_the_documented_shape(cli, indexed_engine) -> None:
    code, out, _ = cli("codes", "diabetes a1c test strips", "--json", "--top", "3")
    assert code == 0
    printed = json.loads(out)
    assert set(printed) == {"query", "results", "summary", "trace", "cached"}
    assert printed["query"] == "diabetes a1c test strips" and printed["trace"]
    again = json.loads(cli("codes", "diabetes a1c test strips", "--json", "--top", "3")[1])
    assert again["cached"] is True and again["results"] == printed["results"]
    confidences = [result["confidence"] for result in printed["results"]]
    assert confidences == sorted(confidences, reverse=True)
    assert {result["system"] for result in printed["results"]} == {ICD10CM, HCPCS}
    for result in printed["results"]:
        assert {"system", "code", "display", "confidence", "tier", "billable", "related"} <= set(result)
        assert result["confidence"] >= TIER_FLOORS[result["tier"]]
        assert (result["billable"] is None) == (result["system"] == HCPCS)
        assert all({"source", "key", "title"} <= set(item) for item in result["related"])
    for system in (ICD10CM, HCPCS):
        assert sum(1 for result in printed["results"] if result["system"] == system) <= 3


def test_text_output_has_summary_codes_and_trace(cli) -> None:
    code, out, _ = cli("codes", "E0601")
    assert code == 0
    assert out.startswith("1 HCPCS code for \"E0601\"")
    assert "E0601" in out and "L33718" in out and "Trace:" in out


def test_every_result_is_a_code_of_the_tables(finder, indexed_engine) -> None:
    terms = ["copd", "zofran", "heart attack", "walker", "hay fever", "wheelchiar", "kx modifier", "ESRD"]
    lookup = {ICD10CM: text("SELECT description FROM v_icd10cm_current WHERE code = :c"),
              HCPCS: text("SELECT long_description FROM v_hcpcs_current WHERE code = :c")}
    with indexed_engine.connect() as conn:
        for term in terms:
            for result in finder.find(term).results:
                assert conn.execute(lookup[result.system], {"c": result.code}).scalar() == result.display, term


def test_synonyms_and_abbreviations_broaden(finder) -> None:
    copd = finder.find("copd")
    assert codes_of(copd)[0] == "J44.9"
    assert any("synonyms: copd -> chronic obstructive pulmonary disease" in step for step in copd.trace)
    zofran = finder.find("zofran")
    assert "J2405" in codes_of(zofran, HCPCS)
    assert codes_of(finder.find("heart attack"))[0] == "I21.9"


def test_a_synonym_said_in_other_inflections_broadens_as_the_tables_term(finder) -> None:
    """"mini strokes" holds the table's "mini stroke" only by its stems: it still broadens to the expansion."""
    strokes = finder.find("mini strokes")
    assert codes_of(strokes)[0] == "G45.9"
    assert any("synonyms: mini strokes -> transient cerebral ischemic attack" in step for step in strokes.trace)


def test_the_words_that_ask_for_a_code_name_its_system_and_are_not_searched(finder, indexed_engine) -> None:
    from medrag.codes.classify import classify

    def asked_code_set(term: str) -> tuple[str | None, str]:
        found = classify(indexed_engine, term)
        return found.named, found.searched

    assert asked_code_set("What is the ICD-10 code for CHF?") == (ICD10CM, "CHF")
    assert asked_code_set("dx code afib") == (ICD10CM, "afib")
    assert asked_code_set("HCPCS code for a walker") == (HCPCS, "a walker")
    assert asked_code_set("billing code for an oxygen concentrator") == (None, "an oxygen concentrator")
    assert asked_code_set("diagnosis of diabetes") == (None, "diagnosis of diabetes")
    # "code" and "ICD-10" were words the term had to cover: nothing was found
    chf = finder.find("ICD-10 code for CHF")
    assert codes_of(chf)[0] == "I50.9", chf.trace
    assert 'named code set "ICD-10-CM"' in chf.trace[0]
    assert codes_of(finder.find("dx code afib"))[0] == "I48.91"
    # the search reads the same names: the code set named comes first in its group
    with indexed_engine.connect() as conn:
        named = conn.execute(text("SELECT medrag_named_code_set(q) FROM unnest(CAST(:q AS text[])) AS q"),
                             {"q": ["ICD-10 code for CHF", "dx code afib", "HCPCS walker", "CHF"]}).scalars().all()
    assert named == ["icd10cm", "icd10cm", "hcpcs", None]


def test_modifier_terms_find_modifiers(finder) -> None:
    assert codes_of(finder.find("kx modifier"))[0] == "KX"
    assert codes_of(finder.find("right side modifier"))[0] == "RT"
    # Without the word "modifier" a two-letter modifier is not what a term means.
    assert "RT" not in codes_of(finder.find("right side"))


def test_older_release_is_searched_when_asked(finder, cli) -> None:
    # M54.5 was the billable low back pain code in FY2021; FY2026 splits it into M54.50/51/59.
    assert codes_of(finder.find("low back pain", release="FY2021"))[0] == "M54.5"
    assert codes_of(finder.find("low back pain"))[0] == "M54.50"
    code, out, _ = cli("codes", "low back pain", "--release", "FY2021", "--json")
    assert code == 0 and json.loads(out)["results"][0]["code"] == "M54.5"


def test_system_option_restricts_the_search(finder) -> None:
    search = finder.find("diabetes", systems=["hcpcs"])
    assert search.systems == [HCPCS]
    assert search.results and all(result.system == HCPCS for result in search.results)


def test_vector_leg_is_skipped_without_code_embeddings(finder, embedder_requests) -> None:
    search = finder.find("oxygen concentrator")
    assert any("vector HCPCS (its code documents have no embeddings) skipped" in step for step in search.trace)
    assert embedder_requests == []
    assert codes_of(search)[0].startswith("E139")


def test_every_synonym_expansion_reaches_a_code(indexed_engine) -> None:
    """The synonym table is data: each expansion must find code documents of the system it names."""
    sources = {ICD10CM: "icd10cm", HCPCS: "hcpcs"}
    unreachable = []
    with indexed_engine.connect() as conn:
        for row in (row for row in synonym_rows() if not row.documents):  # the query terms
            wanted = [sources[system] for system in (row.systems or SYSTEM_VALUES["both"])]
            hits = conn.execute(text(
                "SELECT count(*) FROM chunk c JOIN document d ON d.id = c.document_id "
                "WHERE d.source = ANY(:s) AND d.is_current AND c.tsv @@ plainto_tsquery('english', :x)"),
                {"s": wanted, "x": row.expansion}).scalar()
            if not hits:
                unreachable.append(f"{row.term} -> {row.expansion}")
    assert unreachable == []


def test_every_lay_synonym_agrees_with_the_index(indexed_engine, finder) -> None:
    """A lay word the ICD-10-CM Index itself looks up ("Ringworm B35.9", "Pink eye - see Conjunctivitis, acute,
    mucopurulent") must expand to words the finder codes as the Index does: an expansion that reads more into the
    word ("tinea corporis": the body only) or less ("conjunctivitis": unspecified) sends both the finder and the search
    to a code a coder would not report."""
    with indexed_engine.connect() as conn:
        index_codes = dict(conn.execute(text(
            "SELECT lower(array_to_string(e.path, ' ')), min(e.code) FROM icd10cm_index_entry e "
            "JOIN release r ON r.id = e.release_id AND r.source = 'icd10cm' "
            "WHERE e.index_name <> 'drugs' AND e.code IS NOT NULL GROUP BY 1")).all())
    checked, disagreeing = 0, []
    for row in synonym_rows():
        code = index_codes.get(row.term.lower())
        if row.documents or ICD10CM not in row.systems or code is None:
            continue
        checked += 1
        first = codes_of(finder.find(row.expansion, systems=[ICD10CM]), ICD10CM)[:1]
        if not first or not first[0].startswith(code.rstrip("-")):
            disagreeing.append(f"{row.term} (Index {code}) -> {row.expansion} ({first})")
    assert checked >= 30 and disagreeing == []


@pytest.mark.parametrize("dev_set", [DEV_SET, DESCRIPTIVE_DEV_SET], ids=["dev", "descriptive"])
def test_dev_set_codes_exist_in_the_tables(indexed_engine, dev_set) -> None:
    terms = read_dev_set(dev_set)
    assert len(terms) >= 40 and {term.system for term in terms} == {ICD10CM, HCPCS}
    with indexed_engine.connect() as conn:
        icd = set(conn.execute(text("SELECT code FROM v_icd10cm_current")).scalars())
        hcpcs = set(conn.execute(text("SELECT code FROM v_hcpcs_current WHERE termination_date IS NULL")).scalars())
    missing = [(term.term, code) for term in terms for code in term.expected
               if code not in (icd if term.system == ICD10CM else hcpcs)]
    assert missing == []


def test_dev_set_meets_the_accuracy_goals_without_vectors(finder) -> None:
    report = evaluate(finder, read_dev_set(DEV_SET))
    assert report.top1 >= 0.85, [(miss.term, miss.found[:3]) for miss in report.misses]
    assert report.top5 >= 0.95


def _terms_file(tmp_path: Path, third: tuple[str, str, str]) -> Path:
    """A three-term dev set: a wheelchair, high blood pressure and `third` (term, system, expected code)."""
    terms = tmp_path / "terms.jsonl"
    rows = [("wheelchair", HCPCS, "K0001"), ("high blood pressure", ICD10CM, "I10"), third]
    terms.write_text("".join(json.dumps({"term": term, "system": system, "expected": [code]}) + "\n"
                             for term, system, code in rows))
    return terms


def test_fit_confidence_command_writes_a_calibration(cli, indexed_engine, tmp_path) -> None:
    terms = _terms_file(tmp_path, ("type 2 diabetes", ICD10CM, "E11.9"))
    model_file = tmp_path / "confidence_model.json"
    code, out, err = cli("eval", "fit-confidence", "--terms", str(terms), "--out", str(model_file))
    assert code == 0 and "confidence = sigmoid(" in out, err
    model = json.loads(model_file.read_text())
    assert model["fitted_on"] == "terms.jsonl" and model["terms"] == 3 and model["accepted"] >= 2
    assert model["examples"] > model["accepted"] and model["score_weight"] > 0


def test_eval_codes_command_reports_accuracy_and_latency(cli, indexed_engine, tmp_path) -> None:
    terms = _terms_file(tmp_path, ("E0601", HCPCS, "E0601"))
    code, out, _ = cli("eval", "codes", "--terms", str(terms), "--json")
    assert code == 0
    report = json.loads(out)
    assert (report["terms"], report["top1"], report["top5"]) == (3, 1.0, 1.0)
    assert report["latency_ms"]["p50"] > 0 and report["latency_ms"]["p95"] >= report["latency_ms"]["p50"]
    assert report["goals_met"]["top1"] and report["misses"] == []
    first, high = report["first_high"], report["calibration"].get("high", {"listed": 0})
    assert first["listed"] <= min(3, high["listed"]) and (first["listed"] == 0 or first["correct"] == 1.0)
    code, out, _ = cli("eval", "codes", "--terms", str(terms))
    assert code == 0 and "top-1 1.000" in out
    terms.write_text('{"term": "wheelchair", "system": "CPT", "expected": ["K0001"]}\n')
    code, _, err = cli("eval", "codes", "--terms", str(terms))
    assert code == 2 and "'system' must be one of" in err


def test_eval_pairs_measures_the_finder_on_the_releases_pairs_by_kind(cli, indexed_engine) -> None:
    """`medrag eval pairs`: the same seed gives the same pairs; an Index path's code counts found when the finder lists
    it with its 7th character (the Index names T67.01, the finder reports T67.01XA)."""
    code, out, _ = cli("eval", "pairs", "--per-kind", "12", "--seed", "3", "--json")
    assert code == 0
    report = json.loads(out)
    assert report["terms"] == 108
    assert set(report["by_kind"]) == {"index", "inclusion", "hcpcs_short", "negation", "drug", "reference", "side",
                                      "index_side", "neoplasm"}
    assert all(figures["terms"] == 12 for figures in report["by_kind"].values())
    assert 0.5 <= report["top1"] <= report["top5"] <= 1.0
    again = json.loads(cli("eval", "pairs", "--per-kind", "12", "--seed", "3", "--json")[1])
    assert again["sha256"] == report["sha256"] and again["top1"] == report["top1"]
    other = json.loads(cli("eval", "pairs", "--per-kind", "12", "--seed", "4", "--kind", "index", "--json")[1])
    assert other["sha256"] != report["sha256"] and set(other["by_kind"]) == {"index"}
    code, _, err = cli("eval", "pairs", "--kind", "ncd_keyword")
    assert code == 2
    assert ("'ncd_keyword' is not one of index, inclusion, hcpcs_short, negation, drug, reference, side, index_side, "
            "neoplasm") in err
    with indexed_engine.connect() as conn:  # each negation pair states one the filler "not elsewhere" aside
        stated = training_pairs(conn, 500, 3, ("negation",))
        drugs = training_pairs(conn, 300, 3, ("drug",))
    states = re.compile(r"\b(not|no)\b(?! (elsewhere|otherwise))")
    assert len(stated) > 100 and all(states.search(pair.phrase) for pair in stated)
    # a Table of Drugs row and column: the column's words, or "poisoning" alone where the Tabular calls the code the
    # poisoning's NOS (the accidental column, 6th character 1)
    columns = re.compile(r" (poisoning( accidental| intentional self-harm| assault| undetermined)?|adverse effect|"
                         r"underdosing)$")
    assert len(drugs) == 300 and all(pair.code.startswith("T") and columns.search(pair.phrase) for pair in drugs)
    bare = [pair.code for pair in drugs if pair.phrase.endswith(" poisoning")]
    assert bare and all(code.endswith("1") for code in bare)
    # an entry that refers elsewhere, read as a path, paired with the code of the entry its reference names
    # and a Tabular description naming a side where its family has an unspecified side, "bilateral" said as "both"
    with indexed_engine.connect() as conn:
        references = {pair.phrase: pair.code for pair in training_pairs(conn, 20_000, 3, ("reference",))}
        sides = {pair.phrase: pair.code for pair in training_pairs(conn, 20_000, 3, ("side",))}
    assert len(references) > 5_000 and references["rubeola"] == "B05.9" and references["chest effusion"] == "J90"
    assert len(sides) > 3_000 and not any("unspecified" in phrase or "bilateral" in phrase for phrase in sides)
    assert sides["exudative retinopathy, both eyes"] == "H35.023" and sides["hemarthrosis, left ankle"] == "M25.072"
    # an Index path whose code is of unspecified side, a side after it: the sibling of that side
    with indexed_engine.connect() as conn:
        index_sides = training_pairs(conn, 20_000, 3, ("index_side",))
    completed = {pair.phrase: pair.code for pair in index_sides}
    assert len(index_sides) > 300 and all(re.search(r", (right|left)$", pair.phrase) for pair in index_sides)
    assert {completed.get("thigh puncture, left"), completed.get("thigh puncture, right")} & {"S71.132", "S71.131"}
    assert all(code != "S71.139" for code in completed.values())
    # an entry that sends the reader to a Neoplasm Table column, with a site the table names: that row's cell
    with indexed_engine.connect() as conn:
        neoplasms = {pair.phrase: pair.code for pair in training_pairs(conn, 200_000, 3, ("neoplasm",))}
    assert len(neoplasms) > 50_000 and not any("specified" in phrase for phrase in neoplasms)
    assert neoplasms["spread metastasis of liver"] == "C78.7" and neoplasms["adenocarcinoma of liver"] == "C22.9"


def test_a_code_counts_found_with_the_7th_character_it_is_reported_with(finder) -> None:
    report = evaluate(finder, [DevTerm("heat fever", ICD10CM, ("T67.01",)), DevTerm("heat fever", ICD10CM, ("T67.0",))])
    assert codes_of(finder.find("heat fever"), ICD10CM)[0] == "T67.01XA"
    assert [outcome.rank for outcome in report.outcomes] == [1, None]


def test_the_trigram_legs_compare_the_first_256_characters_of_a_description(indexed_engine) -> None:
    """A quality-measure G code's 3,400-character description holds most of the trigrams of "cane" somewhere by
    chance (word_similarity 0.6 for G0019), its first 256 characters do not: neither trigram leg offers it, while
    the cane's own code still comes. Both read the trigram index of those prefixes (revision 0027)."""
    with indexed_engine.connect() as conn:
        release = conn.execute(text("SELECT id FROM release WHERE source = 'hcpcs' AND is_current")).scalar()
        whole = conn.execute(text("SELECT word_similarity('cane', long_description) FROM hcpcs_code "
                                  "WHERE release_id = :release AND code = 'G0019'"), {"release": release}).scalar()
        assert whole >= 0.6  # what the whole description gave

        # the plans of the statements inside the legs, as notices (the code leg runs as a statement of its own)
        conn.execute(text("LOAD 'auto_explain'"))
        for setting in ("log_min_duration = 0", "log_nested_statements = on", "log_level = notice"):
            conn.execute(text(f"SET LOCAL auto_explain.{setting}"))
        plans: list[str] = []
        driver = conn.connection.dbapi_connection

        def keep(notice) -> None:
            plans.append(notice.message_primary)

        driver.add_notice_handler(keep)
        try:
            codes = conn.execute(text("SELECT code FROM medrag_code_trigram_leg(:release, 'hcpcs', 'cane', "
                                      "ARRAY['procedure'], 50)"), {"release": release}).scalars().all()
            titles = conn.execute(text("SELECT d.key FROM medrag_trigram_leg('cane', true, 70, 60, '{}') leg "
                                       "JOIN chunk c ON c.id = leg.id JOIN document d ON d.id = c.document_id")
                                  ).scalars().all()
        finally:
            driver.remove_notice_handler(keep)
    assert "E0100" in codes and "G0019" not in codes
    assert "E0100" in titles and "G0019" not in titles
    assert any("hcpcs_code_release_description_prefix_trgm" in plan for plan in plans), plans
    assert any("document_title_prefix_trgm" in plan for plan in plans), plans

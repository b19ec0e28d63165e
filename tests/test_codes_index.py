"""The ICD-10-CM Index as a code-finding leg, routing as a prior, and the 2025 HCPCS release, on the real corpus."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from sqlalchemy import text

from medrag.cli import main
from medrag.codes import HCPCS, ICD10CM, CodeFinder


@pytest.fixture(scope="module")
def finder(indexed_engine):
    """A finder without a query embedder: the test corpus's code documents carry no vectors."""
    with CodeFinder(indexed_engine) as code_finder:
        yield code_finder


def codes_of(search, system: str | None = None) -> list[str]:
    return [result.code for result in search.results if system is None or result.system == system]


def test_index_tables_load_with_the_fy2025_release(indexed_engine) -> None:
    with indexed_engine.connect() as conn:
        counts = dict(conn.execute(text(
            "SELECT e.index_name, count(*) FROM icd10cm_index_entry e JOIN release r ON r.id = e.release_id "
            "WHERE r.label = 'FY2025' GROUP BY e.index_name")).all())
        drug = conn.execute(text("SELECT poisoning_accidental, adverse_effect FROM v_icd10cm_drug "
                                 "WHERE release = 'FY2025' AND substance = 'Acetaminophen'")).one()
        neoplasm = conn.execute(text("SELECT malignant_primary, benign FROM v_icd10cm_neoplasm WHERE release = "
                                     "'FY2025' AND site = 'Neoplasm, neoplastic > abdomen, abdominal > cavity'")).one()
        fy2025_codes = conn.execute(text(
            "SELECT count(*) FILTER (WHERE c.billable) FROM icd10cm_code c JOIN release r ON r.id = c.release_id "
            "WHERE r.label = 'FY2025'")).scalar()
    assert set(counts) == {"diseases", "external_causes", "drugs", "neoplasms"} and counts["diseases"] == 81_024
    assert tuple(drug) == ("T39.1X1", "T39.1X5") and tuple(neoplasm) == ("C76.2", "D36.7")
    assert fy2025_codes > 70_000  # the order file's billable codes, FY2025 having no tabular XML offline


def test_the_index_legs_tsqueries_quote_each_lexeme_and_pairs_need_two(indexed_engine) -> None:
    with indexed_engine.connect() as conn:
        def query(function: str, lexemes: list[str]) -> str | None:
            return conn.execute(text(f"SELECT {function}(CAST(:lexemes AS text[]))::text"),
                                {"lexemes": lexemes}).scalar()

        assert query("medrag_two_lexemes", ["pain", "leg", "leg"]) == "'leg' & 'pain'"
        # quoted, a lexeme with an apostrophe is one operand, which the parser reads as its two words in a row
        assert query("medrag_two_lexemes", ["o'brien", "sign", "test"]) == (
            "'o' <-> 'brien' & 'sign' | 'o' <-> 'brien' & 'test' | 'sign' & 'test'")
        assert query("medrag_two_lexemes", ["leg", "leg"]) is None
        assert query("medrag_any_lexeme", ["pain", "leg", "pain"]) == "'leg' | 'pain'"
        # two forms of one typed word are one word: no pair of the two
        forms = conn.execute(text("SELECT medrag_two_lexemes(ARRAY['enlarg', 'spleen', 'splenic'], "
                                  "'{\"splenic\": \"spleen\"}')::text")).scalar()
        assert forms == "'enlarg' & 'spleen' | 'enlarg' & 'splenic'"


def test_the_index_leg_reads_entries_sharing_one_word_only_when_too_few_share_two(indexed_engine) -> None:
    lexemes = ["leg", "pain", "chronic", "right"]  # thousands of entries share one of them, hundreds two
    with indexed_engine.connect() as conn:
        release_id = conn.execute(text("SELECT id FROM release WHERE source = 'icd10cm' AND label = 'FY2025'")
                                  ).scalar()
        statement = text("SELECT * FROM medrag_code_index_leg(:release, :release, CAST(:lexemes AS text[]), :limit, "
                         ":two_tiers)")

        def lookup(two_tiers: bool, limit: int) -> list[tuple]:
            return [tuple(row) for row in conn.execute(statement, {
                "release": release_id, "lexemes": lexemes, "limit": limit, "two_tiers": two_tiers})]

        # 20 entries sharing two words are enough for 5 codes. 800 are not (about 660 share two), so those sharing one
        # are read too: first those whose core words hold it (about 2,000), and for 1,000 codes (4,000 entries) all
        # the others as well. Without pairs every entry sharing one word is read: the rows (codes, ranks, evidence)
        # must be the same.
        for limit in (5, 200, 1000):
            two_tiers = lookup(True, limit)
            assert two_tiers and two_tiers == lookup(False, limit)


def test_screening_mammogram_encounter_finds_z12_31_first_through_the_index(finder) -> None:
    """By words alone (the test corpus's code documents have no vectors): the Index entry's main term and last
    subterm ("Screening", "routine mammogram") are what the term is measured on, not the levels between."""
    search = finder.find("encounter for a screening mammogram")
    assert codes_of(search)[0] == "Z12.31", search.trace
    assert any("Screening > neoplasm > breast > routine mammogram -> Z12.31" in line for line in search.trace)
    assert ICD10CM in search.systems and HCPCS in search.systems


def test_stone_in_the_ureter_follows_the_index(finder) -> None:
    search = finder.find("stone in the ureter")
    assert codes_of(search, ICD10CM)[0] == "N20.1", search.trace
    assert any("Index: Calculus, calculi, calculous > ureter -> N20.1" in line for line in search.trace)


def test_codes_under_an_index_header_inherit_its_entry_and_the_unspecified_one_comes_first(finder) -> None:
    """Cancer > breast -> C50.91-: the Tabular completes the header; with no side in the term, the unspecified
    breast (C50.919), not the first code of the list (C50.911, right breast)."""
    search = finder.find("breast cancer")
    assert codes_of(search, ICD10CM)[0] == "C50.919", search.trace
    assert any(line.startswith("score ICD-10-CM: C50.919") and "Index: Cancer > breast -> C50.91-" in line
               for line in search.trace), search.trace


def test_a_word_typed_without_its_hyphen_finds_the_hyphenated_wording(finder, indexed_engine) -> None:
    """"Check-up" (see Examination) is how the Index says it; people type "checkup"."""
    with indexed_engine.connect() as conn:
        compounds = conn.execute(text("SELECT typed, compound, lexeme FROM medrag_compounds("
                                      "ARRAY['checkup', 'incentive', 'check-up'])")).all()
        text_query = conn.execute(text("SELECT rank_query::text FROM medrag_text_queries('checkup')")).scalar_one()
    assert [tuple(row) for row in compounds] == [("checkup", "check-up", "check-up")]
    assert "'check-up'" in text_query and "'checkup'" in text_query
    search = finder.find("routine well child checkup")
    assert codes_of(search, ICD10CM)[0] == "Z00.129", search.trace  # Examination > child
    assert "as the corpus writes it: checkup = check-up (searched both ways)" in search.trace, search.trace


def test_a_word_typed_without_its_accents_finds_the_accented_wording(finder, indexed_engine) -> None:
    """The Tabular writes "Sjögren", the Index "Mönckeberg's"; people type plain letters, and the english configuration
    keeps "sjogren" and "sjögren" apart."""
    with indexed_engine.connect() as conn:
        compounds = conn.execute(text("SELECT typed, compound, lexeme FROM medrag_compounds("
                                      "ARRAY['sjogren''s', 'guillain', 'barre', 'sjögren'])")).all()
        text_query = conn.execute(text("SELECT rank_query::text FROM medrag_text_queries('sjogren')")).scalar_one()
    assert sorted(tuple(row) for row in compounds) == [("barre", "barré", "barré"), ("sjogren's", "sjögren", "sjögren")]
    assert "'sjögren'" in text_query
    search = finder.find("sjogren syndrome", systems=[ICD10CM])
    assert codes_of(search, ICD10CM)[0] == "M35.00", search.trace
    assert "as the corpus writes it: sjogren = sjögren (searched both ways)" in search.trace, search.trace
    # typed with its accents, the word is one word, not "m" and "nckeberg's"
    assert codes_of(finder.find("mönckeberg's calcification", systems=[ICD10CM]), ICD10CM)[0].startswith("I70.2")


def test_a_greek_plural_is_also_worded_as_its_singular(finder, indexed_engine) -> None:
    """The english configuration stems "metastases" to metastas and "metastasis" to metastasi: the plural is also
    worded as the singular the corpus writes, so a term in the plural finds what the singular finds."""
    with indexed_engine.connect() as conn:
        compounds = conn.execute(text("SELECT typed, compound, lexeme FROM medrag_compounds("
                                      "ARRAY['metastases', 'stenoses', 'houses', 'metastasis'])")).all()
        text_query = conn.execute(text("SELECT rank_query::text FROM medrag_text_queries('metastases')")).scalar_one()
    assert sorted(tuple(row) for row in compounds) == [("metastases", "metastasis", "metastasi"),
                                                       ("stenoses", "stenosis", "stenosi")]
    assert "'metastasi'" in text_query
    plural = finder.find("bone metastases", systems=[ICD10CM])
    assert codes_of(plural, ICD10CM) == codes_of(finder.find("bone metastasis", systems=[ICD10CM]), ICD10CM)
    assert "as the corpus writes it: metastases = metastasis (searched both ways)" in plural.trace, plural.trace
    assert codes_of(finder.find("spinal stenoses", systems=[ICD10CM]), ICD10CM)[0] == "M48.00"


def test_a_reference_without_a_comma_leads_to_the_subterm(finder) -> None:
    """"Infection > ear (middle)" gives no code and says see also "Otitis media": Otitis > media's H66.9-, its own."""
    search = finder.find("ear infection")
    assert codes_of(search, ICD10CM)[0] == "H66.90", search.trace
    assert any("Index: Infection, infected, infective > ear -> H66.9-" in line for line in search.trace)


def test_a_without_clause_covers_nothing(finder) -> None:
    """R11.0 "Nausea" has the inclusion term "Nausea without vomiting" and the Index entry "Nausea (without
    vomiting)": neither covers "vomiting"; R11.2 "Nausea with vomiting" does."""
    search = finder.find("nausea and vomiting")
    assert codes_of(search, ICD10CM)[0] == "R11.2", search.trace
    assert codes_of(search, ICD10CM).index("R11.0") > 0


def test_a_without_clause_ends_where_the_wording_goes_on_with_of_or_with(indexed_engine, finder) -> None:
    """"Laceration without foreign body of right forearm" is a laceration of the right forearm with no foreign body:
    only "foreign body" is what the wording says is absent."""
    with indexed_engine.connect() as conn:
        absent = [conn.execute(text("SELECT medrag_without_lexemes(:w)"), {"w": wording}).scalar_one()
                  for wording in ("Laceration without foreign body of right forearm",
                                  "Concussion without loss of consciousness",
                                  "Vomiting without nausea",
                                  "Hypertensive heart disease without heart failure",
                                  "Alpha thalassemia without anemia with splenomegaly, left side")]
    assert absent == [["bodi", "foreign"], ["loss"], ["nausea"], ["failur"], ["anemia"]]
    assert codes_of(finder.find("right forearm laceration"), ICD10CM)[0] == "S51.811A"


def test_a_wording_that_says_with_or_without_says_nothing_is_absent(indexed_engine, finder) -> None:
    """S05.41 "Penetrating wound of orbit with or without foreign body, right eye" holds a foreign body: a term that
    says "with foreign body" is that code, not one the code contradicts (revision 0042)."""
    with indexed_engine.connect() as conn:
        absent = [conn.execute(text("SELECT medrag_without_lexemes(:w)"), {"w": wording}).scalar_one()
                  for wording in ("Penetrating wound of orbit with or without foreign body, right eye",
                                  "Crutch substitute, lower leg platform, with/without wheels, each",
                                  "Peptic ulcer with or without hemorrhage, without perforation")]
        stored = conn.execute(text(
            "SELECT t.negated FROM medrag_code_term t JOIN release r ON r.id = t.release_id AND r.is_current "
            "WHERE r.source = 'icd10cm' AND t.code = 'S05.41' AND t.n = 0")).scalar_one()
    assert absent == [[], [], ["perfor"]]
    assert stored is None
    search = finder.find("penetrating wound of orbit with foreign body, right eye, first visit")
    assert codes_of(search, ICD10CM)[0] == "S05.41XA", search.trace


def test_a_hcpcs_description_says_what_the_item_lacks(indexed_engine, finder) -> None:
    """E0256 "Hospital bed, variable height, hi-lo, with any type side rails, without mattress" holds no mattress
    (revision 0043): a term that asks for the mattress finds E0255 "..., with mattress", one that says without finds
    E0256, and "with or without" says nothing is absent."""
    with indexed_engine.connect() as conn:
        stored = dict(conn.execute(text(
            "SELECT t.code, t.negated FROM medrag_code_term t JOIN release r ON r.id = t.release_id AND r.is_current "
            "WHERE r.source = 'hcpcs' AND t.code IN ('E0255', 'E0256', 'L1902') AND t.n = 0")).all())
    assert stored == {"E0255": None, "E0256": ["mattress"], "L1902": None}  # L1902: "with or without joints"
    with_mattress = finder.find("hospital bed variable height with side rails and mattress", systems=["HCPCS"])
    without = finder.find("hospital bed variable height with side rails without mattress", systems=["HCPCS"])
    assert codes_of(with_mattress)[0] == "E0255", with_mattress.trace
    assert codes_of(without)[0] == "E0256", without.trace


def test_an_entry_that_sends_the_reader_to_a_neoplasm_column_finds_the_cell_of_the_terms_site(finder) -> None:
    """"Metastasis, metastatic > spread - see Neoplasm, secondary, by site": a term that says the cancer spread to the
    liver finds the liver row's Malignant Secondary cell, C78.7, not the primary liver cancer the Malignant Primary
    column gives (C22.9), as a coder following the reference does."""
    search = finder.find("cancer that has spread to the liver")
    assert codes_of(search, ICD10CM)[0] == "C78.7", search.trace
    assert "Malignant Secondary" in " ".join(search.trace)


@pytest.mark.parametrize("term, columns", [
    ("prostate cancer", {"Malignant Primary"}),
    ("metastatic carcinoma of the liver", {"Malignant Secondary"}),  # Carcinoma > metastatic, over Carcinoma
    ("metastatic spread to the liver", {"Malignant Secondary"}),  # "Metastasis, metastatic" > spread
    ("cancer that has spread to the liver", {"Malignant Secondary"}),  # Cancer whole; > spread, > cancer below it
    ("embolus of the lung", set()),  # "Tumor > embolus" below its main term, but no name said whole
    ("carcinoma in situ of the cervix", {"Ca in situ"}),  # Carcinoma-in-situ: its parts, over Carcinoma
    ("papilloma of the bladder", {"Benign"}),
    ("fracture of the femur", set()),
])
def test_a_term_names_the_neoplasm_columns_one_of_whose_names_it_says_whole(indexed_engine, term, columns) -> None:
    assert named_columns(indexed_engine, term, "neoplasms") == columns


def named_columns(engine, term: str, table: str) -> set[str]:
    """The columns of an FY2025 table a term names (medrag_index_named_columns)."""
    with engine.connect() as conn:
        return set(conn.execute(text(
            "SELECT n.column_name FROM release r, medrag_index_named_columns(r.id, medrag_lexemes(:term), :table) n "
            "WHERE r.source = 'icd10cm' AND r.label = 'FY2025'"), {"term": term, "table": table}).scalars())


@pytest.mark.parametrize(("term", "columns"), [
    ("suicide attempt with warfarin", {"Poisoning Intentional self-harm"}),
    ("homicide by arsenic", {"Poisoning Assault"}),
    ("warfarin overdose", set()),  # every poisoning column is called an overdose: none is named
    ("chloroprocaine underdosing", {"Underdosing"}),
])
def test_a_term_names_the_drug_columns_whose_intent_it_says(indexed_engine, term, columns) -> None:
    assert named_columns(indexed_engine, term, "drugs") == columns


def test_a_suicide_attempt_with_a_drug_is_its_intentional_self_harm_poisoning(finder) -> None:
    """ICD-10-CM codes a suicide attempt by a drug as the drug's intentional self-harm poisoning, as the Index's
    "Self-harm > intentional - see Suicide" says: not the suicide attempt of T14.91 alone."""
    search = finder.find("suicide attempt with warfarin", systems=[ICD10CM])
    assert codes_of(search)[0] == "T45.512A", search.trace


def test_a_cell_of_the_column_a_term_names_is_measured_on_its_site(finder) -> None:
    """"Cancer - see Neoplasm, by site, malignant": "prostate cancer" is C61 in full, before the personal history of
    a malignant neoplasm of the prostate (Z85.46), whose levels between main term and site are not measured."""
    search = finder.find("prostate cancer", systems=[ICD10CM])
    assert codes_of(search)[0] == "C61", search.trace
    liver = finder.find("metastatic carcinoma of the liver", systems=[ICD10CM])
    assert codes_of(liver)[0] == "C78.7", liver.trace


def test_each_icd10cm_release_keeps_the_negations_its_wording_states(indexed_engine) -> None:
    """N64.3 "Galactorrhea not associated with childbirth" in every release's Tabular, the Index level "Immunization >
    not done" in FY2025's Index: written by the load (medrag_write_stated_negations), read by a term's "not ..."."""
    with indexed_engine.connect() as conn:
        stated = conn.execute(text(
            "SELECT r.label, s.cue, s.words FROM icd10cm_stated_negation s JOIN release r ON r.id = s.release_id "
            "WHERE s.cue = 'not' AND s.words IN ('{associated}', '{done}') ORDER BY 1, 3")).all()
        labels = conn.execute(text("SELECT label FROM release WHERE source = 'icd10cm' ORDER BY 1")).scalars().all()
    assert {(label, ("associated",)) for label in labels} <= {(label, tuple(words)) for label, _, words in stated}
    assert ("FY2025", "not", ["done"]) in stated


@pytest.mark.parametrize(("term", "negated", "absences"), [
    ("galactorrhea not associated with childbirth", set(), [["not", ["associated"], ["associ"]]]),  # N64.3's words
    # starts with the stated "not intractable"
    ("not intractable epilepsy", set(), [["not", ["intractable"], ["intract"]]]),
    ("immunization not done, parent refusal", set(), [["not", ["done"], ["done"]]]),  # the Index's level
    ("psychosis not due to alcohol", {"due", "to", "alcohol"}, []),  # F28 states "not due to a substance", not this
    ("fatty liver not caused by alcohol", {"caused", "by", "alcohol"}, []),
    ("migraine without aura, intractable", set(), [["without", ["aura"], ["aura"]]]),  # the clause ends at the comma
])
def test_a_negation_icd10cm_states_is_searched_as_written(indexed_engine, term, negated, absences) -> None:
    with indexed_engine.connect() as conn:
        found = conn.execute(text("SELECT medrag_negated_words(:t), medrag_absences(:t)"), {"t": term}).one()
    assert (set(found[0]), found[1]) == (negated, absences)


def test_what_a_term_says_is_absent_is_also_read_as_the_index_names_it(indexed_engine, finder) -> None:
    """"Inflammation > esophagus - see Esophagitis": "without inflammation of the esophagus" is K21.9's "without
    esophagitis", so the code that says esophagitis is present is contradicted. Only what the term says is absent is
    renamed, and a reference to a generic entry ("Esophagus - see condition") names nothing."""
    term = "acid reflux without inflammation of the esophagus"
    search = finder.find(term)
    assert codes_of(search, ICD10CM)[0] == "K21.9", search.trace
    assert "K21.00" not in codes_of(search)
    assert "absent as the Index names it: inflammation esophagus = esophagitis" in search.trace
    assert not [line for line in finder.find("inflammation of the esophagus").trace if "Index names" in line]
    with indexed_engine.connect() as conn:
        def names(text_: str, starts: list[str]) -> list[tuple]:
            return [tuple(row) for row in conn.execute(text(
                "SELECT x.* FROM medrag_classify_code_term(:t) AS c, "
                "medrag_index_names(medrag_code_concepts(c ->> 'text', c), "
                "(SELECT max(release_id) FROM icd10cm_index_entry), CAST(:starts AS text[])) AS x"),
                {"t": text_, "starts": starts})]

        # concepts 3 and 4 of acid reflux + inflammation + esophagus; the clause ends at "of", the Index's phrase not
        assert names(term, ["inflammation"]) == [(3, 4, "Inflammation esophagus", ["esophagitis"])]
        assert names(term, ["acid"]) == []
        assert names(term, []) == []
        assert names("reflux without esophagus", ["esophagus"]) == []


def test_a_term_stating_a_codes_own_negation_finds_that_code_and_not_its_opposite(finder) -> None:
    """Read as a denial, "not associated with childbirth" would rule N64.3 out and "not intractable epilepsy" leave
    nothing to search; read as the codes' wording, they find the code that states it, and a code naming the word
    without the negation (G40.919 "..., intractable, ...") is contradicted."""
    for term, code in (("galactorrhea not associated with childbirth", "N64.3"), ("do not resuscitate", "Z66"),
                       ("not intractable epilepsy", "G40.909"),
                       ("concussion, no loss of consciousness", "S06.0X0A")):  # the Tabular says "without"
        search = finder.find(term)
        assert codes_of(search, ICD10CM)[0] == code, (term, search.trace)
    assert "G40.919" not in codes_of(finder.find("not intractable epilepsy"))


def test_what_a_term_and_a_code_say_is_absent_contradicts_what_the_other_says_is_so(finder) -> None:
    """"Migraine with aura" names what "migraine without aura, intractable" says is absent, and "Migraine without
    aura, not intractable" says absent what it says is so: neither is listed. G40.A09 "Absence epileptic syndrome,
    not intractable" is not what "intractable pyknolepsy" asks for."""
    listed = codes_of(finder.find("migraine without aura, intractable"), ICD10CM)
    assert listed and not any(code.startswith("G43.1") or code in ("G43.001", "G43.009") for code in listed), listed
    assert codes_of(finder.find("intractable pyknolepsy"), ICD10CM)[0] == "G40.A19"


def test_a_wording_that_says_nec_names_a_residual(indexed_engine) -> None:
    """"NEC" says what "Other ..." says (revision 0038): the Index's "specified NEC" level, and the stored flag of
    Z13.83's description in every release that has it; "not elsewhere classified" written out is the Tabular's
    filler, and "necrosis" is not "NEC"."""
    with indexed_engine.connect() as conn:
        says = [conn.execute(text("SELECT medrag_says_other(:w)"), {"w": wording}).scalar_one()
                for wording in ("Epilepsy, epileptic, epilepsia > specified NEC > not intractable",
                                "Other epilepsy", "Epilepsy, unspecified", "Necrosis, skin")]
        stored = conn.execute(text(
            "SELECT bool_and(t.says_other), count(*) FROM medrag_code_term t JOIN release r ON r.id = t.release_id "
            "WHERE r.source = 'icd10cm' AND t.code = 'Z13.83' AND t.n = 0")).one()
    assert says == [True, True, False, False]
    assert stored[0] is True and stored[1] >= 2


def test_a_level_a_with_subterm_introduces_is_part_of_the_index_wording(finder) -> None:
    """"Hernia > inguinal > bilateral > with > gangrene > recurrent" (K40.11) says gangrene: a term that does not
    leaves it unexplained, and the entry without it (K40.21) comes first."""
    search = finder.find("recurrent bilateral inguinal hernia", systems=[ICD10CM], with_candidates=True)
    assert codes_of(search, ICD10CM)[0] == "K40.21", search.trace
    lexical = {candidate.code: candidate.features["lexical"] for candidate in search.candidates}
    assert lexical["K40.21"] == 1 and lexical["K40.11"] < 1 and lexical["K40.01"] < 1


def test_drug_table_term_gets_its_seventh_character_explained(finder) -> None:
    search = finder.find("acetaminophen overdose, accidental")
    assert codes_of(search, ICD10CM)[0] == "T39.1X1A", search.trace
    assert search.results[0].billable and search.results[0].display.endswith(", initial encounter")
    assert any("Table of Drugs: Acetaminophen, Poisoning Accidental (unintentional) -> T39.1X1" in line
               for line in search.trace)
    assert "7th character: T39.1X1 -> T39.1X1A (A initial encounter; also D subsequent encounter, S sequela)" \
        in search.trace


@pytest.mark.parametrize(("term", "code"), [
    ("amoxicillin poisoning", "T36.0X1A"),  # the Tabular: "Poisoning by penicillins NOS" under T36.0X1
    ("amoxicillin poisoning, assault", "T36.0X3A"),  # an intent said is the intent coded
    ("adverse effect of amoxicillin", "T36.0X5A"),
    ("not intractable tension headache", "G44.209"),  # "Chronic tension-type headache NOS" is not its default
])
def test_a_poisoning_without_its_intent_is_the_column_the_tabular_calls_nos(finder, term, code) -> None:
    """The Table of Drugs' four poisoning columns tie for a term naming no intent; T36.0X1's "Poisoning by penicillins
    NOS" says its description's other words ("accidental") are what it is by default, so its Index wording,
    unexplained only there, makes it the default. A default does not reach past what its NOS wording says."""
    search = finder.find(term, systems=[ICD10CM])
    assert codes_of(search, ICD10CM)[0] == code, search.trace


@pytest.mark.parametrize(("term", "code"), [
    ("rubeola", "B05.9"),  # "Rubeola - see Measles"
    ("tricholemmoma", "D23.9"),  # "Tricholemmoma - see Neoplasm, skin, benign": one cell of the Neoplasm Table
    ("traumatic colon rupture", "S36.509A"),  # "Rupture > colon > traumatic - see Injury, intestine, large"
])
def test_an_index_entry_that_refers_elsewhere_finds_the_code_it_names(finder, term, code) -> None:
    """An entry with a reference and no code gives the code of the entry the reference names, as a coder following
    it would code; its own words are that code's wording."""
    search = finder.find(term, systems=[ICD10CM])
    assert codes_of(search, ICD10CM)[0] == code, search.trace


def test_a_phrase_saying_only_a_side_must_be_explained_by_that_side(finder) -> None:
    """"Both ears" is a side (the synonym table: binaural, bilateral), not the ear a wording of the site covers:
    otitis media's unspecified-side code does not explain it, the bilateral one does."""
    assert codes_of(finder.find("otitis media in both ears", systems=[ICD10CM]), ICD10CM)[0] == "H66.93"


def test_a_last_level_naming_a_side_leaves_the_level_it_qualifies_in_the_wording(finder) -> None:
    """"Ectropion > cicatricial > left" (H02.116) is a cicatricial ectropion: "left" implies no kind, so a term that
    does not say "cicatricial" leaves it unexplained, and the unspecified kind (H02.106) comes first."""
    search = finder.find("left eyelid ectropion", systems=[ICD10CM], with_candidates=True)
    assert codes_of(search, ICD10CM)[0] == "H02.106", search.trace
    lexical = {candidate.code: candidate.features["lexical"] for candidate in search.candidates}
    assert lexical["H02.116"] < 1


def test_a_level_a_with_subterm_qualifies_is_part_of_the_index_wording(finder) -> None:
    """"Alcohol > intoxication > with > dependence" (F10.229) is intoxication with dependence: for "alcohol dependence"
    it adds a word, and "Dependence > alcohol" (F10.20) says the term exactly."""
    search = finder.find("alcohol dependence")
    assert codes_of(search, ICD10CM)[0] == "F10.20", search.trace
    # said in full, the intoxication codes under dependence come first (F10.220 uncomplicated, F10.229 unspecified)
    assert codes_of(finder.find("alcohol intoxication with dependence"), ICD10CM)[0].startswith("F10.22")


def test_a_code_under_the_header_the_index_reads_best_inherits_its_entry(finder) -> None:
    """"fracture of left tibia": the Index's best entry is "Fracture, traumatic > tibia -> S82.20-" (a plain fracture is
    the traumatic one; "Fracture, pathological" keeps its qualifier); S82.202, which the word legs found, is what it
    leads to and inherits it. "Fracture, traumatic > stress > tibia -> M84.36-" matches less well and gives M84.362
    nothing."""
    search = finder.find("fracture of left tibia, initial encounter", systems=[ICD10CM])
    assert codes_of(search, ICD10CM)[0] == "S82.202A", search.trace
    scored = next(line for line in search.trace if line.startswith("score ICD-10-CM"))
    explained = {part.split()[0]: part for part in scored.removeprefix("score ICD-10-CM: ").split("); ")}
    assert "index" in explained["S82.202"] and "Index: Fracture, traumatic > tibia -> S82.20-" in explained["S82.202"]
    assert "index" not in explained["M84.362"]
    assert codes_of(finder.find("fracture of left wrist, initial encounter", systems=[ICD10CM]), ICD10CM)[0] == \
        "S62.102A"


def test_an_index_entry_of_unspecified_side_leads_to_the_side_the_term_names(finder, indexed_engine) -> None:
    """"contusion of left interscapular region": the Index gives "Contusion > interscapular region -> S20.229" (of
    unspecified back wall of thorax), which the side the term names contradicts; its family under S20.22 is what the
    entry leads to: S20.222 (left back wall) inherits it, through the header reflection narrows."""
    search = finder.find("contusion of left interscapular region, initial encounter", systems=[ICD10CM])
    assert codes_of(search, ICD10CM)[0] == "S20.222A", search.trace
    assert "reflect: ICD-10-CM: too general: narrow S20.22 to billable leaf codes" in search.trace
    scored = [line for line in search.trace if line.startswith("score ICD-10-CM")][-1]
    explained = {part.split()[0]: part for part in scored.removeprefix("score ICD-10-CM: ").split("); ")}
    assert "Index: Contusion > interscapular region -> S20.229" in explained["S20.222"]
    with indexed_engine.connect() as conn:
        sides = conn.execute(text("SELECT medrag_term_sides(CAST(:c AS jsonb))"), {"c": json.dumps([
            {"negated": False, "wordings": [{"lexemes": ["right"]}]},
            {"negated": False, "wordings": [{"lexemes": ["left-sid"]}]},
            {"negated": True, "wordings": [{"lexemes": ["bilater"]}]}])}).scalar()
    assert sides == ["left", "right", "both"]  # both: it names right and left; a negated concept names nothing


def test_the_visit_a_term_names_picks_the_seventh_character(finder) -> None:
    """"follow-up visit" is the subsequent encounter (D): set aside from the words searched, it picks the form."""
    search = finder.find("acetaminophen overdose, accidental, follow-up visit")
    assert codes_of(search, ICD10CM)[0] == "T39.1X1D", search.trace
    assert search.results[0].display.endswith(", subsequent encounter")
    assert ("7th character: T39.1X1 -> T39.1X1D (D subsequent encounter; the term names the subsequent encounter; "
            "also A initial encounter, S sequela)") in search.trace
    assert codes_of(finder.find("acetaminophen overdose, accidental, first visit"), ICD10CM)[0] == "T39.1X1A"


def test_the_seventh_character_is_the_form_holding_the_most_of_the_term(finder, indexed_engine) -> None:
    """An open fracture's initial encounter is B ("initial encounter for open fracture type I or II"), not A, the
    Tabular's first ("... for closed fracture"), which a term saying neither still gets."""
    search = finder.find("open fracture of right radius, initial encounter", systems=[ICD10CM])
    first = search.results[0]
    assert first.code.startswith("S52.") and first.code.endswith("B"), search.trace
    assert first.display.endswith("initial encounter for open fracture type I or II")
    assert any(line.startswith("7th character: ") and f" -> {first.code} (B " in line
               and "; its meaning holds the most of the term" in line for line in search.trace), search.trace
    form = text("SELECT medrag_seventh_form(jsonb_build_object('detail', jsonb_build_object('seventh', d.seventh)), "
                "CAST(:encounter AS text), CAST(:lexemes AS text[])) ->> 2 FROM medrag_code_detail d "
                "JOIN release r ON r.id = d.release_id AND r.label = 'FY2026' WHERE d.code = 'S82.891'")
    asked = ({"encounter": "initial", "lexemes": ["fractur"]}, {"encounter": "initial", "lexemes": ["open"]},
             {"encounter": "subsequent", "lexemes": ["nonunion", "open"]}, {"encounter": None, "lexemes": ["malunion"]})
    with indexed_engine.connect() as conn:
        forms = [conn.execute(form, given).scalar_one() for given in asked]
    assert forms == ["A", "B", "M", "P"]


def test_a_level_a_connective_opens_is_part_of_what_an_entry_says(finder, indexed_engine) -> None:
    """"Gout, gouty > in renal impairment > knee -> M10.36-" (its words given back by the loader) is gout due to renal
    impairment: M10.361, with the side it adds, holds "gout of the right knee" only with "renal impairment" left
    unexplained, so M10.061 (idiopathic gout, right knee) comes first."""
    search = finder.find("gout of the right knee", systems=[ICD10CM])
    assert codes_of(search, ICD10CM)[0] == "M10.061", search.trace
    with indexed_engine.connect() as conn:
        core = conn.execute(text(
            "SELECT leg.core_lexemes FROM medrag_code_index_leg("
            "(SELECT id FROM release WHERE source = 'icd10cm' AND label = 'FY2026'), "
            "(SELECT id FROM release WHERE source = 'icd10cm' AND label = 'FY2025'), "
            "ARRAY['gout', 'renal', 'impair', 'knee'], 50) leg "
            "WHERE leg.evidence = 'Index: Gout, gouty > in renal impairment > knee -> M10.36-'")).scalar_one()
        patterns = conn.execute(text("SELECT alone, opening FROM medrag_index_connectives()")).one()
    assert {"renal", "impair"} <= set(core)
    assert [bool(re.match(patterns.alone, level, re.IGNORECASE)) for level in ("due to", "in renal impairment")] == [
        True, False]
    assert re.match(patterns.opening, "in renal impairment", re.IGNORECASE)


def test_seventh_character_forms_are_rows_of_the_tabular_release(indexed_engine) -> None:
    with indexed_engine.connect() as conn:
        forms = conn.execute(text(
            "SELECT c.code, c.billable, c.seventh_character, c.description FROM icd10cm_code c "
            "JOIN release r ON r.id = c.release_id AND r.label = 'FY2026' "
            "WHERE c.parent_code IN ('T39.1X1', 'S06.1X7') ORDER BY c.parent_code DESC, c.tabular_order")).all()
        documents = conn.execute(text(
            "SELECT count(*) FROM document WHERE source = 'icd10cm' AND key = 'T39.1X1A'")).scalar()
    assert [(code, character) for code, _billable, character, _text in forms] == [
        ("T39.1X1A", "A"), ("T39.1X1D", "D"), ("T39.1X1S", "S"), ("S06.1X7A", "A")]  # S06's note: no D, S after 7
    assert all(billable for _code, billable, _character, _text in forms)
    assert forms[0].description.endswith("accidental (unintentional), initial encounter")
    assert documents == 0  # T39.1X1's own document lists the 7th characters


def test_wheelchair_still_finds_wheelchairs(finder) -> None:
    hcpcs = codes_of(finder.find("wheelchair"), HCPCS)
    assert hcpcs and all("K0001" <= code <= "K0108" or code.startswith("E1") for code in hcpcs[:3]), hcpcs
    assert any("K0001" <= code <= "K0108" for code in hcpcs)


def test_a_code_added_after_2019_is_found_in_2025(finder) -> None:
    search = finder.find("methylprednisolone sodium succinate injection")
    assert "J2919" in codes_of(search, HCPCS), search.trace  # added 2024-04-01


def test_a_code_terminated_before_2025_is_not_offered(finder) -> None:
    search = finder.find("J2920")  # methylprednisolone up to 40 mg, terminated 2024-03-31
    assert "J2920" not in codes_of(search)
    assert any("J2920 not in HCPCS 2025Q1" in line for line in search.trace)
    old = finder.find("J2920", release="2019")
    assert codes_of(old, HCPCS) == ["J2920"]


def test_routing_is_a_prior_not_a_filter(finder) -> None:
    search = finder.find("type 2 diabetes test strips")
    assert {ICD10CM, HCPCS} <= {result.system for result in search.results}
    assert search.systems == [ICD10CM, HCPCS]


def releases_diff(settings, monkeypatch, *arguments: str) -> dict[str, dict[str, dict]]:
    """`medrag releases diff ... --json` on the test corpus: change -> code -> row."""
    monkeypatch.setenv("DATABASE_URL", settings.database_url)
    monkeypatch.setenv("MEDRAG_HOME", str(settings.home))
    outcome = CliRunner().invoke(main, ["releases", "diff", *arguments, "--json"])
    assert outcome.exit_code == 0, outcome.output
    by_change: dict[str, dict[str, dict]] = {}
    for line in outcome.stdout.splitlines():
        if line.strip():
            row = json.loads(line)
            by_change.setdefault(row["change"], {})[row["code"]] = row
    return by_change


def test_hcpcs_releases_diff_between_the_two_real_releases(indexed_settings, monkeypatch) -> None:
    by_change = releases_diff(indexed_settings, monkeypatch, "hcpcs", "2019", "2025Q1")
    added, changed = by_change["added"], by_change["changed"]
    assert len(added) > 1000 and len(changed) > 500, {k: len(v) for k, v in by_change.items()}
    assert "removed" not in by_change  # CMS keeps a terminated code in later files, with its termination date
    assert "J2919" in added  # methylprednisolone sodium succinate 5 mg, added 2024-04-01
    # kept in 2025 with the termination date it got
    assert str(changed["J2920"]["new_termination_date"]) == "2024-03-31"
    assert changed["J2920"]["old_termination_date"] is None


def test_icd10cm_releases_diff_compares_reported_codes(indexed_settings, monkeypatch) -> None:
    """FY2025 (order file) against FY2026 (Tabular and its 7th-character forms): CDC's yearly change, not 50,000."""
    by_change = releases_diff(indexed_settings, monkeypatch, "icd10cm", "FY2025", "FY2026")
    removed, added = set(by_change.get("removed", {})), set(by_change.get("added", {}))
    assert 0 < len(removed) < 100 and 0 < len(added) < 1000, (len(removed), len(added))
    assert "S30.1XXA" in removed  # contusion of abdominal wall, split by site in FY2026
    assert not any(code.startswith("T39.1X1") for code in removed | added)


def test_the_finder_reports_where_its_time_went(finder) -> None:
    """Each stage's time, summed over the rounds: together no more than the whole call (rounded to 0.01 ms each)."""
    timings = finder.find("stone in the ureter").timings_ms
    stages = ("analysis", "lookups", "candidates", "scoring", "reflect", "related")
    assert all(timings[stage] >= 0 for stage in stages) and timings["lookups"] > 0 and timings["scoring"] > 0
    assert sum(timings[stage] for stage in stages) <= timings["total"] + 0.01 * len(stages)


def test_the_index_release_and_the_vector_leg_are_chosen_by_probing_one_row(indexed_engine) -> None:
    """The FY2025 release holds the Index and FY2026 none; NCD chunks carry vectors and the code documents none."""
    with indexed_engine.connect() as conn:
        has_index = dict(conn.execute(text(
            "SELECT label, medrag_has_index(id) FROM release WHERE source = 'icd10cm'")).all())
        embedded = dict(conn.execute(text(
            "SELECT s, medrag_has_embeddings(s) FROM unnest(ARRAY['ncd', 'icd10cm', 'hcpcs']) AS s")).all())
        # the exact join the probe falls back on when its first documents have no vector
        anywhere = dict(conn.execute(text(
            "SELECT s, medrag_has_embeddings_anywhere(s) FROM unnest(ARRAY['ncd', 'icd10cm', 'hcpcs']) AS s")).all())
    assert has_index["FY2025"] and not has_index["FY2026"]
    assert embedded == anywhere == {"ncd": True, "icd10cm": False, "hcpcs": False}


def test_a_word_is_also_worded_in_the_other_forms_the_index_lists(finder, indexed_engine) -> None:
    """The Tabular writes "Malignant neoplasm of pancreas"; people say "pancreatic cancer". The Index lists "Pancreas,
    pancreatic" and "Testicle, testicular, testis": the loader keeps those pairs, and a typed word is also worded as
    its other forms, in the finder and in the search's full-text query."""
    with indexed_engine.connect() as conn:
        forms = conn.execute(text("SELECT typed, form FROM medrag_word_forms(ARRAY['pancreatic', 'testicles', "
                                  "'eye', 'machinery']) ORDER BY 1, 2")).all()
        text_query = conn.execute(text("SELECT rank_query::text FROM medrag_text_queries('pancreatic')")).scalar_one()
    assert [tuple(row) for row in forms] == [("machinery", "machine"), ("pancreatic", "pancreas"),
                                             ("testicles", "testicular"), ("testicles", "testis")]
    assert "'pancrea'" in text_query and "'pancreat'" in text_query
    search = finder.find("pancreatic cancer", systems=[ICD10CM])
    assert codes_of(search, ICD10CM)[0] == "C25.9", search.trace
    assert "the Index's other form: pancreatic = pancreas (searched both ways)" in search.trace, search.trace
    assert codes_of(finder.find("testicular cancer", systems=[ICD10CM]), ICD10CM)[0].startswith("C62.9")


def test_an_index_entry_naming_two_forms_of_a_typed_word_shares_it_once(finder, indexed_engine) -> None:
    """"Thrombosis > spleen, splenic" holds "spleen" in two forms; for "spleen enlargement" it shares one word of two,
    as "Enlargement > spleen" (see Splenomegaly, R16.1) shares both."""
    with indexed_engine.connect() as conn:
        release = conn.execute(text("SELECT min(release_id) FROM icd10cm_index_entry")).scalar()
        statement = text("SELECT code FROM medrag_code_index_leg(:release, :release, ARRAY['enlarg', 'spleen', "
                         "'splenic'], 5, word_forms => CAST(:forms AS jsonb)) ORDER BY leg_rank")
        grouped = conn.execute(statement, {"release": release, "forms": '{"splenic": "spleen"}'}).scalars().all()
        apart = conn.execute(statement, {"release": release, "forms": "{}"}).scalars().all()
    assert grouped[0] == "R16.1" and grouped != apart, (grouped, apart)
    search = finder.find("spleen enlargement", systems=[ICD10CM])
    assert codes_of(search, ICD10CM)[0] == "R16.1", search.trace
    assert "the Index's other form: spleen = splenic (searched both ways)" in search.trace, search.trace


def test_another_form_explains_a_codes_word_but_is_not_what_the_term_says(finder) -> None:
    """The Index lists "epileptic, epilepticus": a form finds entries and explains a code's word, but "epileptic
    attack" does not say status epilepticus, so G40.909 "... without status epilepticus" is not contradicted; and
    the term's own word is the better evidence: "uterine spasm" is O62.4's uterine contractions, not N85.8's
    "uterus"."""
    epileptic = finder.find("epileptic attack", systems=[ICD10CM])
    assert codes_of(epileptic, ICD10CM)[0] == "G40.909", epileptic.trace
    assert codes_of(finder.find("uterine spasm", systems=[ICD10CM]), ICD10CM)[0] == "O62.4"

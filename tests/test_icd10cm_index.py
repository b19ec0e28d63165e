"""The ICD-10-CM Index parsers on CDC's real FY2025 index XMLs and the labelled derived CSV of the main index."""

from __future__ import annotations

from pathlib import Path

import pytest

from medrag.ingest.archive import safe_extract
from medrag.sources.icd10cm.index import (
    DISEASES,
    DRUGS,
    EXTERNAL_CAUSES,
    NEOPLASMS,
    carried_qualifiers,
    column_alias_rows,
    index_member_kind,
    index_rows,
    parse_derived_index_csv,
    parse_index_files,
    parse_index_xml,
    restore_connective_objects,
)
from medrag.sources.icd10cm.release import parse_order_file
from medrag.sources.icd10cm.xmlfile import Icd10cmFormatError


@pytest.fixture(scope="module")
def fy2025(cms_dir: Path) -> Path:
    return cms_dir / "icd10cm" / "fy2025"


@pytest.fixture(scope="module")
def indexes(fy2025: Path) -> dict[str, object]:
    files = {path.name: path for path in fy2025.iterdir() if index_member_kind(path.name)}
    return {parsed.index_name: parsed for parsed in parse_index_files(files)}


@pytest.fixture(scope="module")
def titles(fy2025: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """FY2025's code titles, from the order file of CDC's code-descriptions zip."""
    extracted = safe_extract(fy2025 / "icd10cm-codes-2025.zip", tmp_path_factory.mktemp("codes"))
    order = next(path for path in extracted if path.name == "icd10cm_order_2025.txt")
    return {row["code"]: row["long_description"] for row in parse_order_file(order)}


def _entry(parsed, *path: str):
    return next(entry for entry in parsed.entries if entry.path == path)


def _path_of(parsed, entry_id: int) -> tuple[str, ...]:
    return next(entry.path for entry in parsed.entries if entry.entry_id == entry_id)


def test_member_names_say_which_index() -> None:
    assert index_member_kind("icd10cm_index_2025.xml") == DISEASES
    assert index_member_kind("sub/icd-10-cm-eindex-2025.xml") == EXTERNAL_CAUSES
    assert index_member_kind("icd10cm_drug_2026.xml") == DRUGS
    assert index_member_kind("icd-10-cm-neoplasm-2025.xml") == NEOPLASMS
    assert index_member_kind("DERIVED-index-to-diseases-2025.csv") == DISEASES
    assert index_member_kind("icd10cm_tabular_2025.xml") is None
    assert index_member_kind("icd10cm-index-2025.xsd") is None


def test_drug_table_rows_have_a_code_per_intent_column(indexes) -> None:
    drugs = indexes[DRUGS]
    assert drugs.columns[0] == "Poisoning Accidental (unintentional)" and drugs.columns[-1] == "Underdosing"
    acetaminophen = _entry(drugs, "Acetaminophen")
    assert acetaminophen.cells["Poisoning Accidental (unintentional)"] == "T39.1X1"
    assert acetaminophen.cells["Adverse effect"] == "T39.1X5"
    rows = [row for row in index_rows(drugs) if row["entry_id"] == acetaminophen.entry_id]
    assert len(rows) == 6 and {row["code"] for row in rows} == {f"T39.1X{n}" for n in range(1, 7)}
    # "--" cells give no row: 1-propanol has no adverse-effect code
    propanol = _entry(drugs, "1-propanol")
    assert "Adverse effect" not in propanol.cells and propanol.cells["Poisoning Assault"] == "T51.3X3"


def test_main_terms_that_send_readers_to_the_drug_table_become_column_aliases(indexes) -> None:
    aliases = indexes[DRUGS].column_aliases
    assert "Overdose, overdosage" in aliases["Poisoning Accidental (unintentional)"]
    assert "Underdosing" in aliases["Underdosing"]
    assert "Overdose, overdosage" not in aliases["Adverse effect"]
    row = next(row for row in index_rows(indexes[DRUGS])
               if row["title"] == "Acetaminophen" and row["column_name"].startswith("Poisoning Accidental"))
    assert "Overdose" in row["search_text"] and row["core_text"] == "Acetaminophen Poisoning Accidental"


def test_a_poisoning_column_is_also_named_as_the_index_names_its_intent(indexes) -> None:
    """"Self-harm NEC > intentional - see Suicide": Suicide names the intentional self-harm column; "Homicide - see
    Assault" and the like name the assault column; a referrer flattened from a path ("Injury, injured NOS
    purposely") names nothing."""
    aliases = indexes[DRUGS].column_aliases
    self_harm, assault = aliases["Poisoning Intentional self-harm"], aliases["Poisoning Assault"]
    assert "Suicide, suicidal (attempted) (by)" in self_harm and "Self-harm intentional" in self_harm
    assert {"Homicide", "Murder", "Manslaughter"} <= set(assault)
    assert not any("Suicide" in alias for alias in aliases["Poisoning Undetermined"] + assault)
    assert not any("," in alias and "Injury" in alias for alias in assault)
    warfarin = next(row for row in index_rows(indexes[DRUGS])
                    if row["title"] == "Warfarin" and row["column_name"] == "Poisoning Intentional self-harm")
    assert "Suicide" in warfarin["search_text"]


def test_a_further_name_the_codes_titles_carry_is_part_of_what_an_entry_says(indexes, titles) -> None:
    """"Fracture, pathological" codes read "Pathological fracture": an entry under it is no plain fracture. S-codes
    never say "traumatic": "Fracture, traumatic" is what a fracture is unless said otherwise. "Epilepsy, epileptic"
    is one word twice, however often titles say "epileptic"."""
    diseases = indexes[DISEASES]
    qualifiers = carried_qualifiers(diseases, titles)
    main = {entry.title: entry.entry_id for entry in diseases.entries if entry.parent_id is None}
    assert qualifiers[main["Fracture, pathological"]] == ("pathological",)
    assert main["Fracture, traumatic"] not in qualifiers
    assert main["Epilepsy, epileptic, epilepsia"] not in qualifiers
    rows = {tuple(row["path"]): row for row in index_rows(diseases, titles)}
    assert rows[("Fracture, pathological", "tibia")]["core_text"] == "Fracture pathological tibia"
    assert rows[("Fracture, traumatic", "tibia")]["core_text"] == "Fracture tibia"
    assert carried_qualifiers(diseases, {}) == {}


def test_entries_that_send_readers_to_a_neoplasm_column_become_its_aliases(indexes) -> None:
    aliases = indexes[NEOPLASMS].column_aliases
    assert {"Carcinoma", "Cancer", "Adenocarcinoma"} <= set(aliases["Malignant Primary"])
    assert "Carcinoma-in-situ" in aliases["Ca in situ"] and "Carcinoma-in-situ" not in aliases["Malignant Primary"]
    assert "Papilloma" in aliases["Benign"] and "Tumor" in aliases["Unspecified Behavior"]
    # only subterms refer to the secondary column: "Metastasis, metastatic > spread", "... > cancer > to specified
    # site" (its "specified site" level left out), "Carcinoma > secondary"
    subterms = indexes[NEOPLASMS].column_subterm_aliases
    assert "Malignant Secondary" not in aliases
    assert {"Metastasis, metastatic spread", "Metastasis, metastatic cancer", "Carcinoma secondary"} \
        <= set(subterms["Malignant Secondary"])
    assert "Carcinoma duct infiltrating" in subterms["Malignant Primary"]  # "... > specified site"
    # "... > cancer > from specified site": the site a term names is where the cancer came from
    assert "Metastasis, metastatic cancer" not in subterms["Malignant Primary"]
    assert not any("specified site" in alias for column in subterms.values() for alias in column)
    rows = index_rows(indexes[NEOPLASMS])
    breast = next(row for row in rows if row["column_name"] == "Malignant Primary"
                  and row["title"].startswith("breast") and row["level"] == 1)
    assert "Carcinoma" in breast["search_text"] and breast["code"].startswith("C50")
    liver = next(row for row in rows if row["column_name"] == "Malignant Secondary" and row["title"] == "liver")
    assert "Metastasis, metastatic spread" in liver["search_text"] and liver["code"] == "C78.7"
    # what only a subterm gives a cell: "argentaffinoma" is a main term's word in the Uncertain Behavior column
    # ("Argentaffinoma - see Neoplasm, uncertain behavior, by site"), a subterm's in the Malignant Primary one
    antrum = {row["column_name"]: row for row in rows if row["title"] == "antrum" and row["level"] == 1}
    assert "argentaffinoma" in antrum["Malignant Primary"]["subterm_text"].split()
    assert "argentaffinoma" not in (antrum["Uncertain Behavior"]["subterm_text"] or "").split()
    assert "carcinoma" in liver["subterm_text"].split() and "metastasis" in liver["subterm_text"].split()
    assert "carcinoma" not in antrum["Malignant Primary"]["subterm_text"].split()  # a main term's word there


def test_each_name_of_a_column_is_kept_level_by_level_with_the_ways_a_level_is_written(indexes) -> None:
    """icd10cm_index_column_alias rows: a level per row, a main term's comma-separated names its ways, NEC left out."""
    rows = column_alias_rows(indexes[NEOPLASMS])
    def levels(column: str, alias: str) -> list[tuple[int, str]]:
        return sorted((row["level_n"], row["variant"]) for row in rows
                      if row["column_name"] == column and row["alias"] == alias)
    assert levels("Malignant Secondary", "Metastasis, metastatic spread") == [(0, "Metastasis"), (0, "metastatic"),
                                                                             (1, "spread")]
    assert levels("Malignant Primary", "Cancer") == [(0, "Cancer")]
    assert levels("Ca in situ", "Carcinoma-in-situ") == [(0, "Carcinoma-in-situ")]
    assert levels("Malignant Secondary", "Neoplasm, neoplastic metastatic NEC") == [
        (0, "Neoplasm"), (0, "neoplastic"), (1, "metastatic")]
    cancer = next(row for row in rows if row["alias"] == "Cancer")
    spread = next(row for row in rows if row["alias"] == "Metastasis, metastatic spread")
    assert not cancer["from_subterm"] and spread["from_subterm"]
    assert {row["index_name"] for row in column_alias_rows(indexes[DRUGS])} == {DRUGS}


def test_external_cause_index_keeps_levels_modifiers_and_references(indexes) -> None:
    external = indexes[EXTERNAL_CAUSES]
    abandonment = _entry(external, "Abandonment NEC")
    assert abandonment.code == "X58" and "(with intent to injure or kill)" in abandonment.nemod
    powered = _entry(external, "Accident", "boat, boating", "striking swimmer", "powered")
    assert powered.level == 3 and powered.code == "V94.11"
    aircraft = _entry(external, "Accident", "aircraft")
    assert aircraft.see_also == "Accident, transport, aircraft" and aircraft.see_entry_id is not None


def test_neoplasm_table_has_a_code_per_behaviour(indexes) -> None:
    neoplasms = indexes[NEOPLASMS]
    cavity = _entry(neoplasms, "Neoplasm, neoplastic", "abdomen, abdominal", "cavity")
    assert cavity.cells["Malignant Primary"] == "C76.2" and cavity.cells["Benign"] == "D36.7"
    assert neoplasms.columns == ("Malignant Primary", "Malignant Secondary", "Ca in situ", "Benign",
                                 "Uncertain Behavior", "Unspecified Behavior")


def test_derived_index_rebuilds_the_tree_and_follows_see_also(indexes) -> None:
    diseases = indexes[DISEASES]
    ureter = _entry(diseases, "Calculus, calculi, calculous", "ureter")
    assert ureter.code == "N20.1" and ureter.nemod == "(impacted) (recurrent)"
    stone = _entry(diseases, "Stone")
    calculus = _entry(diseases, "Calculus, calculi, calculous")
    assert stone.see_also == "Calculus" and stone.see_entry_id == calculus.entry_id
    row = next(row for row in index_rows(diseases) if row["entry_id"] == ureter.entry_id)
    # the reference's words reach every term under the main term it names
    assert "Stone" in row["search_text"] and row["core_text"] == "Calculus ureter"
    assert row["source_file"] == "DERIVED-index-to-diseases-2025.csv"


def test_reference_naming_a_main_term_and_subterm_in_one_phrase_is_followed(indexes) -> None:
    diseases = indexes[DISEASES]
    ear = _entry(diseases, "Infection, infected, infective", "ear")
    media = _entry(diseases, "Otitis", "media")
    assert ear.see_also == "Otitis media" and ear.see_entry_id == media.entry_id  # no comma: Otitis > media
    assert "Infection, infected, infective ear" in media.aliases


def test_reference_with_nonessential_modifiers_names_the_term_without_them(indexes) -> None:
    referrer = next(entry for entry in indexes[DISEASES].entries if entry.see == "Abortion (complete) (spontaneous)")
    assert referrer.path == ("Abortion", "spontaneous")
    assert referrer.see_entry_id == _entry(indexes[DISEASES], "Abortion").entry_id


def test_see_also_within_one_main_term_is_followed_but_is_not_an_alias(indexes) -> None:
    family = _entry(indexes[DISEASES], "History", "family")
    personal = _entry(indexes[DISEASES], "History", "personal")
    assert family.see_also == "History, personal (of)" and family.see_entry_id == personal.entry_id
    assert "History family" not in personal.aliases  # a family history is not a personal one


def test_an_entry_that_only_refers_elsewhere_gives_the_code_it_names(indexes) -> None:
    diseases = indexes[DISEASES]
    # a coder following "Gallstone - see also Calculus, gallbladder" codes K80.20, and "Rubeola - see Measles" B05.9
    assert _entry(diseases, "Gallstone").code == _entry(diseases, "Calculus, calculi, calculous", "gallbladder").code
    assert _entry(diseases, "Rubeola").code == _entry(diseases, "Measles").code == "B05.9"
    # a see-also within one main term names a neighbour, not the same thing: no code from it
    assert _entry(diseases, "History", "family").code is None
    row = next(row for row in index_rows(diseases) if row["path"] == ["Rubeola"])
    assert row["code"] == "B05.9" and row["see"] == "Measles" and row["core_text"] == "Rubeola"


def test_references_are_found_as_a_coder_reads_them(indexes) -> None:
    diseases = indexes[DISEASES]
    # "Fracture" names several main terms: the one the rest of the reference is found under
    hip = _entry(diseases, "Fracture, traumatic", "hip")
    assert hip.see_entry_id == _entry(diseases, "Fracture, traumatic", "femur, femoral", "neck").entry_id
    assert hip.code == "S72.00-"
    # a connective level the reference writes inside one part ("with cholecystitis": with > cholecystitis)
    with_cholecystitis = _entry(diseases, "Gallstone", "with", "cholecystitis")
    named = _entry(diseases, "Calculus, calculi, calculous", "gallbladder", "with", "cholecystitis")
    assert with_cholecystitis.see_entry_id == named.entry_id and with_cholecystitis.code == named.code
    # a plural naming a singular main term ("Complications, enterostomy": Complication > enterostomy)
    assert _entry(diseases, "Complication", "ileostomy").see_entry_id == \
        _entry(diseases, "Complication", "enterostomy").entry_id


def test_a_reference_to_a_name_several_main_terms_share_names_the_one_a_coder_means(indexes) -> None:
    diseases = indexes[DISEASES]
    traumatic, pathological = "Fracture, traumatic", "Fracture, pathological"
    # the referrer's own main term, though "Fracture, pathological" (earlier in the Index) also has a humerus
    humerus = _entry(diseases, traumatic, "arm", "humerus")
    assert humerus.see == "Fracture, humerus" and _entry(diseases, pathological, "humerus")
    assert humerus.see_entry_id == _entry(diseases, traumatic, "humerus").entry_id
    assert humerus.code.startswith("S42.") and "Fracture, traumatic arm humerus" in \
        _entry(diseases, traumatic, "humerus").aliases
    # from another main term, the shared name's largest main term: a broken back is a traumatic fracture
    back = _entry(diseases, "Broken", "back")
    assert back.see == "Fracture, vertebra"
    # (that entry gives no code of its own, its subterms do: nor does the reference, where it gave the pathological
    # M84.48)
    assert _path_of(diseases, back.see_entry_id)[0] == traumatic and back.code is None
    # the bare shared name gives the main term's code, but its words are no other name of its thousands of entries
    bone = _entry(diseases, "Broken", "bone")
    assert bone.see == "Fracture" and bone.see_entry_id == _entry(diseases, traumatic).entry_id
    assert bone.code == _entry(diseases, traumatic).code == "T14.8"
    assert "Broken bone" not in _entry(diseases, traumatic).aliases
    # a name that is a form of the first ("Gout, gouty") is the plain term: "Arthritis > gouty" is another name of it
    assert "Arthritis, arthritic gouty" in _entry(diseases, "Gout, gouty").aliases
    # a reference naming the qualifier stays an alias
    assert "Compression fracture traumatic" in _entry(diseases, traumatic).aliases


def test_a_reference_to_one_neoplasm_table_cell_gives_its_code(indexes) -> None:
    diseases, neoplasms = indexes[DISEASES], indexes[NEOPLASMS]
    tricholemmoma = _entry(diseases, "Tricholemmoma")
    assert tricholemmoma.see == "Neoplasm, skin, benign"
    assert tricholemmoma.code == _entry(neoplasms, "Neoplasm, neoplastic", "skin NOS").cells["Benign"] == "D23.9"
    # a whole column ("Neoplasm, by site, malignant") is an alias of the column, not one cell's code
    assert _entry(diseases, "Carcinoma").code is None


def test_generic_see_also_condition_is_not_an_alias(indexes) -> None:
    condition = _entry(indexes[DISEASES], "Condition")
    assert condition.aliases == []


def test_a_bare_connective_giving_a_code_gets_back_the_words_its_codes_title_says(fy2025, titles) -> None:
    """The derived CSV writes "Gout, gouty > in (due to) renal impairment -> M10.30" as the title "in": M10.30's
    title ("Gout due to renal impairment, unspecified site") gives the words back, and the subterms under it say
    them too; a bare connective whose code's title names nothing after it ("Zoster scleritis") stays bare."""
    files = {path.name: path for path in fy2025.iterdir() if index_member_kind(path.name)}
    diseases = next(parsed for parsed in parse_index_files(files, titles) if parsed.index_name == DISEASES)
    gout = _entry(diseases, "Gout, gouty", "in renal impairment")
    assert gout.code == "M10.30" and gout.nemod == "(due to)"
    assert _entry(diseases, "Gout, gouty", "in renal impairment", "knee").code == "M10.36-"
    assert _entry(diseases, "Hepatitis", "B", "with hepatic coma").code == "B19.11"
    assert _entry(diseases, "Scleritis", "in").code == "B02.34"
    again = parse_derived_index_csv(fy2025 / "DERIVED-index-to-diseases-2025.csv")
    assert [entry.title for entry in restore_connective_objects(again, titles)] == [
        "in renal impairment", "in renal impairment", "with hepatic coma", "in Chagas' disease"]
    assert not restore_connective_objects(parse_derived_index_csv(fy2025 / "DERIVED-index-to-diseases-2025.csv"), {})


def test_title_that_is_all_modifier_keeps_its_words(indexes) -> None:
    persistent = [entry for entry in indexes[DISEASES].entries if entry.title == "(somatoform)"]
    assert persistent and persistent[0].code == "F45.41"


def test_xml_bomb_is_refused_with_one_line(tmp_path: Path) -> None:
    bomb = tmp_path / "icd10cm_index_2025.xml"
    bomb.write_text('<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]>'
                    "<ICD10CM.index><letter><mainTerm><title>&b;</title></mainTerm></letter></ICD10CM.index>")
    with pytest.raises(Icd10cmFormatError, match="declares an entity") as caught:
        parse_index_xml(bomb)
    assert "\n" not in str(caught.value)


def test_truncated_index_xml_names_the_file(fy2025: Path, tmp_path: Path) -> None:
    truncated = tmp_path / "icd-10-cm-eindex-2025.xml"
    truncated.write_bytes((fy2025 / "icd-10-cm-eindex-2025.xml").read_bytes()[:50_000])
    with pytest.raises(Icd10cmFormatError, match=r"icd-10-cm-eindex-2025\.xml: not well-formed XML"):
        parse_index_xml(truncated)


def test_tabular_xml_is_not_an_index(cms_dir: Path) -> None:
    with pytest.raises(Icd10cmFormatError, match=r"root element is <ICD10CM\.tabular>"):
        parse_index_xml(cms_dir / "icd10cm" / "icd10cm_tabular_2021.xml", DISEASES)


def test_derived_csv_with_other_columns_or_encoding_is_refused(tmp_path: Path) -> None:
    wrong = tmp_path / "DERIVED-index-to-diseases-2025.csv"
    wrong.write_text("Term,Code\nHeartburn,R12\n")
    with pytest.raises(Icd10cmFormatError, match="columns"):
        parse_derived_index_csv(wrong)
    wrong.write_bytes(b"RowID,Letter,Level,Term,See,SeeAlso,NonEssModif,Code\n1,A,0,Caf\xe9,,,,R12\n")
    with pytest.raises(Icd10cmFormatError, match="not UTF-8"):
        parse_derived_index_csv(wrong)
    wrong.write_text("RowID,Letter,Level,Term,See,SeeAlso,NonEssModif,Code\n1,A,2,skipped,,,,R12\n")
    with pytest.raises(Icd10cmFormatError, match="line 2"):
        parse_derived_index_csv(wrong)

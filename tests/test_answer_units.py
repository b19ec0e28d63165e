"""The extractive answer on hand-made documents: units, reading chunks back whole, and one test per question type."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from medrag.answer.context import ContextSource
from medrag.answer.evidence import Evidence
from medrag.answer.extractive import extractive_answer
from medrag.answer.reading import ChunkRead, merge_chunks
from medrag.answer.scoring import question_kind, rank_units, unit_pool
from medrag.answer.units import ITEM, LIST, SENTENCE, document_units, line_units
from medrag.answer.validate import Validator
from medrag.core import tuning
from medrag.retrieval.search import Hit

NCD_TEXT = """A. General

Widget therapy uses a small device worn on the arm. It was first described in 1990 and is widely used.

B. Nationally Covered Indications

Widget therapy is covered when all of the following criteria are met:

- Age 40 - 75 years;
- A diagnosis of chronic widget syndrome documented by the treating practitioner; and,
- Failure of 12 weeks of conservative treatment.

Widget therapy is covered once every 12 months for a beneficiary who meets the criteria.

C. Nationally Non-Covered Indications

Widget therapy is not covered for acute widget strain.

(This NCD last reviewed May 2024.)"""


def test_chunks_that_repeat_the_end_of_the_one_before_are_read_once():
    first = "Group I:\n\n- An arterial PO2 at or below 55 mm Hg, taken at rest;or"
    second = "arterial PO2 at or below 55 mm Hg, taken at rest;or\n- An arterial PO2 taken during sleep."
    assert merge_chunks([first, second]) == (
        "Group I:\n\n- An arterial PO2 at or below 55 mm Hg, taken at rest;or\n- An arterial PO2 taken during sleep.")
    assert merge_chunks(["One sentence.", "Another one."]) == "One sentence.\n\nAnother one."
    # the overlap is a lead-in shorter than the probe, followed in the next chunk by a blank line and its list
    lead = "The team must include, at a minimum:"
    assert merge_chunks([f"Collectively, the team decides.\n\n{lead}", f"{lead}\n\n- A physician.\n- A nurse."]) == (
        f"Collectively, the team decides.\n\n{lead}\n\n- A physician.\n- A nurse.")


def test_a_list_is_a_unit_with_its_lead_in_and_no_fragment_or_boilerplate_is_one():
    units = document_units(1, [("Indications and Limitations of Coverage", NCD_TEXT)])
    texts = [unit.text for unit in units]
    whole = next(unit for unit in units if unit.kind == LIST)
    assert whole.text.startswith("Widget therapy is covered when all of the following criteria are met:\n- Age 40")
    assert whole.place == "covered" and whole.subheading == "B. Nationally Covered Indications"
    items = [unit for unit in units if unit.kind == ITEM]
    assert len(items) == 3 and all(item.text.startswith("Widget therapy is covered when") for item in items)
    assert "Widget therapy is covered when all of the following criteria are met:" not in texts  # a lead-in alone
    assert not any("last reviewed" in text for text in texts)
    assert not any(text.startswith(("- ", "A. General", "B. Nationally")) for text in texts)
    places = {unit.text: unit.place for unit in units if unit.kind == SENTENCE}
    assert places["Widget therapy is not covered for acute widget strain."] == "noncovered"
    assert places["Widget therapy uses a small device worn on the arm."] == "background"


NESTED_TEXT = """B. Nationally Covered Indications

Gadget therapy is reasonable and necessary under the following situations:

1. The provider must educate the beneficiary before first use.
2. An initial 12-week period is covered if either of the following criteria are met:
  1. a score greater than or equal to 15 events per hour, or
  2. a score of 5 to 14 events per hour with documented
     daytime sleepiness.
3. The test must be ordered by the treating physician.

Patients are defined using the clinical criteria below:

Group I:

- A level at or below 55 units at rest; or
- A level at or below 55 units during sleep."""


def test_a_nested_criterion_is_one_unit_with_its_sub_items_and_each_sub_item_keeps_its_criterion():
    units = document_units(1, [("Indications and Limitations of Coverage", NESTED_TEXT)])
    texts = [unit.text for unit in units]
    lead = "Gadget therapy is reasonable and necessary under the following situations:"
    criterion = "- An initial 12-week period is covered if either of the following criteria are met:"
    assert (f"{lead}\n{criterion}\n  - a score greater than or equal to 15 events per hour, or\n"
            "  - a score of 5 to 14 events per hour with documented daytime sleepiness.") in texts
    assert ("An initial 12-week period is covered if either of the following criteria are met:\n"
            "- a score greater than or equal to 15 events per hour, or") in texts
    # the sub-items are not items of the outer list, and wrapped text joins its item
    assert f"{lead}\n- a score greater than or equal to 15 events per hour, or" not in texts
    assert not any(text.endswith("daytime sleepiness.") and "documented daytime" not in text for text in texts)


def test_a_numbered_heading_before_its_paragraphs_is_a_heading_not_a_list():
    text = "D. Other\n\n1. Somatic (Acquired) Cancer\n\nMACs may determine coverage of NGS for advanced cancer."
    units = document_units(1, [("Indications and Limitations of Coverage", text)])
    assert [(unit.text, unit.kind, unit.subheading) for unit in units] == [
        ("MACs may determine coverage of NGS for advanced cancer.", SENTENCE, "Somatic (Acquired) Cancer")]


def test_items_chosen_apart_are_quoted_in_document_order_and_a_sentence_an_item_holds_is_not_repeated(engine):
    text = """B. Nationally Covered Indications

Gizmo therapy is covered when all of the following criteria are met:

- A first criterion about gizmo therapy that is long enough to need its own line in every answer we give.
- A second criterion about gizmo therapy that is long enough to need its own line in every answer we give.
- A third criterion about gizmo therapy, stated at 55 mm Hg. Gizmo therapy is covered at 55 mm Hg.
- A fourth criterion about gizmo therapy that is long enough to need its own line in every answer we give.

Gizmo therapy is covered at 55 mm Hg."""
    sources = [_source(1, "ncd", "999.2", "Gizmo Therapy", text)]
    answer = _answer(engine, "Who qualifies for gizmo therapy at 55 mm Hg?", sources)
    quoted = "\n".join(answer)
    assert quoted.count("Gizmo therapy is covered at 55 mm Hg.") == 1
    lines = [line for line in quoted.split("\n") if line.startswith("- ")]
    assert lines == sorted(lines, key=lambda line: ["first", "second", "third", "fourth"].index(line.split()[2]))


def test_a_heading_under_a_lead_in_sentence_keeps_both_as_the_lead_in():
    units = document_units(1, [("Indications and Limitations of Coverage", NESTED_TEXT)])
    items = [unit.text for unit in units if unit.kind == ITEM and "Group I:" in unit.text]
    assert items and all(text.startswith("Patients are defined using the clinical criteria below:\nGroup I:\n- ")
                         for text in items)


def test_a_listing_section_is_a_unit_per_line():
    units = document_units(2, [("Contractors", "Contractors: Noridian (DME MAC 16013).\nStates: KY, OH.")])
    assert [(unit.text, unit.place) for unit in units] == [
        ("Contractors: Noridian (DME MAC 16013).", "listing"), ("States: KY, OH.", "listing")]
    assert [unit.text for unit in line_units(3, "HCPCS E0601: Continuous positive airway pressure (cpap) device")] \
        == ["HCPCS E0601: Continuous positive airway pressure (cpap) device"]


def _source(n: int, source: str, key: str, title: str, text: str, *, similarity: float = 0.7) -> ContextSource:
    hit = Hit(rank=n, score=0.1, source=source, key=key, title=title, heading="", text=text, chunk_id=n,
              document_id=n, release="2026Q4", url=None)
    item = ContextSource(n=n, evidence=Evidence(hit, similarity, False, True), body=text,
                         chunks=[ChunkRead(n, text, similarity)])
    item.units = (line_units(n, text) if source in ("hcpcs", "icd10cm")
                  else document_units(n, [("Indications and Limitations of Coverage", text)]))
    return item


def _answer(engine, question: str, sources: list[ContextSource]) -> list[str]:
    kind = question_kind(engine, question)
    pool = rank_units(unit_pool(question, kind, sources, embedder=None, query_vector=None))
    validator = Validator(engine, sources, support_min=0.5)
    return [draft.text for draft in extractive_answer(pool, validator, max_sentences=6,
                                                      question_type=kind.question_type)]


@pytest.fixture
def widget():
    return [_source(1, "ncd", "999.1", "Widget Therapy", NCD_TEXT)]


def test_an_eligibility_question_gets_the_criteria_list_with_its_lead_in(engine, widget):
    answer = _answer(engine, "Who is eligible for widget therapy?", widget)
    assert any(text.startswith("Widget therapy is covered when all of the following criteria are met:\n- Age 40 - 75")
               and "12 weeks" in text for text in answer)
    assert not any("1990" in text for text in answer)  # background


def test_a_how_often_question_gets_the_frequency(engine, widget):
    answer = _answer(engine, "How often is widget therapy covered?", widget)
    assert any("once every 12 months" in text for text in answer)


def test_a_frequency_written_in_words_is_a_frequency(engine):
    text = NCD_TEXT.replace("Widget therapy is covered once every 12 months for a beneficiary who meets the criteria.",
                            "Widget therapy may be repeated up to six times the first year for a beneficiary.")
    sources = [_source(1, "ncd", "999.1", "Widget Therapy", text)]
    question = "How often is widget therapy covered?"
    pool = unit_pool(question, question_kind(engine, question), sources, embedder=None, query_vector=None)
    stated = [item.features["frequency_for_how_often"] for item in pool if "six times" in item.unit.text]
    assert stated == [1.0]


def test_a_yes_no_question_about_a_non_covered_service_is_answered_as_not_covered(engine, widget):
    answer = _answer(engine, "Is widget therapy covered for acute widget strain?", widget)
    assert answer[0] == "Widget therapy is not covered for acute widget strain."


def test_one_criterion_of_a_short_list_is_quoted_with_its_siblings(engine, widget):
    answer = _answer(engine, "How often is widget therapy covered for patients aged 40 to 75 years?", widget)
    criteria = next(text for text in answer if "Age 40 - 75 years" in text)
    assert "Failure of 12 weeks of conservative treatment" in criteria  # "all of the following": all of them


def test_a_yes_no_question_gets_the_coverage_statement_first(engine):
    text = NCD_TEXT.replace("Widget therapy is not covered for acute widget strain.",
                            "Widget therapy for widget strain is not covered in the home.")
    sources = [_source(1, "ncd", "999.1", "Widget Therapy", text)]
    answer = _answer(engine, "Is widget therapy covered for widget strain at home?", sources)
    assert answer[0] == "Widget therapy for widget strain is not covered in the home."


def test_a_code_question_gets_the_code_description_first(indexed_engine):
    # the real code tables: a quoted code must exist
    sources = [_source(1, "hcpcs", "E0601", "Continuous positive airway pressure (cpap) device",
                       "HCPCS E0601: Continuous positive airway pressure (cpap) device\n"
                       "Category: Durable medical equipment (DME)")]
    answer = _answer(indexed_engine, "What is HCPCS code E0601?", sources)
    assert answer[0] == "HCPCS E0601: Continuous positive airway pressure (cpap) device"


def test_the_question_type_is_read_in_sql(engine):
    assert [question_kind(engine, question).question_type for question in (
        "How often is a screening PSA covered?", "Who qualifies for home oxygen?", "Is CPAP covered?",
        "What does HCPCS E1390 describe?", "What colorectal cancer screening tests does Medicare cover?",
        "Tell me about oxygen")] == ["frequency", "eligibility", "coverage", "code", "eligibility", None]
    # a coder's question states the case first; any of its sentences may ask
    assert [question_kind(engine, question).question_type for question in (
        "A patient has treatment-resistant depression. Will Medicare pay for a vagus nerve stimulator?",
        "How many cardiovascular disease risk reduction visits can a practice bill?",
        "What must each CVD visit include each year?")] == ["coverage", "frequency", "frequency"]
    # "require" asks for criteria as "required" and "requirements" do
    assert question_kind(engine, "What angina severity does Medicare require before it pays for ECP?"
                         ).question_type == "eligibility"


def test_a_long_criteria_list_is_quoted_whole_beyond_the_word_budget_under_one_lead_in(engine):
    # ten criteria of about 20 words each: too long to be one unit, so each is an item; the answer quotes them all
    findings = ["an ulcer", "a fracture", "an infection", "a contracture", "an amputation", "a burn", "a graft",
                "a fistula", "an abscess", "a hematoma"]
    places = ["foot", "hand", "hip", "knee", "spine", "shoulder", "elbow", "wrist", "ankle", "neck"]
    criteria = "\n".join(f"- Criterion {n}: {finding} of the {place} documented by {doctor} within {n + 2} weeks "
                         "of the first visit to the clinic;"
                         for n, (finding, place, doctor) in enumerate(zip(findings, places, [
                             "a surgeon", "an internist", "a podiatrist", "a physiatrist", "a nurse practitioner",
                             "a dermatologist", "an orthopedist", "a neurologist", "a rheumatologist",
                             "a geriatrician"], strict=True), start=1))
    text = f"""B. Nationally Covered Indications

Sprocket therapy is covered for beneficiaries who meet all of the following criteria:

{criteria}

Sprocket therapy is covered in the home setting."""
    sources = [_source(1, "ncd", "999.3", "Sprocket Therapy", text)]
    answer = _answer(engine, "Who qualifies for sprocket therapy?", sources)
    quoted = next(text for text in answer if "Criterion 1:" in text)
    assert quoted.startswith("Sprocket therapy is covered for beneficiaries who meet all of the following criteria:\n")
    assert quoted.count("all of the following criteria") == 1
    assert [line.split()[2] for line in quoted.split("\n")[1:]] == [f"{n}:" for n in range(1, 11)]
    assert sum(len(text.split()) for text in answer) > tuning.value("answer_words")


def test_a_code_question_gets_the_listed_codes_together_as_one_quote(indexed_engine):
    # twenty real HCPCS supply codes (a quoted code must exist), listed as an LCD lists them
    with indexed_engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT h.code, upper(h.short_description) FROM hcpcs_code h JOIN release r ON r.id = h.release_id "
            "AND r.is_current WHERE h.code LIKE 'A4%' AND h.kind = 'procedure' ORDER BY h.code LIMIT 20")).all()
    listing = "\n".join(f"- {code} {description} FOR HOME SPROCKET MONITOR" for code, description in rows)
    source = _source(1, "lcd", "L99999", "Sprocket Monitors", listing)
    source.evidence.exact = True  # the question names the LCD
    source.units = (document_units(1, [("Coverage Indications, Limitations, and/or Medical Necessity",
                                        "Sprocket monitors are covered for beneficiaries with sprocket syndrome.")])
                    + line_units(1, listing, "HCPCS codes", start=1))
    answer = _answer(indexed_engine, "Which HCPCS codes for sprocket monitor supplies does LCD L99999 list?", [source])
    quoted = [text for text in answer if rows[0][0] in text]
    assert len(rows) == 20 and len(quoted) == 1
    assert [line.split()[1] for line in quoted[0].split("\n")] == [code for code, _ in rows]

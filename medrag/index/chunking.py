"""Section-aware chunking sized in the embedding model's own word pieces, so nothing is silently truncated.

A chunk is embedded as ``heading + "\\n" + text``. Sentence-transformers cuts every input at the model's
``max_seq_length`` word pieces (special tokens included) without a warning, so the budget is measured with the
model's own ``tokenizer.json`` (loaded with the ``tokenizers`` library: no torch, fast to import) and every
chunk, heading included, is packed to fit it.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from tokenizers import Tokenizer
from tokenizers.models import WordPiece
from tokenizers.normalizers import NFC, NFD, NFKC, NFKD, BertNormalizer, Lowercase, StripAccents
from tokenizers.pre_tokenizers import BertPreTokenizer, WhitespaceSplit

from medrag.core.errors import MedragError
from medrag.sources.drafts import Section

DEFAULT_MAX_SEQ_LENGTH = 256
DEFAULT_OVERLAP_TOKENS = 32
# Characters every whitespace-splitting tokenizer (and Python) treats as word breaks, mapped to a space.
_SPACES = str.maketrans("\t\n\r", "   ")
_WORD_CACHE_LIMIT = 1_000_000
_BATCH_THRESHOLD = 256
# Normalizers that change characters one by one, so they never join or split words.
_LOCAL_NORMALIZERS = (BertNormalizer, Lowercase, NFC, NFD, NFKC, NFKD, StripAccents)


class TokenizerError(MedragError):
    """The embedding model folder has no usable tokenizer.json / sentence-transformers configuration."""


class TokenCounter:
    """Counts word pieces exactly as the embedding model's tokenizer makes them."""

    def __init__(self, model_path: str | Path) -> None:
        folder = Path(model_path)
        tokenizer_file = folder / "tokenizer.json"
        if not tokenizer_file.is_file():
            raise TokenizerError(
                f"{folder}: no tokenizer.json; MEDRAG_EMBEDDING_MODEL must name a sentence-transformers model folder"
            )
        try:
            self._tokenizer = Tokenizer.from_file(str(tokenizer_file))
        except Exception as exc:  # the Rust side raises plain Exception subclasses for any malformed file
            raise TokenizerError(f"{tokenizer_file}: cannot load tokenizer ({exc})") from exc
        # tokenizer.json files often carry a truncation/padding setting (128 for all-MiniLM-L6-v2) that would
        # make every long text look short: counting must see all of it.
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        self.model_path = folder
        self.max_seq_length = _configured_max_seq_length(folder)
        processor = self._tokenizer.post_processor
        self.special_tokens = processor.num_special_tokens_to_add(False) if processor is not None else 0
        # BERT-style tokenizers split on whitespace before anything else, so the count of texts joined by
        # whitespace is the sum of their counts; chunking then need not re-count what it packed.
        self.is_additive = (
            isinstance(self._tokenizer.model, WordPiece)
            and isinstance(self._tokenizer.pre_tokenizer, BertPreTokenizer | WhitespaceSplit)
            and (self._tokenizer.normalizer is None or isinstance(self._tokenizer.normalizer, _LOCAL_NORMALIZERS))
        )
        self._word_counts: dict[str, int] = {}

    def count(self, text: str) -> int:
        """Word pieces in text, without the special tokens ([CLS]/[SEP]) the model adds."""
        if not self.is_additive:
            return len(self._tokenizer.encode(text, add_special_tokens=False).ids)
        return self.count_many([text])[0]

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """count() for many texts at once."""
        if not self.is_additive:
            return self._raw_counts(list(texts))
        # Sum the counts of the space-separated words, each word tokenised once per process: code documents
        # and manuals repeat a small vocabulary, and a dictionary lookup is far cheaper than tokenising again.
        split_texts = [text.translate(_SPACES).split(" ") for text in texts]
        known = self._word_counts
        needed = set().union(*split_texts)
        missing = needed.difference(known)
        if missing:
            if len(known) + len(missing) > _WORD_CACHE_LIMIT:
                known.clear()
                missing = needed
            words = list(missing)
            known.update(zip(words, self._raw_counts(words), strict=True))
        word_count = known.__getitem__
        return [sum(map(word_count, words)) for words in split_texts]

    def _raw_counts(self, texts: list[str]) -> list[int]:
        """Counts straight from the tokenizer; batches only when large, as a batch call costs a thread pool."""
        if len(texts) < _BATCH_THRESHOLD:
            return [len(self._tokenizer.encode(text, add_special_tokens=False).ids) for text in texts]
        return [len(encoding) for encoding in self._tokenizer.encode_batch_fast(texts, add_special_tokens=False)]

    def budget(self, max_seq_length: int | None = None) -> int:
        """Word pieces a text may have so that, with the special tokens added, nothing is truncated."""
        length = self.max_seq_length if max_seq_length is None else max_seq_length
        return length - self.special_tokens

    def split_by_tokens(self, text: str, max_tokens: int) -> list[str]:
        """Cut text at word-piece boundaries into consecutive pieces of at most max_tokens pieces each."""
        if max_tokens < 1:
            raise ValueError("max_tokens must be at least 1")
        offsets = self._tokenizer.encode(text, add_special_tokens=False).offsets
        pieces: list[str] = []
        start_token = 0
        while start_token < len(offsets):
            end_token = min(start_token + max_tokens, len(offsets))
            # A piece cut out of a word may re-tokenise into more pieces than it had inside the word.
            while True:
                start_char = 0 if not pieces else offsets[start_token][0]
                end_char = len(text) if end_token == len(offsets) else offsets[end_token][0]
                piece = text[start_char:end_char]
                if end_token - start_token <= 1 or self.count(piece) <= max_tokens:
                    break
                end_token -= 1
            pieces.append(piece)
            start_token = end_token
        return [piece for piece in pieces if piece.strip()] or ([text] if text.strip() else [])

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of text (cut at a word boundary when one is near) of at most max_tokens pieces."""
        if self.count(text) <= max_tokens:
            return text
        prefix = self.split_by_tokens(text, max_tokens)[0]
        space = prefix.rfind(" ")
        return prefix[:space].rstrip() if space > len(prefix) // 2 else prefix.rstrip()


def _configured_max_seq_length(folder: Path) -> int:
    """max_seq_length from sentence_bert_config.json (what sentence-transformers truncates at), else 256."""
    config_file = folder / "sentence_bert_config.json"
    if not config_file.is_file():
        return DEFAULT_MAX_SEQ_LENGTH
    try:
        value = json.loads(config_file.read_text(encoding="utf-8")).get("max_seq_length")
    except (OSError, ValueError) as exc:
        raise TokenizerError(f"{config_file}: unreadable ({exc})") from exc
    if value is None:
        return DEFAULT_MAX_SEQ_LENGTH
    if not isinstance(value, int) or value < 8:
        raise TokenizerError(f"{config_file}: max_seq_length {value!r} is not a usable length")
    return value


@cache
def default_token_counter() -> TokenCounter:
    """The TokenCounter of the configured embedding model (MEDRAG_EMBEDDING_MODEL), loaded once."""
    from medrag.core.config import load_settings

    return TokenCounter(load_settings().embedding_model)


# --------------------------------------------------------------------------------------------- sentences

# Words whose trailing period does not end a sentence (checked lower-cased, without the period).
_ABBREVIATIONS = frozenset(
    """
    e.g i.e etc vs al approx dr mr mrs ms no nos sec secs st inc co corp ltd fig figs vol ch pt pts dept
    jan feb mar apr jun jul aug sep sept oct nov dec u.s u.s.c c.f.r cfr ref refs esp resp
    """.split()
)
_ROMAN_NUMERAL = re.compile(r"[ivxlcdm]+", re.IGNORECASE)
_INITIALISM = re.compile(r"(?:[a-z]\.)+[a-z]")  # "u.s", "e.g", "a.m" once the last period is cut off
_SENTENCE_END = re.compile(r"[.!?][\"'\u2019\u201d)\]]*\s+")
_SENTENCE_START = re.compile(r"[A-Z0-9\"'\u2018\u201c(\[§]")


def _ends_sentence(text: str, end: int) -> bool:
    """Whether the punctuation ending at text[end - 1] closes a sentence (not an abbreviation or a list label)."""
    before = text[:end].rstrip("\"'\u2019\u201d)]")
    if not before.endswith("."):
        return True  # ! and ? always end a sentence
    words = before[:-1].split()
    if not words:
        return False
    word = words[-1].lstrip("(\"'\u2018\u201c[")
    lowered = word.lower()
    if lowered in _ABBREVIATIONS or _INITIALISM.fullmatch(lowered):
        return False
    # "A. General", "1. The use of", "iv. Other" open a line as list labels; elsewhere ("Part B.") they end it.
    is_label = len(word) == 1 or (word.isdigit() and len(word) <= 3) or _ROMAN_NUMERAL.fullmatch(word)
    return not (is_label and len(words) == 1)


def split_sentences(text: str) -> list[str]:
    """Sentences of one line of prose, each with its end punctuation; whitespace between them is dropped."""
    sentences: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        following = text[match.end() : match.end() + 1]
        if not following or not _SENTENCE_START.match(following):
            continue
        if not _ends_sentence(text, match.start() + len(match.group(0).rstrip())):
            continue
        sentence = text[start : match.end()].strip()
        if sentence:
            sentences.append(sentence)
        start = match.end()
    rest = text[start:].strip()
    if rest:
        sentences.append(rest)
    return sentences


# --------------------------------------------------------------------------------------------- packing

_PARAGRAPH, _LINE, _SENTENCE, _WORD, _PIECE = range(5)
# What joins two units of each level back together.
_SEPARATOR = {_PARAGRAPH: "\n\n", _LINE: "\n", _SENTENCE: " ", _WORD: " ", _PIECE: ""}
_PARAGRAPH_BREAK = re.compile(r"\n[ \t\r]*\n\s*")


@dataclass(frozen=True)
class TextChunk:
    """One chunk of a section: its text, position in the document, and word pieces of heading + "\\n" + text."""

    text: str
    ordinal: int
    token_count: int


@dataclass(frozen=True)
class _Unit:
    """A paragraph, line, sentence, word or word-piece run, with its word pieces and what precedes it."""

    text: str
    level: int
    tokens: int
    separator: str
    children: tuple[_Unit, ...] = ()


def _paragraph_units(text: str, counter: TokenCounter) -> list[_Unit]:
    """Paragraphs > lines > sentences of a text, every sentence counted once (in one batch)."""
    outline: list[list[tuple[str, list[str]]]] = []
    for paragraph in _PARAGRAPH_BREAK.split(text.strip("\n")):
        # A line's indent (nested list items) is kept; it costs no word pieces.
        lines = [(line[: len(line) - len(line.lstrip())], split_sentences(line)) for line in paragraph.split("\n")]
        lines = [(indent, sentences) for indent, sentences in lines if sentences]
        if lines:
            outline.append(lines)
    sentences = [sentence for lines in outline for _, line in lines for sentence in line]
    counts = iter(counter.count_many(sentences))
    paragraphs = []
    for lines in outline:
        line_units = []
        for indent, line in lines:
            sentence_units = tuple(_Unit(sentence, _SENTENCE, next(counts), _SEPARATOR[_SENTENCE]) for sentence in line)
            line_units.append(_group(sentence_units, _LINE, indent))
        paragraphs.append(_group(tuple(line_units), _PARAGRAPH))
    return paragraphs


def _group(children: tuple[_Unit, ...], level: int, indent: str = "") -> _Unit:
    """A unit made of its children; its word pieces are theirs summed (exact for additive tokenizers)."""
    text = indent + _SEPARATOR[level + 1].join(child.text for child in children)
    return _Unit(text, level, sum(child.tokens for child in children), _SEPARATOR[level], children)


class _Packer:
    """Greedy packing of paragraphs (then lines, sentences, words) into chunks with a sentence overlap."""

    def __init__(self, counter: TokenCounter, available: int, overlap_tokens: int) -> None:
        self.counter = counter
        self.available = available
        self.overlap_tokens = overlap_tokens
        # A sentence longer than this could not share a chunk with the overlap, so it counts as over-long.
        self.atom_limit = available - overlap_tokens
        # A chunk with less new text than this is filled with parts of the next unit rather than closed.
        self.min_fill = available // 3
        self.chunks: list[list[_Unit]] = []
        self.current: list[_Unit] = []
        self.current_tokens = 0
        self.new_tokens = 0

    def add(self, unit: _Unit) -> None:
        """Place one unit, splitting it into smaller units when it cannot go whole."""
        if unit.tokens == 0:
            return
        if unit.tokens <= self.available - self.current_tokens:
            self.append(unit)
            return
        level = unit.level
        fits_fresh = unit.tokens <= self.atom_limit
        if fits_fresh and self.new_tokens > 0 and (level >= _SENTENCE or self.new_tokens >= self.min_fill):
            self.close(room_for=unit.tokens)
            self.append(unit)
        elif level < _SENTENCE or (level < _PIECE and not fits_fresh):
            for child in self.split(unit):
                self.add(child)
        else:
            self.close(room_for=unit.tokens)
            self.append(unit)

    def split(self, unit: _Unit) -> list[_Unit]:
        """The next-smaller units (lines, sentences, words, word-piece runs); the first takes the unit's separator."""
        if unit.level < _SENTENCE:
            children = list(unit.children)
        elif unit.level == _SENTENCE:
            words = unit.text.split()
            counts = self.counter.count_many(words)
            children = [_Unit(word, _WORD, count, " ") for word, count in zip(words, counts, strict=True)]
        else:
            pieces = self.counter.split_by_tokens(unit.text, self.atom_limit)
            counts = self.counter.count_many(pieces)
            children = [_Unit(piece, _PIECE, count, "") for piece, count in zip(pieces, counts, strict=True)]
        if children:
            children[0] = _with_separator(children[0], unit.separator)
        return children

    def append(self, unit: _Unit) -> None:
        """Add a unit to the open chunk."""
        self.current.append(unit)
        self.current_tokens += unit.tokens
        self.new_tokens += unit.tokens

    def close(self, room_for: int = 0) -> None:
        """Finish the open chunk; open the next with this one's trailing sentences, leaving room_for new pieces."""
        if self.new_tokens == 0:
            overlap = self.current
        else:
            self.chunks.append(self.current)
            overlap = self.overlap(self.current)
        while overlap and sum(unit.tokens for unit in overlap) + room_for > self.available:
            overlap = overlap[1:]
        self.current = overlap
        self.current_tokens = sum(unit.tokens for unit in overlap)
        self.new_tokens = 0

    def overlap(self, units: list[_Unit]) -> list[_Unit]:
        """Trailing sentences worth at most overlap_tokens (the tail words of the last one when none fits)."""
        if self.overlap_tokens <= 0:
            return []
        taken: list[_Unit] = []
        total = 0
        for unit in reversed(units):
            for atom in reversed(_sentence_atoms(unit)):
                if total + atom.tokens > self.overlap_tokens:
                    return taken if taken else self.word_tail(atom)
                taken.insert(0, atom)
                total += atom.tokens
        return taken

    def word_tail(self, atom: _Unit) -> list[_Unit]:
        """The last words of an atom, at most overlap_tokens of them (one long word, a URL say, up to twice that)."""
        words = atom.text.split()
        tail = words[-self.overlap_tokens :]  # a word has at least one word piece
        taken: list[_Unit] = []
        total = 0
        for word, tokens in reversed(list(zip(tail, self.counter.count_many(tail), strict=True))):
            if total + tokens > self.overlap_tokens:
                if not taken and tokens <= 2 * self.overlap_tokens:
                    taken.append(_Unit(word, _WORD, tokens, _SEPARATOR[_WORD]))
                break
            taken.insert(0, _Unit(word, _WORD, tokens, _SEPARATOR[_WORD]))
            total += tokens
        return taken

    def finish(self) -> list[list[_Unit]]:
        """All chunks, the open one included."""
        if self.new_tokens:
            self.chunks.append(self.current)
        return self.chunks


def _sentence_atoms(unit: _Unit) -> list[_Unit]:
    """A unit as its sentences (or itself when smaller), the first keeping the unit's own separator."""
    if unit.level >= _SENTENCE:
        return [unit]
    atoms = [atom for child in unit.children for atom in _sentence_atoms(child)]
    if atoms:
        atoms[0] = _with_separator(atoms[0], unit.separator)
    return atoms


def _with_separator(unit: _Unit, separator: str) -> _Unit:
    return _Unit(unit.text, unit.level, unit.tokens, separator, unit.children)


def _join(units: list[_Unit]) -> str:
    """Units back into text, each after its separator (none before the first)."""
    parts = [unit.text if index == 0 else unit.separator + unit.text for index, unit in enumerate(units)]
    return "".join(parts).strip()


def _embedded(heading: str, text: str) -> str:
    return f"{heading}\n{text}"


def chunk_text(
    text: str,
    *,
    heading: str,
    counter: TokenCounter,
    max_tokens: int | None = None,
    overlap_tokens: int = DEFAULT_OVERLAP_TOKENS,
) -> list[TextChunk]:
    """Split one section's text into chunks whose embedded form, heading + "\\n" + text, fits the budget."""
    budget = counter.budget() if max_tokens is None else max_tokens
    if budget > counter.budget():
        raise ValueError(f"max_tokens {budget} exceeds what the model reads ({counter.budget()} word pieces)")
    if overlap_tokens < 0:
        raise ValueError("overlap_tokens must not be negative")
    if not text.strip():
        return []
    heading_tokens = counter.count(heading)
    if heading_tokens > budget // 2:
        raise ValueError(f"heading uses {heading_tokens} of {budget} word pieces; shorten it (see fit_heading)")
    paragraphs = _paragraph_units(text, counter)
    available = budget - heading_tokens
    while available > 0:
        # The overlap may never crowd out new text.
        packer = _Packer(counter, available, min(overlap_tokens, available // 4))
        for paragraph in paragraphs:
            packer.add(paragraph)
        packed = packer.finish()
        texts = [_join(units) for units in packed]
        if counter.is_additive:
            counts = [heading_tokens + sum(unit.tokens for unit in units) for units in packed]
        else:
            counts = counter.count_many([_embedded(heading, chunk) for chunk in texts])
        overflow = max(counts, default=0) - budget
        if overflow <= 0:
            pairs = zip(texts, counts, strict=True)
            return [TextChunk(chunk, ordinal, count) for ordinal, (chunk, count) in enumerate(pairs)]
        # Only a tokenizer whose counts do not add up over whitespace gets here: pack tighter until all fit.
        available -= overflow
    raise AssertionError("unreachable: packing one word piece at a time always fits")


# --------------------------------------------------------------------------------------------- sections


@dataclass(frozen=True)
class SectionChunk:
    """A chunk ready for the chunk table: ordinal across the document, section and pages carried over."""

    heading: str
    text: str
    ordinal: int
    token_count: int
    section: str | None
    page_start: int | None
    page_end: int | None
    content_hash: str

    @property
    def embedded_text(self) -> str:
        """What the embedding model reads: heading, newline, text."""
        return _embedded(self.heading, self.text)


def fit_heading(heading: str, counter: TokenCounter, max_tokens: int) -> str:
    """The heading, cut (with "...") to at most max_tokens word pieces."""
    if counter.count(heading) <= max_tokens:
        return heading
    return counter.truncate(heading, max(1, max_tokens - counter.count("..."))) + "..."


def chunk_sections(
    sections: Iterable[Section],
    *,
    counter: TokenCounter | None = None,
    max_tokens: int | None = None,
    overlap_tokens: int = DEFAULT_OVERLAP_TOKENS,
) -> list[SectionChunk]:
    """Chunk every section of one document; ordinals run across the document in section order."""
    counter = counter or default_token_counter()
    budget = counter.budget() if max_tokens is None else max_tokens
    chunks: list[SectionChunk] = []
    for section in sections:
        heading = fit_heading(section.heading, counter, budget // 2)
        for piece in chunk_text(
            section.text, heading=heading, counter=counter, max_tokens=budget, overlap_tokens=overlap_tokens
        ):
            chunks.append(
                SectionChunk(
                    heading=heading,
                    text=piece.text,
                    ordinal=len(chunks),
                    token_count=piece.token_count,
                    section=section.section,
                    page_start=section.page_start,
                    page_end=section.page_end,
                    content_hash=content_hash(heading, piece.text),
                )
            )
    return chunks


_WHITESPACE = re.compile(r"\s+")


def normalise_text(text: str) -> str:
    """NFC, whitespace runs collapsed to one space, ends stripped: edits that change no embedding input."""
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFC", text)).strip()


def content_hash(*parts: str) -> str:
    """SHA-256 hex of the normalised parts joined by newlines (heading, text): equal hashes need no re-embedding."""
    joined = "\n".join(normalise_text(part) for part in parts)
    return hashlib.sha256(joined.encode("utf-8")).hexdigest()

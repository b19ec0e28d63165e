"""The words an embedding model knows whole, kept beside its vectors so SQL can read them.

A word the model has as one token of its own is a real word ("look", "premium", "catches"), even where the corpus
never uses it: the search and the code finder then leave it as typed instead of "correcting" it to the nearest corpus
word ("loop", "premix", "crutches"). The query embedder reads the same vocabulary (medrag.retrieval.query_embedding)
to decide which corrections it embeds, so both sides agree on what is misspelt.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg

_STORED = "SELECT whole_words IS NOT NULL FROM embedding_model WHERE id = %s"
_COPY_WORDS = "COPY embedding_model_word (model_id, word) FROM STDIN"
_MARK_STORED = "UPDATE embedding_model SET whole_words = %s WHERE id = %s"


def read_whole_words(model_path: str | Path) -> frozenset[str] | None:
    """The words a WordPiece model has as one token of its own (None for another tokenizer, or none to read)."""
    try:
        model = json.loads((Path(model_path) / "tokenizer.json").read_text())["model"]
    except (OSError, ValueError, KeyError):
        return None
    if model.get("type") != "WordPiece":
        return None
    return frozenset(token for token in model["vocab"] if token.isalpha())


def store_model_words(conn: psycopg.Connection[Any], model_id: int, model_path: str | Path) -> int | None:
    """Write a registered model's whole words into embedding_model_word once; how many were written (None: already
    stored). A model without a WordPiece vocabulary stores none, and every word is then judged by the corpus alone."""
    if conn.execute(_STORED, (model_id,)).fetchone()[0]:
        return None  # the usual case, read without a lock: an unchanged refresh writes nothing here
    words = sorted(read_whole_words(model_path) or ())
    with conn.transaction():
        # the model's row locked, then asked again: shards of one refresh embed side by side, the first writes them
        if conn.execute(_STORED + " FOR UPDATE", (model_id,)).fetchone()[0]:
            return None
        with conn.cursor().copy(_COPY_WORDS) as copy:
            for word in words:
                copy.write_row((model_id, word))
        conn.execute(_MARK_STORED, (len(words), model_id))
    return len(words)

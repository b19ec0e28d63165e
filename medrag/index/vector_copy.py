"""chunk_vector rows as one binary COPY buffer, built by numpy instead of a Python call per row.

On a GPU the model makes tens of thousands of vectors a second: per-row adaptation (psycopg's write_row and
pgvector's dumper) would hold the interpreter lock for longer than the model runs. PostgreSQL's binary COPY format
is a signature, then per row a field count and each field as its length and bytes (big-endian), then a trailer;
pgvector's binary vector is its dimension, a reserved int16 and the floats.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

COPY_VECTORS = "COPY chunk_vector (chunk_id, source, model_id, embedding) FROM STDIN WITH (FORMAT BINARY)"
_SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + b"\x00" * 8  # the signature, no flags, no header extension
_TRAILER = b"\xff\xff"


def _row_type(source_bytes: int, dimension: int) -> np.dtype:
    """One row's bytes: the four fields of a chunk_vector row with a source name of this length."""
    return np.dtype([
        ("fields", ">i2"),
        ("id_length", ">i4"), ("chunk_id", ">i8"),
        ("source_length", ">i4"), ("source", f"S{source_bytes}"),
        ("model_length", ">i4"), ("model_id", ">i2"),
        ("vector_length", ">i4"), ("dimension", ">i2"), ("reserved", ">i2"), ("vector", ">f4", (dimension,)),
    ])


def copy_payload(chunk_ids: Sequence[int], sources: Sequence[str], model_id: int, vectors: np.ndarray) -> bytes:
    """The binary COPY stream of COPY_VECTORS for these rows (vectors: one float32 row per chunk id)."""
    ids = np.asarray(chunk_ids, dtype=np.int64)
    names = np.asarray(sources, dtype=object)
    dimension = vectors.shape[1]
    parts = [_SIGNATURE]
    for source in dict.fromkeys(sources):  # a source name is fixed-width within its own rows
        rows = names == source
        encoded = source.encode()
        block = np.empty(int(rows.sum()), dtype=_row_type(len(encoded), dimension))
        block["fields"] = 4
        block["id_length"], block["chunk_id"] = 8, ids[rows]
        block["source_length"], block["source"] = len(encoded), encoded
        block["model_length"], block["model_id"] = 2, model_id
        block["vector_length"], block["dimension"], block["reserved"] = 4 + 4 * dimension, dimension, 0
        block["vector"] = vectors[rows]
        parts.append(block.tobytes())
    parts.append(_TRAILER)
    return b"".join(parts)

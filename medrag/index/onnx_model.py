"""The embedding model without torch: exported once to ONNX (optionally int8), run by onnxruntime in batches.

Both the indexing stage (tens of thousands of chunks) and the query path (one question per CLI call) run the model
through here, so a vector made for a chunk and one made for a question come from the same graph. torch and
sentence-transformers are imported only to make the export, never to run it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import tempfile
import threading
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from medrag.core.config import DEFAULT_EMBEDDING_BACKEND, EMBEDDING_BACKENDS
from medrag.core.errors import MedragError
from medrag.index.encoder import BatchEncoder, TokenBatch, UnsupportedModelError, l2_normalize, mean_pool, read_pipeline

if TYPE_CHECKING:
    import onnxruntime

ONNX_INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
ONNX_OUTPUT_NAME = "token_embeddings"
# Part of every cache key: a change to how the graph is exported or quantised must not reuse files made the old way.
EXPORT_FORMAT = "medrag-onnx-3"
# The exported graph must reproduce the torch model to this (per token-embedding value) or it is not kept.
EXPORT_TOLERANCE = 1e-4
# Dynamic int8 of the MatMul weights, one scale per output channel, except the projections matching
# INT8_KEEP_FLOAT. Measured on 600 random chunk texts of the full corpus against the float export (2 cores):
# every MatMul in int8 ran 2.1x faster at cosine min 0.987 / mean 0.994; keeping the first layer's feed-forward
# output in float (the one projection whose inputs, after GELU, have outliers that a per-tensor activation scale
# crushes) ran 2.1x faster at min 0.991 / mean 0.996, where keeping any other layer or group in float cost up to
# a third of the speed for less. Quantising every operator, or per tensor, fell to a minimum of 0.90 / 0.985.
INT8_OPERATORS = ("MatMul",)
INT8_KEEP_FLOAT = re.compile(r"/layer\.0/output/dense/")

BACKEND_ONNX_INT8, BACKEND_ONNX, BACKEND_TORCH = EMBEDDING_BACKENDS
BACKENDS = EMBEDDING_BACKENDS
DEFAULT_BACKEND = DEFAULT_EMBEDDING_BACKEND


class OnnxModelError(UnsupportedModelError):
    """The model cannot be run through ONNX (unsupported pipeline, or the export failed)."""


def check_backend(backend: str, error: type[MedragError]) -> None:
    """Raise `error` naming the choices when backend is not one of BACKENDS."""
    if backend not in BACKENDS:
        raise error(f"unknown embedding backend {backend!r}: choose one of {', '.join(BACKENDS)}")


def model_fingerprint(model_path: str | Path) -> str:
    """A short hash of the model folder's files (relative path, size, modification time): which installed copy."""
    # Size and mtime rather than the bytes: hashing 90 MB of weights would cost every CLI call ~0.15 s, the very
    # start-up the ONNX path exists to avoid; a re-installed or edited model gets a new mtime and so a new
    # fingerprint, under which its content digest is hashed once (remembered_content_digest).
    folder = Path(model_path)
    digest = hashlib.sha256()
    for path in sorted(item for item in folder.rglob("*") if item.is_file()):
        stat = path.stat()
        digest.update(f"{path.relative_to(folder).as_posix()}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def model_content_digest(model_path: str | Path) -> str:
    """A short hash of the model folder's bytes: the same weights give the same digest on every machine."""
    folder = Path(model_path)
    digest = hashlib.sha256()
    for path in sorted(item for item in folder.rglob("*") if item.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


# cache_dir's folder of remembered content digests, one small file per model folder fingerprint.
DIGESTS_FOLDER = "digests"
_DIGEST = re.compile(r"[0-9a-f]{16}")


def remembered_content_digest(model_path: str | Path, cache_dir: str | Path) -> str:
    """model_content_digest, hashed once per installed copy of a model and then read from cache_dir."""
    # The fingerprint (sizes and modification times) says which copy this is; the digest says what it holds, so
    # a re-installed package or a fresh virtualenv (new modification times, the same weights) finds its export.
    memo = Path(cache_dir) / DIGESTS_FOLDER / model_fingerprint(model_path)
    try:
        remembered = memo.read_text(encoding="ascii").strip()
        if _DIGEST.fullmatch(remembered):
            return remembered
    except (OSError, UnicodeDecodeError):
        pass
    digest = model_content_digest(model_path)
    try:
        _write_atomically(memo, lambda partial: partial.write_text(digest, encoding="ascii"))
    except OSError:
        pass  # a cache this user may not write: the digest is hashed again on the next call
    return digest


def onnx_path_for(model_path: str | Path, cache_dir: str | Path, *, int8: bool = False) -> Path:
    """Where the ONNX export of this model's weights (float or int8) lives in cache_dir: one file however many
    copies of the same weights are installed."""
    suffix = "-int8" if int8 else ""
    key = hashlib.sha256(f"{EXPORT_FORMAT}\0{remembered_content_digest(model_path, cache_dir)}".encode())
    return Path(cache_dir) / f"encoder-{key.hexdigest()[:16]}{suffix}.onnx"


def _write_atomically(target: Path, make: Any) -> None:
    # Written beside its final name and renamed: a CLI call running meanwhile sees no file or a whole one.
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, partial = tempfile.mkstemp(prefix=target.stem + ".", suffix=".partial", dir=target.parent)
    os.close(handle)
    try:
        make(Path(partial))
        os.chmod(partial, 0o644)  # mkstemp's 0600 would hide the export from a CLI run by another user
        os.replace(partial, target)
    finally:
        Path(partial).unlink(missing_ok=True)


# torch's exporter keeps global state: two threads exporting at once (embedding shards) break each other.
_EXPORT_LOCK = threading.Lock()


def export_onnx(model_path: str | Path, cache_dir: str | Path, *, int8: bool = False) -> Path:
    """The ONNX export of the model in cache_dir (made once, then kept), float or dynamically quantised to int8."""
    read_pipeline(model_path)
    with _EXPORT_LOCK:
        return _export_once(model_path, cache_dir, int8)


def _export_once(model_path: str | Path, cache_dir: str | Path, int8: bool) -> Path:
    float_path = onnx_path_for(model_path, cache_dir)
    if not float_path.exists():
        _write_atomically(float_path, lambda partial: _export_with_torch(Path(model_path), partial))
    if not int8:
        return float_path
    int8_path = onnx_path_for(model_path, cache_dir, int8=True)
    if not int8_path.exists():
        _write_atomically(int8_path, lambda partial: _quantize(float_path, partial))
    return int8_path


def _quantize(float_path: Path, target: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    keep_float = [node.name for node in onnx.load(str(float_path)).graph.node
                  if node.op_type in INT8_OPERATORS and INT8_KEEP_FLOAT.search(node.name)]

    # Its advice to pre-process the model (a root-logger warning) is about static, calibrated quantisation.
    logging.disable(logging.WARNING)
    try:
        quantize_dynamic(str(float_path), str(target), op_types_to_quantize=list(INT8_OPERATORS),
                         per_channel=True, weight_type=QuantType.QInt8, nodes_to_exclude=keep_float)
    finally:
        logging.disable(logging.NOTSET)


def _export_with_torch(model_path: Path, target: Path) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    # Eager attention traces to plain MatMul/Softmax; the fused SDPA path is not what the legacy exporter handles.
    model = AutoModel.from_pretrained(str(model_path), attn_implementation="eager").eval()

    class TokenEmbeddings(torch.nn.Module):
        """The transformer by keyword (its positional signature changes between versions), token states out."""

        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            output = self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return output.last_hidden_state

    wrapper = TokenEmbeddings().eval()
    # Two rows, the second padded, so the traced graph keeps the attention-mask arithmetic general.
    input_ids = torch.tensor([[101, 7592, 2088, 2003, 102], [101, 7592, 102, 0, 0]])
    sample = (input_ids, (input_ids != 0).long(), torch.zeros_like(input_ids))
    with torch.no_grad():
        expected = wrapper(*sample).numpy()
    dynamic = {name: {0: "batch", 1: "sequence"} for name in (*ONNX_INPUT_NAMES, ONNX_OUTPUT_NAME)}
    with warnings.catch_warnings(), torch.no_grad():
        # The legacy (TorchScript) exporter works offline without onnxscript; its deprecation and tracer notes
        # are about graphs with data-dependent control flow, which a BERT encoder does not have.
        warnings.simplefilter("ignore")
        torch.onnx.export(
            wrapper,
            sample,
            str(target),
            dynamo=False,
            input_names=list(ONNX_INPUT_NAMES),
            output_names=[ONNX_OUTPUT_NAME],
            dynamic_axes=dynamic,
            opset_version=17,
        )
    session = open_session(target, threads=1)
    feed = dict(zip(ONNX_INPUT_NAMES, (tensor.numpy() for tensor in sample), strict=True))
    actual = session.run([ONNX_OUTPUT_NAME], feed)[0]
    mask = sample[1].numpy().astype(bool)
    error = float(np.abs(actual - expected)[mask].max())
    if error > EXPORT_TOLERANCE:
        raise OnnxModelError(f"the ONNX export of {model_path} differs from the model by {error:.2e}")


def open_session(onnx_path: Path, *, threads: int | None = None) -> onnxruntime.InferenceSession:
    """An onnxruntime CPU session over onnx_path on `threads` threads (onnxruntime's default: one per core)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # errors only: its start-up notes would reach the CLI's stderr
    if threads:
        options.intra_op_num_threads = threads
    return onnxruntime.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])


class OnnxEncoder(BatchEncoder):
    """The model as an onnxruntime session: texts in, unit-length float32 vectors out, in length-sorted batches."""

    def __init__(self, model_path: str | Path, onnx_path: Path, *, threads: int | None = None) -> None:
        super().__init__(model_path)
        self.session = open_session(onnx_path, threads=threads)
        self.dimension = int(self.session.get_outputs()[0].shape[-1])

    def run(self, batch: TokenBatch) -> np.ndarray:
        """The model on one padded batch: mean-pooled, unit-length vectors in the batch's row order."""
        token_embeddings = self.session.run([ONNX_OUTPUT_NAME], batch.feed)[0]
        return l2_normalize(mean_pool(token_embeddings, batch.feed["attention_mask"])).astype(np.float32)

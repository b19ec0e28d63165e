#!/usr/bin/env bash
# Worker container start: migrate the schema, make sure the work pool exists, deploy the flows, then poll the pool.
set -euo pipefail
pool="${MEDRAG_WORK_POOL:-medrag-pool}"
# deploy/prefect.yaml reads both variables.
export MEDRAG_WORK_POOL="$pool" MEDRAG_REFRESH_TIMEZONE="${MEDRAG_REFRESH_TIMEZONE:-America/New_York}"
medrag db migrate
prefect work-pool create "$pool" --type process 2>/dev/null || true
prefect --no-prompt deploy --all --prefect-file deploy/prefect.yaml
# --with-healthcheck: the worker serves /health on PREFECT_WORKER_WEBSERVER_PORT (8080), compose's healthcheck
exec prefect worker start --pool "$pool" --with-healthcheck

"""Prefect flows over medrag's plain stage functions.

The schedule and deployment constants live here, apart from the flow module, so that `medrag --help` and
deploy/prefect.yaml checks can read them without importing Prefect (which costs a second or two).
"""

from __future__ import annotations

import os

DEPLOYMENT_NAME = "quarterly"
FLOW_NAME = "quarterly-refresh"
# A module, not a file: a worker imports it from wherever medrag is installed (a wheel, the image, a checkout).
ENTRYPOINT = "medrag_flows.quarterly_refresh:quarterly_refresh"
# 06:00 on the first day of each calendar quarter: CMS's quarterly HCPCS / MCD / IOM updates take effect then.
QUARTERLY_CRON = "0 6 1 1,4,7,10 *"
TIMEZONE_ENV = "MEDRAG_REFRESH_TIMEZONE"
DEFAULT_TIMEZONE = "America/New_York"
WORK_POOL_ENV = "MEDRAG_WORK_POOL"
DEFAULT_WORK_POOL = "medrag-pool"


def refresh_timezone() -> str:
    """IANA timezone the quarterly cron is read in: MEDRAG_REFRESH_TIMEZONE, else America/New_York."""
    return os.environ.get(TIMEZONE_ENV) or DEFAULT_TIMEZONE


def work_pool_name() -> str:
    """Work pool the deployment is registered for: MEDRAG_WORK_POOL, else medrag-pool."""
    return os.environ.get(WORK_POOL_ENV) or DEFAULT_WORK_POOL

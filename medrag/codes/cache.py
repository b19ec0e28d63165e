"""Warming the code finder's kept answers after a refresh: the recent calls asked again on the new data.

The cache's key holds the data version (sql/finder_cache.sql), so a refresh leaves every kept answer unreachable and
the next ask of each term pays for the finder again, on users' time. `warm_code_cache` asks the most recent calls
again (medrag_code_cache_stale chooses them: those kept under this session's settings that the current data has not
answered) through medrag_find_codes_cached, which keeps the new answers; the refresh flow ends with it and
`medrag db warm` runs it by hand.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError

from medrag.core.errors import MedragError
from medrag.core.progress import track

# Calls asked again by default: at about 0.15 s of finder each on 2 cores (benchmarks/cache_warm.py), about two and a
# half minutes at the end of a refresh.
WARM_CALLS = 1000

_STALE = text("SELECT term, systems, release_label, top, CAST(query_embedding AS text) AS embedding "
              "FROM medrag_code_cache_stale(:most)")
_ASK = text("SELECT medrag_find_codes_cached(:term, CAST(:systems AS text[]), :release_label, :top, "
            "CAST(:embedding AS vector)) ->> 'cached'")


class WarmError(MedragError):
    """The warm-up stopped (the database went away, a call failed); what it kept until then stays kept."""


@dataclass(frozen=True)
class WarmStats:
    """What a warm-up did: calls asked again, those already kept by then (a user asked first), and its seconds."""

    asked: int
    already_kept: int
    seconds: float

    def as_json(self) -> dict[str, float | int]:
        """The stats as a JSON object."""
        return {"asked": self.asked, "already_kept": self.already_kept, "seconds": round(self.seconds, 2)}


def warm_code_cache(engine: Engine, most: int = WARM_CALLS) -> WarmStats:
    """Ask the `most` most recent kept calls that the current data has not answered again, one transaction each,
    so that users' next asks of them are lookups; progress goes to the installed sinks."""
    if most < 0:
        raise WarmError(f"the number of calls to warm must be 0 or more, not {most}")
    started = time.perf_counter()
    asked = already = 0
    try:
        with engine.connect() as conn:
            calls = conn.execute(_STALE, {"most": most}).mappings().all()
            conn.commit()
            with track("code cache: warm", total=len(calls), unit="calls") as tracker:
                for call in calls:
                    already += conn.execute(_ASK, dict(call)).scalar_one() is not None
                    conn.commit()
                    asked += 1
                    tracker.advance()
    except DBAPIError as error:
        first_line = str(error.orig or error).strip().splitlines()[0]
        raise WarmError(f"code cache warm-up stopped after {asked} calls: {first_line}") from error
    return WarmStats(asked, already, time.perf_counter() - started)

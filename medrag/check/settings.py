"""The claim-line check's numbers, named once: medrag_check_lines reads them from medrag_check_settings().

They are definitions, not fitted weights: what makes a code added near a terminated one a candidate for the same drug
or item. A session may override either (`SET medrag.check_candidate_share = 0.6` in psql) to see what it changes.
"""

from __future__ import annotations

from medrag.retrieval.settings import TunedSetting, settings_function_sql

CHECK_SETTINGS: tuple[TunedSetting, ...] = (
    TunedSetting("check_candidate_share", "0.5", "numeric",
                 "a code is a candidate when it holds this share of the ended code's description words, each word "
                 "weighted by how rare it is among the release's descriptions"),
    TunedSetting("check_candidate_days", "92", "integer",
                 "a candidate began at most this many days before or after the ended code's end (a quarter)"),
)


def check_settings_sql() -> str:
    """medrag_check_settings(): the numbers above as one row, each the session's override or its value."""
    heading = "The numbers of medrag_check_lines (medrag/check/settings.py renders this function)"
    return settings_function_sql("medrag_check_settings", CHECK_SETTINGS, heading)

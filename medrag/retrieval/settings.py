"""The tuned numbers of the hybrid search, named once: medrag_search reads them from medrag_search_settings().

`search_settings_sql()` renders that SQL function from SEARCH_SETTINGS; `medrag db migrate` installs it with the
other SQL. A session may override any of them (`SET medrag.rrf_k = 30` in psql; `medrag eval retrieval --set
rrf_k=30` for a measured run), so a change is measured before it is written here. Each value keeps the SQL type
of the literal it replaced, so the arithmetic (numeric or integer) and therefore the ranking stay exactly as tuned.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, event

from medrag.core.errors import MedragError

GUC_PREFIX = "medrag."


@dataclass(frozen=True)
class TunedSetting:
    """One tuned number: its name, value, SQL type and what it does (with what measured it, in docs/search.md)."""

    name: str
    value: str
    sql_type: str
    meaning: str


SEARCH_SETTINGS: tuple[TunedSetting, ...] = (
    TunedSetting("rrf_k", "20", "integer", "RRF constant: a leg's rank r adds 1/(rrf_k + r)"),
    TunedSetting("pool_per_k", "5", "integer", "each leg keeps k * pool_per_k + pool_extra chunks per group"),
    TunedSetting("pool_extra", "20", "integer", "see pool_per_k"),
    TunedSetting("match_budget", "800", "integer", "chunks' worth of the rarer query words that select rows to rank"),
    TunedSetting("trigram_max_chars", "60", "integer", "longest misspelt query the trigram title leg runs for"),
    TunedSetting("fit_weight", "0.1", "numeric", "a code's fit (medrag_code_fit) times this joins its fused score"),
    TunedSetting("hcpcs_vector_offset", "0.08", "numeric",
                  "added to an HCPCS vector's distance when choosing the leading group (its text is a few words)"),
    TunedSetting("sure_margin", "0.1", "numeric", "one group's nearest chunk this much nearer makes the lead sure"),
    TunedSetting("sure_trailing_offset", "2.5", "numeric", "a sure lead: the other group comes in after its third"),
    TunedSetting("unsure_trailing_offset", "0.5", "numeric", "otherwise the other group comes in after its first"),
    TunedSetting("chunks_per_document", "2", "integer", "chunks of one document returned at most"),
    TunedSetting("exact_bonus", "1", "integer", "added to the score of a document the query names exactly"),
)
_BY_NAME = {setting.name: setting for setting in SEARCH_SETTINGS}


class SettingOverrideError(MedragError):
    """A --set override names no search setting or holds no number."""


def parse_overrides(pairs: list[str] | tuple[str, ...]) -> dict[str, str]:
    """`name=value` strings as a checked mapping (unknown names and non-numbers are a one-line error)."""
    overrides = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        setting = _BY_NAME.get(name.strip())
        if setting is None:
            raise SettingOverrideError(f"--set {pair!r}: no search setting {name.strip()!r}; "
                                       f"choose from {', '.join(_BY_NAME)}")
        try:
            int(value) if setting.sql_type == "integer" else float(value)
        except ValueError:
            kind = "a whole number" if setting.sql_type == "integer" else "a number"
            raise SettingOverrideError(f"--set {pair!r}: {setting.name} takes {kind}") from None
        overrides[setting.name] = value.strip()
    return overrides


def apply_overrides(engine: Engine, overrides: dict[str, str]) -> None:
    """Every new connection of the engine runs with these settings: what `SET medrag.<name> = value` does in psql."""
    if not overrides:
        return

    @event.listens_for(engine, "connect")
    def _set_overrides(dbapi_connection: Any, _record: Any) -> None:
        with dbapi_connection.cursor() as cursor:
            for name, value in overrides.items():
                cursor.execute("SELECT set_config(%s, %s, false)", (GUC_PREFIX + name, value))
        dbapi_connection.commit()  # a session setting made in a transaction is undone by its rollback


def settings_function_sql(function: str, settings: tuple[TunedSetting, ...], heading: str) -> str:
    """A SQL function returning one row of the settings, each the session's override (medrag.<name>) or its value."""
    columns = ",\n               ".join(
        f"coalesce(nullif(current_setting('{GUC_PREFIX}{s.name}', true), '')::{s.sql_type}, {s.value}::{s.sql_type})"
        for s in settings)
    signature = ", ".join(f"{s.name} {s.sql_type}" for s in settings)
    comments = "\n".join(f"--   {s.name} ({s.value}): {s.meaning}" for s in settings)
    return f"""
-- {heading}:
{comments}
DROP FUNCTION IF EXISTS {function}();
CREATE FUNCTION {function}()
RETURNS TABLE ({signature})
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT {columns}
$$;
"""


def search_settings_sql() -> str:
    """medrag_search_settings(): one row of the settings, each the session's override or the tuned value."""
    heading = "The tuned numbers of medrag_search (medrag/retrieval/settings.py renders this function)"
    return settings_function_sql("medrag_search_settings", SEARCH_SETTINGS, heading)

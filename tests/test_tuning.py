"""One registry of numbers (medrag/core/tuning.py): the ranking SQL holds no other, and medrag_settings() is it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from medrag.core import tuning

RANKING_SQL = ("search.sql", "finder.sql", "finder_analysis.sql", "finder_candidates.sql", "finder_features.sql",
               "finder_score.sql", "finder_reflect.sql", "finder_choice.sql")
SQL_DIR = Path(__file__).parents[1] / "sql"
# Helpers whose job is a unit or a display, not a ranking: their names say the number they hold.
UNIT_HELPERS = {"medrag_round3": "rounds to 3 places as Python does (2^62 scales a float exactly)",
                "medrag_elapsed_ms": "seconds to milliseconds", "medrag_percent": "a share as a percentage"}
# (function, number) pairs that are a fact of the schema: the trigram indexes hold a text's first 256 characters
# (revision 0027), and the planner uses an index only for the very expression it holds.
SCHEMA_FACTS = {("left", "256")}
# What a number may be besides a setting: 0 and 1; a position (jsonb -> 2, path[2:], ORDER BY 2); the decimal places
# a value is rounded or printed to (round(x, 3), medrag_fixed(x, 2)).
ALLOWED = {"0", "1", "0.0", "1.0"}
PLACES_FUNCTIONS = {"round", "medrag_fixed"}
NUMBER = re.compile(r"(?<![\w.$])\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])")
POSITIONAL_BY = re.compile(r"\b(?:ORDER|GROUP)\s+BY\s+\d+(?:\s+(?:ASC|DESC))?(?:\s*,\s*\d+(?:\s+(?:ASC|DESC))?)*",
                           re.IGNORECASE)
ELEMENT_POSITION = re.compile(r"->>?\s*\d+|\[\s*\d+(?=\s*[:\]])|(?<!:):\s*\d+(?=\s*\])")
FUNCTION_START = re.compile(r"CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+(\w+)", re.IGNORECASE)


def code_only(sql: str) -> str:
    """The SQL with comments and quoted strings blanked out (same length, so positions stay): numbers in words are
    not numbers of the SQL."""
    out, i, n = [], 0, len(sql)
    while i < n:
        if sql.startswith("--", i):
            end = sql.find("\n", i)
            end = n if end < 0 else end
        elif sql[i] in "'\"":
            quote, end = sql[i], i + 1
            while end < n and not (sql[end] == quote and not sql.startswith(quote * 2, end)):
                end += 2 if sql.startswith(quote * 2, end) else 1
            end += 1
        else:
            out.append(sql[i])
            i += 1
            continue
        out.append(" " * (end - i))
        i = end
    return "".join(out)


def _enclosing_call(code: str, at: int) -> str:
    """The name of the function whose argument list holds position `at` ('' when none)."""
    depth = 0
    for i in range(at - 1, -1, -1):
        if code[i] == ")":
            depth += 1
        elif code[i] == "(":
            if depth == 0:
                return re.search(r"(\w*)\s*$", code[:i]).group(1).lower()
            depth -= 1
    return ""


def stray_numbers(sql: str) -> list[tuple[str, str, str]]:
    """(function, number, line) for every number in the SQL's functions that is not allowed (see ALLOWED)."""
    code = code_only(sql)
    for pattern in (POSITIONAL_BY, ELEMENT_POSITION):
        code = pattern.sub(lambda m: re.sub(r"\d", " ", m.group()), code)
    starts = [(m.start(), m.group(1)) for m in FUNCTION_START.finditer(code)]
    found = []
    for index, (start, name) in enumerate(starts):
        if name in UNIT_HELPERS:
            continue
        end = starts[index + 1][0] if index + 1 < len(starts) else len(code)
        for match in NUMBER.finditer(code, start, end):
            number, at = match.group(), match.start()
            if number in ALLOWED:
                continue
            call = _enclosing_call(code, at)
            before, after = code[:at].rstrip(), code[match.end():].lstrip()
            if call in PLACES_FUNCTIONS and before.endswith(",") and after.startswith(")"):
                continue
            if (call, number) in SCHEMA_FACTS:
                continue
            line = sql[sql.rfind("\n", 0, at) + 1:sql.find("\n", at)].strip()
            found.append((name, number, line))
    return found


def test_the_ranking_sql_holds_no_number_but_the_registrys() -> None:
    """Every ranking and threshold number of sql/search.sql and the code finder's sql/finder*.sql is read from
    medrag_settings()."""
    stray = [(file, *item) for file in RANKING_SQL for item in stray_numbers((SQL_DIR / file).read_text())]
    assert stray == []


def test_the_literal_check_finds_a_planted_number_and_passes_what_is_allowed() -> None:
    planted = """
CREATE OR REPLACE FUNCTION medrag_example(x jsonb, n integer) RETURNS float8 LANGUAGE sql AS $$
    -- 0.7 in a comment, 'ICD-10-CM' in a string, "col2" quoted: none is a number
    SELECT round((x ->> 2)::numeric * 1.0, 3)::float8 + medrag_fixed(0, 2)::float8 + 0.75 * n
    FROM t WHERE left(t.title, 256) <> 'x''9' AND t.path[2:3] IS NOT NULL
    GROUP BY 1, 2 ORDER BY 2 DESC, 1 LIMIT 20
$$;
CREATE OR REPLACE FUNCTION medrag_round3(x float8) RETURNS float8 LANGUAGE sql AS $$ SELECT x * 1000 $$;
"""
    assert [(name, number) for name, number, _ in stray_numbers(planted)] == [("medrag_example", "0.75"),
                                                                              ("medrag_example", "20")]


def test_medrag_settings_is_the_registry_and_a_session_overrides_it(indexed_engine) -> None:
    """Each column is its setting's value in its SQL type; a bundle follows its members' overrides."""
    with indexed_engine.connect() as conn:
        row = conn.execute(text("SELECT * FROM medrag_settings()")).mappings().one()
        for setting in tuning.settings():
            assert float(row[setting.name]) == pytest.approx(float(setting.value)), setting.name
        assert row["leg_weights"] == tuning.bundle("leg_weights")
        assert row["tiers"] == [[floor, tier] for tier, floor in tuning.bundle("tiers").items()]
        conn.execute(text("SET medrag.leg_trigram = 0.25"))
        conn.execute(text("SET medrag.default_k = 3"))
        overridden = conn.execute(text("SELECT leg_trigram, leg_weights, default_k FROM medrag_settings()")).one()
        assert overridden.leg_trigram == 0.25 and overridden.leg_weights["trigram"] == 0.25
        assert conn.execute(text("SELECT count(*) FROM medrag_search_text('home oxygen therapy')")).scalar() == 3
        conn.execute(text("RESET medrag.leg_trigram"))
        conn.execute(text("RESET medrag.default_k"))
        assert conn.execute(text("SELECT count(*) FROM medrag_search_text('home oxygen therapy')")).scalar() == 10


def test_an_override_reaches_the_code_finder(indexed_engine) -> None:
    """SET medrag.min_score = 0.99 leaves only codes scored 0.99 or more (a code written in the term scores 1)."""
    finder = text("SELECT r ->> 'code' FROM jsonb_array_elements(medrag_find_codes('E11.9 type 2 diabetes') "
                  "-> 'results') r")
    with indexed_engine.connect() as conn:
        listed = conn.execute(finder).scalars().all()
        conn.execute(text("SET medrag.min_score = 0.99"))
        strict = conn.execute(finder).scalars().all()
        conn.execute(text("RESET medrag.min_score"))
    assert "E11.9" in strict and len(strict) < len(listed)


def test_overrides_are_checked_and_reach_every_connection(indexed_engine) -> None:
    with pytest.raises(tuning.SettingOverrideError, match="no setting 'rrf'"):
        tuning.parse_overrides(["rrf=3"])
    with pytest.raises(tuning.SettingOverrideError, match="max_rounds takes a whole number"):
        tuning.parse_overrides(["max_rounds=2.5"])
    overrides = tuning.parse_overrides(["max_rounds=1", "good_lexical=0.5"])
    engine = create_engine(indexed_engine.url)  # its own pool: the override must not reach other tests
    tuning.apply_overrides(engine, overrides)
    try:
        with engine.connect() as conn:
            assert conn.execute(text("SELECT max_rounds, good_lexical FROM medrag_settings()")).one() == (1, 0.5)
    finally:
        engine.dispose()


def test_the_settings_table_in_the_docs_is_the_registry() -> None:
    doc = (Path(__file__).parents[1] / "docs" / "tuning.md").read_text()
    assert tuning.markdown_table() in doc

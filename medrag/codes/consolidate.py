"""How the code finder weighs its candidates: a score that ranks, a calibrated confidence, tiers.

PostgreSQL scores the candidates (medrag_score_codes in sql/finder_score.sql, which says what the score weighs) and
medrag_find_codes (sql/finder.sql) lists them; the numbers they work by are in the registry (medrag/core/tuning.py,
medrag_settings()), the word lists here (medrag_code_words()). The confidence shown is the probability that a
coder accepts the code, from the score and the code's distance to its system's best (Calibration, fitted on the dev
set by codes/fit.py); a code written in the term and found in the tables is exact (confidence 1).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache

from medrag.core import tuning
from medrag.sources.hcpcs.categories import hcpcs_category_ranges

HIGH, MEDIUM, POSSIBLE = "high", "medium", "possible"
# What a listed code is when no code holds enough of the term (its confidence 0): one of its best partial matches.
GUESS = "guess"
# The numbers (tiers, the score a code needs, the weights, the similarities, the calibration) live in one registry,
# medrag/core/tuning.py; Python reads the few it needs from there.
TIERS = tuple((floor, tier) for tier, floor in tuning.bundle("tiers").items())
MIN_SCORE = tuning.value("min_score")
WEIGHTS = {feature: tuning.value(f"{feature}_weight") for feature in ("lexical", "rank", "specificity", "semantic")}
# Lexemes that say nothing about what a code is.
NEUTRAL_LEXEMES = frozenset({"unspecifi", "nos", "per", "each", "without", "uncompl"})
# Words that ask for what the specificity penalties set aside.
_ASKS_FOR = {
    "accessory": frozenset({"accessori", "attach", "replac", "compon", "part", "add-on", "addit"}),
    "reporting": frozenset({"qualiti", "measur", "report", "document", "mip", "pqrs"}),
    "maternity": frozenset({"pregnanc", "pregnant", "deliveri", "postpartum", "puerperium", "puerper", "labor",
                            "gestat", "matern", "obstetr", "childbirth", "trimest", "antepartum"}),
    "newborn": frozenset({"newborn", "neonat", "perinat", "fetus", "fetal", "infant", "birth"}),
}


@cache
def _reporting_ranges() -> tuple[tuple[str, str], ...]:
    """HCPCS ranges of quality-measure and functional-limitation reporting codes (hcpcs_categories.csv)."""
    return tuple((item.first_code, item.last_code) for item in hcpcs_category_ranges()
                 if "reporting" in item.category.lower())


# The side a wording names, by lexeme: a code of another side than the term's is another code ("Hearing aid,
# monaural" for "hearing aids for both ears", "... left knee" for "right knee").
SIDE_LEXEMES = {"left": "left", "left-sid": "left", "right": "right", "right-sid": "right", "bilater": "both",
                "binaur": "both", "unilater": "one", "monaur": "one"}


def code_words_sql() -> str:
    """medrag_code_words(): the word lists medrag_code_features (sql/finder_features.sql) weighs evidence by,
    rendered from this module into generated.sql (its numbers are medrag_settings())."""
    def literal(value: object) -> str:
        return "'" + json.dumps(value).replace("'", "''") + "'::jsonb"

    neutral = ", ".join(f"'{lexeme}'" for lexeme in sorted(NEUTRAL_LEXEMES))
    columns = [f"ARRAY[{neutral}]::text[] AS neutral_lexemes",
               f"{literal({what: sorted(words) for what, words in _ASKS_FOR.items()})} AS asks_for",
               f"{literal(SIDE_LEXEMES)} AS side_lexemes",
               f"{literal([list(pair) for pair in _reporting_ranges()])} AS reporting_ranges"]
    body = ",\n           ".join(columns)
    return f"""
-- The word lists of the code finder's scoring (medrag/codes/consolidate.py renders this function)
CREATE OR REPLACE FUNCTION medrag_code_words()
RETURNS TABLE (neutral_lexemes text[], asks_for jsonb, side_lexemes jsonb, reporting_ranges jsonb)
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT {body}
$$;
"""


@dataclass(frozen=True)
class Calibration:
    """Scores to probabilities: a logistic curve over a code's score, how far it is behind its system's best and
    whether it is that best, fitted on the dev terms' listed codes (Platt scaling with two more inputs)."""

    score_weight: float
    behind_weight: float
    best_weight: float
    intercept: float


def calibration() -> Calibration:
    """The calibration shipped with medrag (data/confidence_model.json, read through the registry)."""
    return Calibration(**tuning.bundle("calibration"))

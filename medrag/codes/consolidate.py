"""How the code finder weighs its candidates: a score that ranks, a calibrated confidence, tiers.

PostgreSQL scores the candidates (medrag_score_codes in sql/codes.sql, which says what the score weighs) and
medrag_find_codes (sql/finder.sql) lists them; the numbers they work by are named here and rendered into
generated.sql (medrag_code_settings, medrag_code_finder_settings). The confidence shown is the probability that a
coder accepts the code, from the score and the code's distance to its system's best (Calibration, fitted on the dev
set by codes/fit.py); a code written in the term and found in the tables is exact (confidence 1).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from medrag.sources.hcpcs.categories import hcpcs_category_ranges

HIGH, MEDIUM, POSSIBLE = "high", "medium", "possible"
# Tiers of the calibrated confidence (the probability that a coder accepts the code); every listed code is at least
# possible.
TIERS = ((0.8, HIGH), (0.5, MEDIUM), (0.0, POSSIBLE))
# The score a code needs to be listed at all (and below which a system's search is broadened).
MIN_SCORE = 0.3
# How far a system the classifier hears less about is scaled down (medrag_routing_priors); chosen on the dev set.
ROUTING_PRIOR_WEIGHT = 0.3
# The score's weights: fitted on pairs the releases give by `medrag eval fit-ranker` (codes/ranker.py) when its model
# is there, else the hand-set weights before it.
HAND_SET_WEIGHTS = {"lexical": 0.60, "rank": 0.05, "specificity": 0.20, "semantic": 0.15}
RANKER_MODEL_FILE = Path(__file__).parents[1] / "data" / "ranker_model.json"
WEIGHTS = (json.loads(RANKER_MODEL_FILE.read_text())["weights"] if RANKER_MODEL_FILE.exists()
           else HAND_SET_WEIGHTS)
# The calibration of scores into confidences, fitted on the dev terms by `medrag eval fit-confidence` (codes/fit.py).
CONFIDENCE_MODEL_FILE = Path(__file__).parents[1] / "data" / "confidence_model.json"
CALIBRATION_INPUTS = ("score_weight", "behind_weight", "best_weight", "intercept")
# Lookups' weights in reciprocal-rank fusion (RRF_K dampens the difference between neighbouring ranks).
LEG_WEIGHTS = {"exact": 2.0, "words": 1.0, "fulltext": 1.0, "trigram": 0.7, "vector": 1.0, "children": 0.8,
               "index": 1.0}
RRF_K = 20
# Cosine similarities of all-MiniLM-L6-v2 between a term and a code document: below the floor says nothing,
# from the top up it is as good as it gets; a code with less than half of the term in its wording needs
# STRONG_SIMILARITY. Measured: on the dev terms the expected codes' documents lie at 0.41-0.66 (median 0.57); on the
# descriptive dev terms ("patient is allergic to penicillin": Z88.0 at 0.58, its nearest code) at 0.35-0.82, median
# 0.51; gibberish's nearest at <= 0.28. 0.60 -> 0.55 -> 0.50: descriptive dev top-1 / top-5 0.40 / 0.55 -> 0.45 / 0.60
# -> 0.45 / 0.65, dev unchanged; at 0.50 holdout unchanged, second holdout 0.647 / 0.765 -> 0.662 / 0.779.
# Swept with the cap such a code's score keeps (codes/ offline re-ranking of the same candidates, then the finder):
# strong 0.45 and cap 0.55 (was 0.50, 0.45): descriptive dev 0.45 / 0.65 -> 0.50 / 0.725, second holdout top-1
# 0.662 -> 0.676, dev and holdout unchanged; 0.55 as strong lost descriptive top-5, caps above 0.55 gained nothing.
SIMILARITY_FLOOR, SIMILARITY_TOP, STRONG_SIMILARITY = 0.30, 0.70, 0.45
SEMANTIC_ONLY_CAP = 0.55
MIN_COVERAGE = 0.5
# Lexemes that say nothing about what a code is.
NEUTRAL_LEXEMES = frozenset({"unspecifi", "nos", "per", "each", "without", "uncompl"})
INHERITED_TERM_FACTOR = 0.95
# What a HCPCS code's specificity keeps when the release marks it not payable by Medicare (coverage code I). On the
# dev terms 0.8 moved one (screening colonoscopy: S0285 first, now G0121) and 0.6 also lost ondansetron 4 mg (S0119,
# an expected code, fell behind an injection); at 0.8 no holdout term moved.
NOT_MEDICARE_FACTOR = 0.8
HEAD_NOUN_BONUS = 0.05
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


def code_settings_sql() -> str:
    """medrag_code_settings(): the numbers and word lists medrag_score_codes (sql/codes.sql) weighs evidence by,
    rendered from this module into generated.sql."""
    def literal(value: object) -> str:
        return "'" + json.dumps(value).replace("'", "''") + "'::jsonb"

    floats = {"lexical_weight": WEIGHTS["lexical"], "rank_weight": WEIGHTS["rank"],
              "specificity_weight": WEIGHTS["specificity"], "semantic_weight": WEIGHTS["semantic"],
              "similarity_floor": SIMILARITY_FLOOR, "similarity_top": SIMILARITY_TOP,
              "strong_similarity": STRONG_SIMILARITY, "semantic_only_cap": SEMANTIC_ONLY_CAP,
              "min_coverage": MIN_COVERAGE, "inherited_term_factor": INHERITED_TERM_FACTOR,
              "not_medicare_factor": NOT_MEDICARE_FACTOR, "head_noun_bonus": HEAD_NOUN_BONUS}
    columns = [f"{value!r}::float8 AS {name}" for name, value in floats.items()]
    columns += [f"{RRF_K} AS rrf_k", f"{literal(LEG_WEIGHTS)} AS leg_weights",
                "ARRAY[" + ", ".join(f"'{lexeme}'" for lexeme in sorted(NEUTRAL_LEXEMES))
                + "]::text[] AS neutral_lexemes",
                f"{literal({what: sorted(words) for what, words in _ASKS_FOR.items()})} AS asks_for",
                f"{literal(SIDE_LEXEMES)} AS side_lexemes",
                f"{literal([list(pair) for pair in _reporting_ranges()])} AS reporting_ranges"]
    body = ",\n           ".join(columns)
    return f"""
-- The numbers and word lists of the code finder's scoring (medrag/codes/consolidate.py renders this function)
CREATE OR REPLACE FUNCTION medrag_code_settings()
RETURNS TABLE (lexical_weight float8, rank_weight float8, specificity_weight float8, semantic_weight float8,
               similarity_floor float8, similarity_top float8, strong_similarity float8, semantic_only_cap float8,
               min_coverage float8, inherited_term_factor float8, not_medicare_factor float8, head_noun_bonus float8,
               rrf_k integer, leg_weights jsonb, neutral_lexemes text[], asks_for jsonb, side_lexemes jsonb,
               reporting_ranges jsonb)
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


@cache
def calibration(path: Path = CONFIDENCE_MODEL_FILE) -> Calibration:
    """The calibration shipped with medrag (data/confidence_model.json)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return Calibration(*(float(data[name]) for name in CALIBRATION_INPUTS))

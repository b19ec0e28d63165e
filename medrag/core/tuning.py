"""Every ranking and threshold number of medrag, named once: SQL reads them from medrag_settings(), Python from here.

`settings_sql()` renders medrag_settings(): one row, a column per number, each the session's override
(`SET medrag.<name> = value` in psql; `medrag eval ... --set name=value` for a measured run) or its value here.
Settings of one bundle (the lookups' weights, the tiers, the calibration) are also read together, as one jsonb
column. Each value keeps the SQL type of the literal it replaced, so the arithmetic (numeric, integer or double
precision) and therefore every ranking stay exactly as measured. The ranking SQL (sql/search.sql and the code
finder's sql/finder*.sql) holds no other number: tests/test_tuning.py parses it. Where a number was measured is said in
docs/search.md and docs/codes.md; the sweeps behind them are in docs/results/history.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event

from medrag.core.errors import MedragError

GUC_PREFIX = "medrag."
DATA = Path(__file__).parents[1] / "data"
# Fitted numbers come from data files: the confidence calibration always (`medrag eval fit-confidence`), the score's
# weights when a fitted ranker was kept (`medrag eval fit-ranker`; absent, the hand-set weights below stand).
CONFIDENCE_MODEL_FILE = DATA / "confidence_model.json"
RANKER_MODEL_FILE = DATA / "ranker_model.json"
# The answer's refusal gate, fitted on the answer dev set by `medrag eval fit-refusal` (absent: the hand-set value).
REFUSAL_GATE_FILE = DATA / "refusal_gate.json"
HAND_SET_ANSWERABLE_PROBABILITY = 0.15
HAND_SET_WEIGHTS = {"lexical": 0.60, "rank": 0.05, "specificity": 0.20, "semantic": 0.15}
# The search's fusion of legs, fitted by `medrag eval fit-fusion` when kept (absent: the hand-set weights).
FUSION_MODEL_FILE = DATA / "fusion_model.json"
FUSION_SETTINGS = {"vector": "vector_leg_weight", "text": "text_leg_weight", "trigram": "trigram_leg_weight",
                   "fit": "fit_weight"}
HAND_SET_FUSION = {"vector_leg_weight": 1.0, "text_leg_weight": 1.0, "trigram_leg_weight": 1.0, "fit_weight": 0.1}
CALIBRATION_INPUTS = ("score_weight", "behind_weight", "best_weight", "intercept")
SQL_TYPES = ("integer", "numeric", "float8")


@dataclass(frozen=True)
class Setting:
    """One number: its name, value, SQL type, what it does, and the bundle (with its key there) it is also read in."""

    name: str
    value: int | float
    sql_type: str
    meaning: str
    bundle: str = ""
    key: str = ""

    @property
    def literal(self) -> str:
        """The value as SQL reads it."""
        return str(self.value) if self.sql_type == "integer" else repr(float(self.value))


def _integer(name: str, value: int, meaning: str, **bundle: str) -> Setting:
    return Setting(name, value, "integer", meaning, **bundle)


def _numeric(name: str, value: float, meaning: str) -> Setting:
    return Setting(name, value, "numeric", meaning)


def _real(name: str, value: float, meaning: str, **bundle: str) -> Setting:
    return Setting(name, value, "float8", meaning, **bundle)


def _fitted_weights() -> dict[str, float]:
    return json.loads(RANKER_MODEL_FILE.read_text())["weights"] if RANKER_MODEL_FILE.exists() else HAND_SET_WEIGHTS


def _fusion_weights() -> dict[str, float]:
    return json.loads(FUSION_MODEL_FILE.read_text())["weights"] if FUSION_MODEL_FILE.exists() else HAND_SET_FUSION


def _fusion() -> tuple[Setting, ...]:
    weights = _fusion_weights()
    how = "fitted by `medrag eval fit-fusion`" if FUSION_MODEL_FILE.exists() else "hand-set"
    return (
        _numeric("vector_leg_weight", weights["vector_leg_weight"],
                 f"the search's fusion: the vector leg's place r adds this / (rrf_k + r) ({how})"),
        _numeric("text_leg_weight", weights["text_leg_weight"], f"the same for the full-text leg ({how})"),
        _numeric("trigram_leg_weight", weights["trigram_leg_weight"], f"the same for the trigram title leg ({how})"),
        _numeric("fit_weight", weights["fit_weight"], f"a code's fit (medrag_code_fit) times this joins its fused "
                                                      f"score ({how})"),
    )


def _calibration() -> dict[str, float]:
    data = json.loads(CONFIDENCE_MODEL_FILE.read_text(encoding="utf-8"))
    return {name: float(data[name]) for name in CALIBRATION_INPUTS}


SEARCH = (
    _integer("rrf_k", 20, "the search's RRF constant: a leg's rank r adds its weight/(rrf_k + r)"),
    *_fusion(),
    _integer("pool_per_k", 5, "each leg keeps k * pool_per_k + pool_extra chunks per group"),
    _integer("pool_extra", 20, "see pool_per_k"),
    _integer("match_budget", 800, "chunks' worth of the rarer query words that select rows to rank"),
    _integer("text_leg_max_rows", 2000, "matching chunks the full-text leg ranks at most (ranking costs per row)"),
    _integer("trigram_max_chars", 60, "longest misspelt query the trigram title leg runs for"),
    _real("fit_short_share", 0.75, "an HCPCS short description's fit counts this share of a description's",
          bundle="fit", key="short_share"),
    _real("fit_header_factor", 0.6, "a category header's fit is scaled by this", bundle="fit", key="header_factor"),
    _real("fit_measure_factor", 0.4, "a quality-measure code's fit is scaled by this", bundle="fit",
          key="measure_factor"),
    _real("fit_cue_bonus", 0.3, "added to the fit of the code that says what the query says is unknown or absent",
          bundle="fit", key="cue_bonus"),
    _real("fit_default_bonus", 0.05, "added to an ICD-10-CM default's fit: a default wins a tie", bundle="fit",
          key="default_bonus"),
    _numeric("hcpcs_vector_offset", 0.08,
             "added to an HCPCS vector's distance when choosing the leading group (its text is a few words)"),
    _numeric("sure_margin", 0.1, "one group's nearest chunk this much nearer makes the lead sure"),
    _numeric("sure_trailing_offset", 2.5, "a sure lead: the other group comes in after its third"),
    _numeric("unsure_trailing_offset", 0.5, "otherwise the other group comes in after its first"),
    _integer("chunks_per_document", 2, "chunks of one document returned at most"),
    _integer("exact_bonus", 1, "added to the score of a document the query names exactly"),
    _integer("default_k", 10, "results a search returns when k is not given"),
)

SPELLING = (
    _real("spelling_min_similarity", 0.4,
          "least trigram similarity of a correction, in the search and the code finder alike (\"pnuemonia\" -> "
          "pneumonia is 0.43)"),
    _integer("spelling_min_length", 4, "a shorter word is never spelling-corrected"),
    _integer("spelling_max_length_difference", 2, "the search corrects a word to one at most this many letters longer"
                                                  " or shorter"),
    _real("spelling_commonness_weight", 0.05, "the search's correction: similarity + this * log(documents holding it)"),
    _integer("known_word_min_documents", 2, "a corpus word the spelling knows is in at least this many chunks"),
    _integer("code_word_min_length", 3, "the code finder corrects to description words at least this long"),
)

FINDER = (
    _integer("default_top", 5, "codes per system a code search lists when top is not given"),
    _integer("max_top", 50, "most codes per system a code search lists"),
    _integer("max_term_chars", 500, "longest term the code finder takes"),
    _integer("code_cache_rows", 20000, "answers medrag_find_codes_cached keeps, the oldest dropped first (0: none "
                                       "kept)"),
    _integer("max_rounds", 3, "rounds of lookups and reflection at most"),
    _integer("abbreviation_min_support", 2, "an abbreviation of HCPCS short descriptions means its most aligned "
                                            "word once aligned with it this often (medrag.sources.hcpcs)"),
    _integer("trigram_max_words", 2, "the trigram lookup runs for a term of at most this many words"),
    _integer("words_leg_max_concepts", 4, "the description-words lookup runs for a term of at most this many "
                                          "concepts"),
    _integer("leg_limit", 30, "codes each lookup returns (measured on the release pairs at 50, 40, 30 and 20)"),
    _integer("code_vector_ef_search", 100, "hnsw.ef_search of the code finder's vector lookup (its candidate list)"),
    _integer("children_limit", 200, "billable codes a header is narrowed to at most"),
    _integer("index_entries_per_code", 4, "the Index lookup reads this many entries for each code it returns"),
    _integer("min_pattern", 3, "shortest stem the description-words lookup matches (the trigram index needs three)"),
    _real("good_lexical", 0.75, "a best code this lexical leaves nothing to broaden"),
    _integer("max_headers", 5, "headers among the best codes narrowed to their billable codes at most"),
    _real("routing_prior_weight", 0.3, "how far a system the classifier hears less about is scaled down"),
    _real("classify_threshold", 0.3, "a system whose classifier score reaches this is heard (one clear signal "
                                     "does: 1 - e^-w >= 0.3 from w = 0.36)"),
    *(_real("signal_" + signal.replace(" ", "_"), weight, f"the classifier's weight of a {signal} signal",
            bundle="signal_weights", key=signal)
      for signal, weight in (("named code set", 3.0), ("diagnosis word", 1.2), ("diagnosis suffix", 0.9),
                             ("supply", 1.2), ("equipment", 1.2), ("drug", 1.0), ("dose", 1.5), ("service", 0.6),
                             ("ambulance", 1.5), ("modifier", 1.5), ("literal code", 3.0), ("category code", 0.3),
                             ("synonym", 1.0), ("item for", 0.5))),
    _real("min_score", 0.3, "the score a code needs to be listed (and below which its system is broadened)"),
    _real("tier_high", 0.8, "a confidence above this is high", bundle="tiers", key="high"),
    _real("tier_medium", 0.5, "a confidence above this is medium", bundle="tiers", key="medium"),
    _real("tier_possible", 0.0, "every listed code is at least possible", bundle="tiers", key="possible"),
    _real("origin_typed", 1.0, "weight of a concept's wording as typed", bundle="origin_weights", key="typed"),
    _real("origin_compound", 1.0, "weight of a typed word written with its hyphen", bundle="origin_weights",
          key="compound"),
    # Half: the term's own word is the better evidence (1.0, 0.5 and 0 measured on the release pairs; history.md)
    _real("origin_word_form", 0.5, "weight of another form of a typed word the ICD-10-CM Index lists",
          bundle="origin_weights", key="word_form"),
    _real("origin_synonym", 1.0, "weight of a synonym's wording", bundle="origin_weights", key="synonym"),
    _real("origin_index_name", 1.0, "weight of what an ICD-10-CM Index reference calls a run of the term's words",
          bundle="origin_weights", key="index_name"),
    _real("origin_abbreviation", 1.0, "weight of the word a typed HCPCS abbreviation stands for",
          bundle="origin_weights", key="abbreviation"),
    _real("origin_spelling", 0.9, "weight of a spelling correction's wording", bundle="origin_weights",
          key="spelling"),
    _integer("embedding_probe_documents", 20, "current documents probed for vectors before the exact join"),
    _integer("trace_codes_shown", 3, "codes the trace explains per system and round"),
    _integer("trace_signals_shown", 4, "classifier signals the trace names per system"),
)


def _scoring() -> tuple[Setting, ...]:
    weights = _fitted_weights()
    fitted = "fitted by `medrag eval fit-ranker`" if RANKER_MODEL_FILE.exists() else "hand-set"
    calibration = _calibration()
    return (
        *(_real(f"{feature}_weight", weights[feature], f"the score's weight of the {feature} feature ({fitted})")
          for feature in ("lexical", "rank", "specificity", "semantic")),
        _integer("code_rrf_k", 20, "the code lookups' RRF constant: a lookup's place p adds weight/(code_rrf_k + p)"),
        *(_real(f"leg_{leg}", weight, f"weight of the {leg} lookup in the fusion", bundle="leg_weights", key=leg)
          for leg, weight in (("exact", 2.0), ("words", 1.0), ("fulltext", 1.0), ("trigram", 0.7), ("vector", 1.0),
                              ("children", 0.8), ("index", 1.0))),
        _real("rank_places", 10.0, "the rank feature is 1 / (1 + place / rank_places)"),
        _real("precision_floor", 0.4, "a wording's score is coverage * (floor + (1 - floor) * precision)"),
        _real("similarity_floor", 0.30, "a cosine below this says nothing"),
        _real("similarity_top", 0.70, "a cosine from this up is as good as it gets"),
        _real("strong_similarity", 0.45, "a code with less than min_coverage of the term needs this cosine"),
        _real("semantic_only_cap", 0.55, "the score such a code keeps at most"),
        _real("min_coverage", 0.5, "share of the term a code's wording must hold, else it is a guess"),
        _real("inherited_term_factor", 0.95, "a wording inherited from a code above counts this much"),
        _real("head_noun_bonus", 0.05, "an HCPCS code named by the term's head noun gains this"),
        _real("context_concept_bonus", 0.05, "each of a multi-intent term's other concepts a code names gains this "
                                             "share"),
        _real("specificity_header", 0.3, "an ICD-10-CM header (not billable, no 7th character)"),
        _real("specificity_without", 0.9, "an ICD-10-CM code that says \"without\""),
        _real("specificity_other_diagnosis", 0.8, "any other ICD-10-CM code than a default"),
        _real("specificity_unasked_chapter", 0.6, "a maternity or newborn code the term does not ask for (times)"),
        _real("specificity_modifier_asked", 0.9, "an HCPCS modifier, when the term asks for one"),
        _real("specificity_modifier", 0.3, "an HCPCS modifier otherwise"),
        _real("specificity_reporting", 0.4, "a quality-measure reporting code the term does not ask for"),
        _real("specificity_accessory", 0.55, "an accessory of the item the term names"),
        _real("specificity_not_otherwise", 0.6, "an HCPCS \"not otherwise classified\" code"),
        _real("specificity_not_in_lcd", 0.85, "an HCPCS code no current LCD lists"),
        _real("not_medicare_factor", 0.8, "an HCPCS code Medicare does not pay keeps this of its specificity"),
        *(_real(name, value, f"confidence calibration: {name} (`medrag eval fit-confidence`)",
                bundle="calibration", key=name) for name, value in calibration.items()),
    )


def _answerable_probability() -> tuple[float, str]:
    if REFUSAL_GATE_FILE.exists():
        return float(json.loads(REFUSAL_GATE_FILE.read_text())["threshold"]), "fitted by `medrag eval fit-refusal`"
    return HAND_SET_ANSWERABLE_PROBABILITY, "hand-set"


def _answers() -> tuple[Setting, ...]:
    gate, how = _answerable_probability()
    return (
        _real("answerable_probability", gate, f"the sources answer only when their best unit states a required fact "
                                              f"with at least this probability, else the answer is refused ({how})"),
        _real("min_probability", 0.1, "a unit is quoted with at least this probability"),
        _real("relative_probability", 0.25, "and at least this share of the best unit's"),
        _real("same_thing", 0.8, "two units whose content words overlap this much say the same thing"),
        _integer("answer_words", 150, "an extractive answer's words, beyond the list the question asks for"),
        _integer("asked_list_words", 250, "words of the list a question asks for, quoted beyond answer_words"),
        _real("focus_margin", 0.12, "a document is read whole when its chunk is this near the best accepted one's"),
        _integer("focus_documents", 2, "documents read whole at most"),
    )


CHECK = (
    _numeric("check_candidate_share", 0.5,
             "a code is a candidate when it holds this share of the ended code's description words, each word "
             "weighted by how rare it is among the release's descriptions"),
    _integer("check_candidate_days", 92, "a candidate began at most this many days before or after the ended "
                                         "code's end (a quarter)"),
)


@cache
def settings() -> tuple[Setting, ...]:
    """Every setting, in the order medrag_settings() lists them."""
    every = (*SEARCH, *SPELLING, *FINDER, *_scoring(), *_answers(), *CHECK)
    names = [setting.name for setting in every]
    assert len(names) == len(set(names)), "a setting is named twice"
    return every


@cache
def _by_name() -> dict[str, Setting]:
    return {setting.name: setting for setting in settings()}


# This process's --set overrides, for the settings Python reads (the answer's): SQL reads a session's own.
_PROCESS_OVERRIDES: dict[str, str] = {}


def value(name: str) -> Any:
    """A setting's value, or this process's override of it (KeyError for a name that is none)."""
    setting = _by_name()[name]
    typed = _PROCESS_OVERRIDES.get(name)
    if typed is None:
        return setting.value
    return int(typed) if setting.sql_type == "integer" else float(typed)


def bundle(name: str) -> dict[str, Any]:
    """The settings of a bundle by key, in registry order (the tiers high, medium, possible)."""
    return {setting.key: setting.value for setting in settings() if setting.bundle == name}


class SettingOverrideError(MedragError):
    """A --set override names no setting or holds no number."""


def parse_overrides(pairs: list[str] | tuple[str, ...]) -> dict[str, str]:
    """`name=value` strings as a checked mapping (unknown names and non-numbers are a one-line error)."""
    overrides = {}
    for pair in pairs:
        name, _, typed = pair.partition("=")
        setting = _by_name().get(name.strip())
        if setting is None:
            raise SettingOverrideError(f"--set {pair!r}: no setting {name.strip()!r}; "
                                       "`SELECT * FROM medrag_settings()` lists them")
        try:
            int(typed) if setting.sql_type == "integer" else float(typed)
        except ValueError:
            kind = "a whole number" if setting.sql_type == "integer" else "a number"
            raise SettingOverrideError(f"--set {pair!r}: {setting.name} takes {kind}") from None
        overrides[setting.name] = typed.strip()
    return overrides


def override_in_process(overrides: dict[str, str]) -> None:
    """This process's Python readers of the settings see these values (an eval run's --set)."""
    _PROCESS_OVERRIDES.clear()
    _PROCESS_OVERRIDES.update(overrides)


def apply_overrides(engine: Engine, overrides: dict[str, str]) -> None:
    """Every new connection of the engine runs with these settings: what `SET medrag.<name> = value` does in psql."""
    if not overrides:
        return

    @event.listens_for(engine, "connect")
    def _set_overrides(dbapi_connection: Any, _record: Any) -> None:
        with dbapi_connection.cursor() as cursor:
            for name, typed in overrides.items():
                cursor.execute("SELECT set_config(%s, %s, false)", (GUC_PREFIX + name, typed))
        dbapi_connection.commit()  # a session setting made in a transaction is undone by its rollback


def _bundle_sql(name: str, members: list[Setting]) -> str:
    if name == "tiers":  # read in order: [[floor, tier], ...], the first whose floor a confidence passes
        pairs = ", ".join(f"jsonb_build_array(s.{m.name}, '{m.key}')" for m in members)
        return f"jsonb_build_array({pairs}) AS {name}"
    pairs = ", ".join(f"'{m.key}', s.{m.name}" for m in members)
    return f"jsonb_build_object({pairs}) AS {name}"


def settings_sql() -> str:
    """medrag_settings(): one row of every setting, each the session's override or its value, and the bundles."""
    every = settings()
    columns = ",\n                   ".join(
        f"coalesce(nullif(current_setting('{GUC_PREFIX}{s.name}', true), '')::{s.sql_type}, "
        f"{s.literal}::{s.sql_type}) AS {s.name}" for s in every)
    bundles: dict[str, list[Setting]] = {}
    for setting in every:
        if setting.bundle:
            bundles.setdefault(setting.bundle, []).append(setting)
    bundle_columns = ",\n           ".join(_bundle_sql(name, members) for name, members in bundles.items())
    signature = ", ".join([f"{s.name} {s.sql_type}" for s in every] + [f"{name} jsonb" for name in bundles])
    comments = "\n".join(f"--   {s.name} ({s.literal}): {s.meaning}" for s in every)
    return f"""
-- Every ranking and threshold number (medrag/core/tuning.py renders this function); a session overrides one with
-- SET medrag.<name> = value:
{comments}
DROP FUNCTION IF EXISTS medrag_search_settings();
DROP FUNCTION IF EXISTS medrag_check_settings();
DROP FUNCTION IF EXISTS medrag_code_settings();
DROP FUNCTION IF EXISTS medrag_code_finder_settings();
DROP FUNCTION IF EXISTS medrag_settings();
CREATE FUNCTION medrag_settings()
RETURNS TABLE ({signature})
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT s.*,
           {bundle_columns}
    FROM (SELECT {columns}) s
$$;
"""


def markdown_table() -> str:
    """Every setting as a markdown table (docs/tuning.md holds it; tests/test_tuning.py checks it is current)."""
    rows = ["| setting | value | SQL type | bundle | what it does |", "| --- | --- | --- | --- | --- |"]
    rows += [f"| `{s.name}` | {s.literal} | {s.sql_type} | {f'`{s.bundle}`' if s.bundle else ''} | {s.meaning} |"
             for s in settings()]
    return "\n".join(rows)

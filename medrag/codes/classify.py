"""Which code systems a clinical term is about: rule-based intent signals with scores, and literal codes.

Diagnoses are coded in ICD-10-CM; supplies, equipment, drugs (with doses), services and ambulance transport in
HCPCS Level II. A term carries signals for either (disease words and suffixes, supply and equipment nouns, a dose
such as "4 mg"); each signal adds weight to its system and the weights saturate to a 0-1 score. A multi-intent
term ("diabetes a1c test strips") scores for both and both are searched. The rules are named here and run in
PostgreSQL (classification_sql renders them into generated.sql), where psql can call them too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Engine, text

from medrag.core import identifiers
from medrag.core.identifiers import AFTER, AFTER_CATEGORY, BEFORE, CODE_BEFORE
from medrag.core.words import WORD_PATTERN

ICD10CM = "ICD-10-CM"
HCPCS = "HCPCS"
SYSTEMS = (ICD10CM, HCPCS)
# A system is searched when its score reaches classify_threshold (medrag/core/tuning.py); with no signal at all,
# every system is searched.

_DIAGNOSIS_WORDS = frozenset("""
    abscess ache aches acute allergy allergic anemia aneurysm angina anxiety apnea arrhythmia arthritis asthma
    atrophy attack backache bite bleeding blindness broken bronchitis burn burns cancer carcinoma cataract
    chronic cirrhosis colitis concussion condition congenital constipation contusion cough covid cyst deafness
    deficiency degeneration dehydration delirium dementia depression dermatitis diabetes diabetic diagnosis
    diarrhea disease diseases disorder disorders dislocation dizziness dysfunction dysplasia eczema edema
    embolism emphysema epilepsy failure fatigue fever fibrillation flu fracture fractured fractures gangrene
    glaucoma gout headache hemorrhage hepatitis hernia history hypertension hypotension hypothyroidism
    infarction infection infections inflammation influenza injury injuries insomnia laceration lesion leukemia
    lymphoma malaria malignant melanoma migraine nausea neoplasm obesity overdose overweight palsy paralysis
    pain painful pneumonia poisoning pregnancy pregnant rash rupture schizophrenia seizure sepsis shock sickle
    sprain stenosis strain stroke syndrome tear thrombosis toxicity tuberculosis tumor tumour ulcer vomiting
""".split())
# Endings of disease names (arthritis, tuberculosis, anemia, carcinoma, neuropathy, neuralgia, hemiplegia ...).
_DIAGNOSIS_SUFFIXES = ("itis", "osis", "iasis", "emia", "aemia", "oma", "pathy", "algia", "plegia", "paresis",
                       "penia", "trophy", "rrhea", "rrhoea", "uria", "ectasis", "megaly", "cele", "ism", "phobia")
# Words with a disease ending that name something else.
_NOT_DIAGNOSES = frozenset("""
    diagnosis prognosis stoma aroma diploma mechanism organism prism tourism optimism baptism
    dialysis analysis prosthesis orthosis
""".split())

_SUPPLY_WORDS = frozenset("""
    bag bags bandage bandages battery batteries brief briefs cannula catheter catheters cartridge collar
    diaper diapers dressing dressings electrode electrodes filter filters gauze glove gloves insert inserts kit
    lancet lancets mask masks needle needles ostomy pad pads pouch pouches reagent sensor sensors shoe shoes
    sock socks stocking stockings strip strips supplies supply syringe syringes tape tubing underpad wipes
""".split())
_EQUIPMENT_WORDS = frozenset("""
    apparatus bed beds bipap brace braces cane canes commode concentrator cpap crutch crutches cushion cylinder
    device devices dme equipment glasses glucometer hearing humidifier implant lens lenses lift mattress meter
    monitor nebulizer orthosis orthotic oxygen prosthesis prosthetic pump rail scooter seat splint stimulator
    tank tens trapeze ventilator walker walkers wheelchair wheelchairs
""".split())
_DRUG_WORDS = frozenset("""
    capsule drug drugs infusion inhalation inhaler injection injections injectable intramuscular intravenous
    medication oral shot solution subcutaneous suppository tablet tablets vaccine vial
""".split())
_SERVICE_WORDS = frozenset("""
    administration assessment consultation counseling education evaluation exam examination home-health
    management program screening service services session telehealth test testing therapy training visit
""".split())
_AMBULANCE_WORDS = frozenset("ambulance ambulances mileage transport transportation paramedic".split())
_MODIFIER_WORDS = frozenset("modifier modifiers".split())
# Qualifiers that narrow a code: left out of the lookups when a term finds nothing.
QUALIFIER_WORDS = frozenset("""
    acute chronic left right bilateral unilateral severe mild moderate initial subsequent sequela recurrent
    primary secondary upper lower anterior posterior closed open displaced nondisplaced simple complicated
    complex small large mini standard heavy light lightweight new old early late single multiple each both
""".split())

# The patterns the classification runs (in PostgreSQL: classification_sql), written in the regular-expression syntax
# Python's `re` and PostgreSQL's AREs share but for the word edge, which PostgreSQL writes \y. Codes written in a term,
# in any case (medrag.core.identifiers): a bare category needs a digit third there, and none follows a nutrient word
# ("vitamin B17").
_HCPCS_CODE = rf"{CODE_BEFORE}({identifiers.HCPCS}){AFTER}"
_ICD_CODE_DOTTED = rf"{CODE_BEFORE}({identifiers.ICD10CM_DOTTED}){AFTER}"
# A bare three-character category ("E11") may also be a word ("b12" in "vitamin b12"): looked up, it stays searchable;
# a longer bare code is taken out of the words.
_ICD_CODE_BARE = (rf"{CODE_BEFORE}({identifiers.ICD10CM_CATEGORY_IN_TEXT}|{identifiers.ICD10CM_UNDOTTED})"
                  rf"{AFTER_CATEGORY}")
_ICD_CODE_UNDOTTED = rf"{CODE_BEFORE}({identifiers.ICD10CM_UNDOTTED}){AFTER_CATEGORY}"
# The words that ask for a code (medrag.core.identifiers, which the search's SQL reads too); the code set a term names
# is medrag_named_code_set's.
_ASKS_FOR_CODE = rf"{BEFORE}{identifiers.ASKS_FOR_CODE}{AFTER}"
# "not further specified", "type not documented": the code for a detail not known, worded as the Tabular does
_UNSPECIFIED = rf"{BEFORE}(?:{identifiers.UNSPECIFIED_CUE}){AFTER}"
# What a term holds wherever one of these patterns matches it (LIKE patterns): where it holds none, the pattern is
# not run. The words that ask for a code, or name a code set, say "icd", "code" or "hcpcs"; a visit phrase "visit",
# "encounter", "treatment" or "seen"; a sequela "sequela" or "effect"; an unknown detail "not", "unspecified" or
# "unknown".
_ASKS_FOR_CODE_NEEDS = ("%icd%", "%code%", "%hcpcs%")
_ENCOUNTER_NEEDS = ("%visit%", "%encounter%", "%treatment%", "%seen%", "%sequela%", "%effect%")
_UNSPECIFIED_NEEDS = ("%not%", "%unspecified%", "%unknown%")
# The encounter a term names ("broken wrist, first visit"): what an injury code's 7th character says (A initial, D
# subsequent, S sequela), not what the code is for. The visit phrases are set aside like the words that ask for a
# code; "sequela" stays a word to search (I69 "Sequelae of cerebrovascular disease" is a code of its own).
INITIAL, SUBSEQUENT, SEQUELA = "initial", "subsequent", "sequela"
_ENCOUNTER_PHRASES = (
    (INITIAL, r"\b(?:first|initial|1st)\s+(?:visit|encounter|treatment|time\s+seen)\b"),
    (SUBSEQUENT, r"\b(?:follow[- ]?up|subsequent|return|later|second|2nd)\s+(?:visits?|encounters?)\b"),
)
_SEQUELA = r"\b(?:sequela|sequelae|late\s+effects?)\b"
# A dose makes a drug a HCPCS item: "ondansetron 4 mg", "per 10 units".
_DOSE = r"\b\d+(?:\.\d+)?\s*(?:mg|mcg|microgram|micrograms|g|gm|ml|cc|units?|iu|meq)\b"

_ITEM_KINDS = ("supply", "equipment")


@dataclass(frozen=True)
class Signal:
    """One piece of evidence that a term is about a code system."""

    system: str
    kind: str
    text: str
    weight: float

    def describe(self) -> str:
        """'diagnosis word "diabetes"' for the trace."""
        return f'{self.kind} "{self.text}"'


@dataclass(frozen=True)
class Classification:
    """A term's words, its per-system scores and signals, the literal codes in it and its qualifier words."""

    query: str
    words: tuple[str, ...]
    scores: dict[str, float]
    signals: tuple[Signal, ...]
    literal_codes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    wants_modifiers: bool = False
    named: str | None = None  # the code set the term names ("ICD-10 code for ...")
    searched: str = ""  # the term without the words that ask for a code or name the visit: what the lookups search
    encounter: str | None = None  # the encounter it names (INITIAL, SUBSEQUENT, SEQUELA): the 7th character's
    unspecified: tuple[str, ...] = ()  # the phrases that say a detail is not known, searched as "unspecified"
    text: str = ""  # `searched` without the codes written in it: what the word lookups search for

    def describe(self) -> str:
        """One trace line: each system's score and its strongest signals."""
        parts = []
        for system in SYSTEMS:
            signals = [signal.describe() for signal in self.signals if signal.system == system][:4]
            reason = ", ".join(signals) if signals else "no signal"
            parts.append(f"{system} {self.scores[system]:.2f} ({reason})")
        return "classify: " + "; ".join(parts)


_CLASSIFY = text("SELECT medrag_classify_code_term(:term, :named)")


def classify(conn: Connection | Engine, query: str, *, named: str | None = None) -> Classification:
    """Score each code system for a term from the code set it names, its words, doses, literal codes and the synonym
    table's hints (medrag_classify_code_term, rendered by classification_sql). named: a code set the term was found
    to name before (a term classified again after a spelling correction has lost the words that named it)."""
    if isinstance(conn, Engine):
        with conn.connect() as connection:
            return classify(connection, query, named=named)
    return classification_from(query, conn.execute(_CLASSIFY, {"term": query, "named": named}).scalar_one())


def classification_from(query: str, found: dict[str, Any]) -> Classification:
    """The Classification medrag_classify_code_term's jsonb describes."""
    return Classification(
        query, tuple(found["words"]), {system: found["scores"][system] for system in SYSTEMS},
        tuple(Signal(*signal) for signal in found["signals"]),
        {system: tuple(codes) for system, codes in found["literal_codes"]}, found["wants_modifiers"],
        found["named"], found["searched"], found["encounter"], tuple(found["unspecified"]), found["text"])


def sql_regex(pattern: str) -> str:
    """A pattern written for both engines as a PostgreSQL string literal's text: \\b is \\y there, quotes doubled."""
    return pattern.replace(r"\b", r"\y").replace("'", "''")


def sql_text_array(values: Iterable[str]) -> str:
    """ARRAY['a', 'b']::text[] of the values in the order given, quotes doubled: a rule's words rendered into SQL."""
    return "ARRAY[" + ", ".join("'" + value.replace("'", "''") + "'" for value in values) + "]::text[]"


def classification_sql() -> str:
    """medrag_classify_code_term(term, named): the classification above in SQL, from this module's word lists,
    patterns and weights (rendered into generated.sql): one implementation, which the code finder calls."""
    lexicons = {kind: sorted(words) for kind, words in (
        ("supply", _SUPPLY_WORDS), ("equipment", _EQUIPMENT_WORDS), ("drug", _DRUG_WORDS),
        ("service", _SERVICE_WORDS), ("ambulance", _AMBULANCE_WORDS), ("modifier", _MODIFIER_WORDS))}
    hcpcs_kinds = ", ".join(f"'{kind}'" for kind in lexicons)
    words_literal = json.dumps({"diagnosis": sorted(_DIAGNOSIS_WORDS), **lexicons}).replace("'", "''")
    encounters = "\n    ".join(
        f"ELSIF rest ~* '{sql_regex(pattern)}' THEN\n        encounter := '{encounter}';\n"
        f"        rest := medrag_set_aside(rest, '{sql_regex(pattern)}');"
        for encounter, pattern in _ENCOUNTER_PHRASES)
    item_kinds = ", ".join(f"'{kind}'" for kind in _ITEM_KINDS)
    apostrophe = "''''"
    return f"""
-- A term with its regular-expression matches taken out (in any case; none for a NULL pattern), single-spaced and
-- trimmed of punctuation; the term itself when nothing else is left (medrag/codes/classify.py renders this script).
CREATE OR REPLACE FUNCTION medrag_set_aside(term text, pattern text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT coalesce(nullif(btrim(regexp_replace(CASE WHEN pattern IS NULL THEN term
                                                     ELSE regexp_replace(term, pattern, ' ', 'gi') END,
                                                '\\s+', ' ', 'g'), ' ?.,:;'), ''), term)
$$;

-- The lower-case words of a text (hyphenated words and apostrophes kept together), in order.
CREATE OR REPLACE FUNCTION medrag_words_of(term text)
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT coalesce(array_agg(m.found[1] ORDER BY m.n), '{{}}')
    FROM regexp_matches(lower(replace(term, '\u2019', {apostrophe})), '({sql_regex(WORD_PATTERN)})', 'g')
         WITH ORDINALITY AS m(found, n)
$$;

-- The values of an array, each once, in the order first seen.
CREATE OR REPLACE FUNCTION medrag_distinct_in_order(vals text[])
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT coalesce(array_agg(v.val ORDER BY v.first), '{{}}')
    FROM (SELECT t.val, min(t.n) AS first FROM unnest(vals) WITH ORDINALITY AS t(val, n) GROUP BY t.val) v
$$;

-- What one word of a term says about the code systems: [system, kind, word, weight] for each signal, a disease word
-- or ending for ICD-10-CM first, then each HCPCS kind of item that lists it; weights: medrag_settings().signal_weights.
DROP FUNCTION IF EXISTS medrag_code_word_signals(text);
CREATE OR REPLACE FUNCTION medrag_code_word_signals(word text, weights jsonb)
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
    lexicons constant jsonb := '{words_literal}'::jsonb;
    found jsonb := '[]'::jsonb;
    kind text;
BEGIN
    IF lexicons -> 'diagnosis' ? word THEN
        found := jsonb_build_array(jsonb_build_array('{ICD10CM}', 'diagnosis word', word, weights -> 'diagnosis word'));
    ELSIF NOT word = ANY ({sql_text_array(sorted(_NOT_DIAGNOSES))}) AND length(word) > 5
          AND word LIKE ANY ({sql_text_array(sorted("%" + suffix for suffix in _DIAGNOSIS_SUFFIXES))}) THEN
        found := jsonb_build_array(jsonb_build_array('{ICD10CM}', 'diagnosis suffix', word,
                                                     weights -> 'diagnosis suffix'));
    END IF;
    FOREACH kind IN ARRAY ARRAY[{hcpcs_kinds}] LOOP
        IF lexicons -> kind ? word THEN
            found := found || jsonb_build_array(jsonb_build_array('{HCPCS}', kind, word, weights -> kind));
        END IF;
    END LOOP;
    RETURN found;
END
$$;

-- Which code systems a term is about (medrag/codes/classify.py says how): its words, each system's score (the
-- signals' weights saturated to 0-1, rounded as Python rounds), the signals in order, the literal codes per system,
-- whether it asks for modifiers, the code set it names (named: one it was found to name before), the term without
-- the words that ask for a code or name the visit (searched) and without its codes too (text), the encounter it
-- names and the phrases that say a detail is not known.
CREATE OR REPLACE FUNCTION medrag_classify_code_term(term text, named text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $$
DECLARE
    weights constant jsonb := (SELECT signal_weights FROM medrag_settings());
    hcpcs_codes text[];
    icd_codes text[];
    literal jsonb := '[]'::jsonb;
    modifier_codes text[];
    rest text;
    stripped text;
    encounter text;
    unspecified text[];
    words text[];
    signals jsonb := '[]'::jsonb;
    word_signals jsonb;
    following jsonb;
    system_codes jsonb;
    code text;
    signal jsonb;
    icd_total float8 := 0;
    hcpcs_total float8 := 0;
    -- a code has a digit: without one, the code patterns are not run
    has_digit constant boolean := translate(term, '0123456789', '') <> term;
BEGIN
    term := medrag_slashes_spelled_out(term);
    -- Each pattern runs only where the words it needs are (a code's digit, a visit phrase's "visit" ...): a session
    -- caches 32 compiled expressions, fewer than a code search uses, and recompiling one costs more than a match.
    IF has_digit THEN
        hcpcs_codes := medrag_distinct_in_order(ARRAY(
            SELECT upper(m.found[1]) FROM regexp_matches(term, '{sql_regex(_HCPCS_CODE)}', 'gi')
                                          WITH ORDINALITY AS m(found, n) ORDER BY m.n));
        icd_codes := medrag_distinct_in_order(
            ARRAY(SELECT upper(m.found[1]) FROM regexp_matches(term, '{sql_regex(_ICD_CODE_DOTTED)}', 'gi')
                                                WITH ORDINALITY AS m(found, n) ORDER BY m.n)
            || ARRAY(SELECT CASE WHEN length(m.found[1]) <= 3 THEN upper(m.found[1])
                                 ELSE upper(left(m.found[1], 3)) || '.' || upper(substr(m.found[1], 4)) END
                     FROM regexp_matches(term, '{sql_regex(_ICD_CODE_BARE)}', 'gi')
                          WITH ORDINALITY AS m(found, n) ORDER BY m.n));
    ELSE
        hcpcs_codes := '{{}}';
        icd_codes := '{{}}';
    END IF;
    IF cardinality(hcpcs_codes) > 0 THEN
        literal := literal || jsonb_build_array(jsonb_build_array('{HCPCS}', to_jsonb(hcpcs_codes)));
    END IF;
    IF cardinality(icd_codes) > 0 THEN
        literal := literal || jsonb_build_array(jsonb_build_array('{ICD10CM}', to_jsonb(icd_codes)));
    END IF;
    IF term ILIKE ANY ({sql_text_array(sorted(_ASKS_FOR_CODE_NEEDS))}) THEN
        named := coalesce(named, CASE medrag_named_code_set(term) WHEN 'icd10cm' THEN '{ICD10CM}'
                                                                  WHEN 'hcpcs' THEN '{HCPCS}' END);
        rest := medrag_set_aside(term, '{sql_regex(_ASKS_FOR_CODE)}');
    ELSE
        rest := medrag_set_aside(term, NULL);
    END IF;
    IF NOT rest ILIKE ANY ({sql_text_array(sorted(_ENCOUNTER_NEEDS))}) THEN
        NULL;
    {encounters}
    ELSIF rest ~* '{sql_regex(_SEQUELA)}' THEN
        encounter := '{SEQUELA}';
    END IF;
    unspecified := '{{}}';
    IF rest ILIKE ANY ({sql_text_array(sorted(_UNSPECIFIED_NEEDS))}) THEN
        unspecified := ARRAY(SELECT regexp_replace(lower(m.found[1]), '\\s+', ' ', 'g')
                             FROM regexp_matches(rest, '({sql_regex(_UNSPECIFIED)})', 'gi')
                                  WITH ORDINALITY AS m(found, n) ORDER BY m.n);
    END IF;
    IF cardinality(unspecified) > 0 THEN
        rest := regexp_replace(rest, '({sql_regex(_UNSPECIFIED)})', 'unspecified', 'gi');
    END IF;
    stripped := rest;
    IF translate(rest, '0123456789', '') <> rest THEN
        stripped := regexp_replace(regexp_replace(regexp_replace(rest,
            '{sql_regex(_HCPCS_CODE)}', ' ', 'gi'), '{sql_regex(_ICD_CODE_DOTTED)}', ' ', 'gi'),
            '{sql_regex(_ICD_CODE_UNDOTTED)}', ' ', 'gi');
    END IF;
    stripped := btrim(regexp_replace(stripped, '\\s+', ' ', 'g'));
    words := medrag_words_of(stripped);
    IF words && {sql_text_array(sorted(_MODIFIER_WORDS))} THEN
        -- "KX modifier", "modifier RT": two-character tokens are modifier codes to look up exactly
        -- a word of two characters is two letters or digits (a hyphen or apostrophe joins longer ones)
        modifier_codes := ARRAY(SELECT upper(w) FROM unnest(words) AS w WHERE length(w) = 2);
        IF cardinality(modifier_codes) > 0 AND cardinality(hcpcs_codes) > 0 THEN
            literal := jsonb_set(literal, '{{0,1}}', to_jsonb(medrag_distinct_in_order(hcpcs_codes || modifier_codes)));
        ELSIF cardinality(modifier_codes) > 0 THEN
            literal := literal || jsonb_build_array(jsonb_build_array('{HCPCS}',
                                                                      to_jsonb(medrag_distinct_in_order(modifier_codes))));
        END IF;
    END IF;
    IF named IS NOT NULL THEN
        signals := signals || jsonb_build_array(jsonb_build_array(named, 'named code set', named,
                                                                  weights -> 'named code set'));
    END IF;
    FOR system_codes IN SELECT value FROM jsonb_array_elements(literal) LOOP
        FOR code IN SELECT jsonb_array_elements_text(system_codes -> 1) LOOP
            signals := signals || jsonb_build_array(jsonb_build_array(
                system_codes ->> 0, 'literal code', code,
                CASE WHEN length(code) = 3 THEN weights -> 'category code' ELSE weights -> 'literal code' END));
        END LOOP;
    END LOOP;
    FOR i IN 1 .. cardinality(words) LOOP
        -- read as the next word before
        word_signals := coalesce(following, medrag_code_word_signals(words[i], weights));
        following := CASE WHEN i < cardinality(words) THEN medrag_code_word_signals(words[i + 1], weights)
                          ELSE '[]' END;
        IF EXISTS (SELECT 1 FROM jsonb_array_elements(word_signals) AS s(signal) WHERE s.signal ->> 0 = '{ICD10CM}')
           AND EXISTS (SELECT 1 FROM jsonb_array_elements(following) AS s(signal)
                       WHERE s.signal ->> 1 IN ({item_kinds})) THEN
            -- "diabetic shoes", "apnea monitor": the condition names what the item is for
            word_signals := jsonb_build_array(jsonb_build_array('{HCPCS}', 'item for', words[i] || ' ' || words[i + 1],
                                                                weights -> 'item for'));
        END IF;
        signals := signals || word_signals;
    END LOOP;
    signals := signals || coalesce((
        SELECT jsonb_agg(jsonb_build_array('{HCPCS}', 'dose', regexp_replace(lower(m.found[1]), '\\s+', ' ', 'g'),
                                           weights -> 'dose') ORDER BY m.n)
        FROM regexp_matches(term, '({sql_regex(_DOSE)})', 'gi') WITH ORDINALITY AS m(found, n)
        WHERE has_digit), '[]');
    signals := signals || coalesce((
        SELECT jsonb_agg(jsonb_build_array(s.system, 'synonym', match.term, weights -> 'synonym')
                         ORDER BY match.start_at, s.n)
        FROM medrag_code_synonym_matches(words) AS match,
             jsonb_array_elements_text(medrag_code_synonyms() -> match.term -> 'systems') WITH ORDINALITY
                 AS s(system, n)), '[]');
    -- summed in the signals' order, as Python sums them
    FOR signal IN SELECT value FROM jsonb_array_elements(signals) LOOP
        IF signal ->> 0 = '{ICD10CM}' THEN
            icd_total := icd_total + (signal ->> 3)::float8;
        ELSE
            hcpcs_total := hcpcs_total + (signal ->> 3)::float8;
        END IF;
    END LOOP;
    RETURN jsonb_build_object(
        'words', to_jsonb(words),
        'scores', jsonb_build_object('{ICD10CM}', medrag_round3(1 - exp(-icd_total)),
                                     '{HCPCS}', medrag_round3(1 - exp(-hcpcs_total))),
        'signals', signals, 'literal_codes', literal,
        'wants_modifiers', EXISTS (SELECT 1 FROM jsonb_array_elements(signals) AS s(signal)
                                   WHERE s.signal ->> 1 = 'modifier'),
        'named', named, 'searched', rest, 'text', stripped, 'encounter', encounter,
        'unspecified', to_jsonb(unspecified));
END
$$;
"""

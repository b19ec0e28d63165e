"""Which code systems a clinical term is about: rule-based intent signals with scores, and literal codes.

Diagnoses are coded in ICD-10-CM; supplies, equipment, drugs (with doses), services and ambulance transport in
HCPCS Level II. A term carries signals for either (disease words and suffixes, supply and equipment nouns, a dose
such as "4 mg"); each signal adds weight to its system and the weights saturate to a 0-1 score. A multi-intent
term ("diabetes a1c test strips") scores for both and both are searched.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from medrag.codes.synonyms import SynonymTable, load_clinical_synonyms
from medrag.core import identifiers
from medrag.core.identifiers import AFTER, AFTER_CATEGORY, BEFORE, CODE_BEFORE, dotted_icd10cm

ICD10CM = "ICD-10-CM"
HCPCS = "HCPCS"
SYSTEMS = (ICD10CM, HCPCS)
# A system is searched when its score reaches this; with no signal at all, every system is searched.
SEARCH_THRESHOLD = 0.3

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
# A dose makes a drug a HCPCS item: "ondansetron 4 mg", "per 10 units".
_DOSE = re.compile(r"\b\d+(?:\.\d+)?\s*(?:mg|mcg|microgram|micrograms|g|gm|ml|cc|units?|iu|meq)\b", re.IGNORECASE)

# Qualifiers that narrow a code: left out of the lookups when a term finds nothing.
QUALIFIER_WORDS = frozenset("""
    acute chronic left right bilateral unilateral severe mild moderate initial subsequent sequela recurrent
    primary secondary upper lower anterior posterior closed open displaced nondisplaced simple complicated
    complex small large mini standard heavy light lightweight new old early late single multiple each both
""".split())

# Codes written in a term, in any case (medrag.core.identifiers): a bare category needs a digit third there, and
# none follows a nutrient word ("vitamin B17").
_HCPCS_CODE = re.compile(rf"{CODE_BEFORE}({identifiers.HCPCS}){AFTER}", re.IGNORECASE)
_ICD_CODE_DOTTED = re.compile(rf"{CODE_BEFORE}({identifiers.ICD10CM_DOTTED}){AFTER}", re.IGNORECASE)
_ICD_CODE_BARE = re.compile(
    rf"{CODE_BEFORE}({identifiers.ICD10CM_CATEGORY_IN_TEXT}|{identifiers.ICD10CM_UNDOTTED}){AFTER_CATEGORY}",
    re.IGNORECASE)
_MODIFIER_CODE = re.compile(r"[a-z0-9]{2}")
# A code set named in a term ("ICD-10 code for CHF", "HCPCS walker") and the words that ask for a code (medrag.core
# .identifiers, which the search's SQL reads too).
_NAMED_CODE_SETS = ((ICD10CM, re.compile(rf"{BEFORE}(?:{identifiers.NAMES_ICD10CM}){AFTER}", re.IGNORECASE)),
                    (HCPCS, re.compile(rf"{BEFORE}(?:{identifiers.NAMES_HCPCS}){AFTER}", re.IGNORECASE)))
_ASKS_FOR_CODE = re.compile(rf"{BEFORE}{identifiers.ASKS_FOR_CODE}{AFTER}", re.IGNORECASE)
# "not further specified", "type not documented": the code for a detail not known, worded as the Tabular does
_UNSPECIFIED = re.compile(rf"{BEFORE}(?:{identifiers.UNSPECIFIED_CUE}){AFTER}", re.IGNORECASE)
_WORD = re.compile(r"[a-z0-9]+(?:[-'][a-z0-9]+)*")
# The encounter a term names ("broken wrist, first visit"): what an injury code's 7th character says (A initial, D
# subsequent, S sequela), not what the code is for. The visit phrases are set aside like the words that ask for a
# code; "sequela" stays a word to search (I69 "Sequelae of cerebrovascular disease" is a code of its own).
INITIAL, SUBSEQUENT, SEQUELA = "initial", "subsequent", "sequela"
_ENCOUNTER_PHRASES = (
    (INITIAL, re.compile(r"\b(?:first|initial|1st)\s+(?:visit|encounter|treatment|time\s+seen)\b", re.IGNORECASE)),
    (SUBSEQUENT, re.compile(r"\b(?:follow[- ]?up|subsequent|return|later|second|2nd)\s+(?:visits?|encounters?)\b",
                            re.IGNORECASE)),
)
_SEQUELA = re.compile(r"\b(?:sequela|sequelae|late\s+effects?)\b", re.IGNORECASE)

# Signal weights: one clear word is enough to search a system (1 - e^-w >= 0.3 from w = 0.36).
_WEIGHTS = {"named code set": 3.0, "diagnosis word": 1.2, "diagnosis suffix": 0.9, "supply": 1.2, "equipment": 1.2,
            "drug": 1.0, "dose": 1.5, "service": 0.6, "ambulance": 1.5, "modifier": 1.5, "literal code": 3.0,
            "category code": 0.3, "synonym": 1.0, "item for": 0.5}
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

    def systems(self, threshold: float = SEARCH_THRESHOLD) -> list[str]:
        """Systems whose score reaches threshold, best first; every system when no signal was found."""
        chosen = [system for system in SYSTEMS if self.scores[system] >= threshold]
        if not chosen:
            return list(SYSTEMS)
        return sorted(chosen, key=lambda system: (-self.scores[system], SYSTEMS.index(system)))

    def exclusive_words(self, system: str) -> set[str]:
        """Words that signal only `system` (in a multi-intent term they are the other system's business)."""
        by_word: dict[str, set[str]] = {}
        for signal in self.signals:
            for word in signal.text.split():
                by_word.setdefault(word, set()).add(signal.system)
        return {word for word, systems in by_word.items() if systems == {system}}

    def describe(self) -> str:
        """One trace line: each system's score and its strongest signals."""
        parts = []
        for system in SYSTEMS:
            signals = [signal.describe() for signal in self.signals if signal.system == system][:4]
            reason = ", ".join(signals) if signals else "no signal"
            parts.append(f"{system} {self.scores[system]:.2f} ({reason})")
        return "classify: " + "; ".join(parts)


def words_of(text: str) -> list[str]:
    """Lower-case words of a term (hyphenated words and apostrophes kept together)."""
    return _WORD.findall(text.lower().replace("\u2019", "'"))


def literal_codes(text: str) -> dict[str, tuple[str, ...]]:
    """Codes written in a term, per system, upper-cased; ICD-10-CM codes with their dot ("E11621" -> "E11.621")."""
    hcpcs = [match.upper() for match in _HCPCS_CODE.findall(text)]
    icd = [match.upper() for match in _ICD_CODE_DOTTED.findall(text)]
    icd += [dotted_icd10cm(bare) for bare in _ICD_CODE_BARE.findall(text)]
    found = {}
    if hcpcs:
        found[HCPCS] = tuple(dict.fromkeys(hcpcs))
    if icd:
        found[ICD10CM] = tuple(dict.fromkeys(icd))
    return found


def asked_code_set(term: str) -> tuple[str | None, str]:
    """The code set a term names, if any, and the term without the words that ask for a code: "What is the ICD-10
    code for CHF?" is (ICD-10-CM, "CHF"). A term that is nothing but such words stays as it is."""
    named = next((system for system, pattern in _NAMED_CODE_SETS if pattern.search(term)), None)
    return named, _set_aside(_ASKS_FOR_CODE, term)


def asked_encounter(term: str) -> tuple[str | None, str]:
    """The encounter a term names, if any, and the term without its visit phrase: "dog bite of the hand, first
    visit" is (INITIAL, "dog bite of the hand"). A term that is nothing but the phrase stays as it is."""
    for encounter, pattern in _ENCOUNTER_PHRASES:
        if pattern.search(term):
            return encounter, _set_aside(pattern, term)
    return (SEQUELA if _SEQUELA.search(term) else None), term


def unspecified_phrases(term: str) -> tuple[tuple[str, ...], str]:
    """The phrases of a term that say a detail is not known, and the term with each read as "unspecified", the
    Tabular's word: "stroke, not further specified" is (("not further specified",), "stroke, unspecified")."""
    phrases = tuple(" ".join(match.group(0).lower().split()) for match in _UNSPECIFIED.finditer(term))
    return phrases, _UNSPECIFIED.sub("unspecified", term) if phrases else term


def _set_aside(pattern: re.Pattern[str], term: str) -> str:
    """The term without what pattern matches, single-spaced and trimmed; the term itself when nothing else is left."""
    return " ".join(pattern.sub(" ", term).split()).strip(" ?.,:;") or term


def strip_codes(text: str) -> str:
    """The term without the codes written in it (what the word lookups search for)."""
    for pattern in (_HCPCS_CODE, _ICD_CODE_DOTTED):
        text = pattern.sub(" ", text)
    # A bare three-character category ("E11") may also be a word ("b12" in "vitamin b12"): it stays searchable.
    text = _ICD_CODE_BARE.sub(lambda match: match.group(0) if len(match.group(1)) == 3 else " ", text)
    return " ".join(text.split())


def _word_signals(word: str) -> list[Signal]:
    signals = []
    if word in _DIAGNOSIS_WORDS:
        signals.append(Signal(ICD10CM, "diagnosis word", word, _WEIGHTS["diagnosis word"]))
    elif word not in _NOT_DIAGNOSES and len(word) > 5 and word.endswith(_DIAGNOSIS_SUFFIXES):
        signals.append(Signal(ICD10CM, "diagnosis suffix", word, _WEIGHTS["diagnosis suffix"]))
    for kind, lexicon in (("supply", _SUPPLY_WORDS), ("equipment", _EQUIPMENT_WORDS), ("drug", _DRUG_WORDS),
                          ("service", _SERVICE_WORDS), ("ambulance", _AMBULANCE_WORDS),
                          ("modifier", _MODIFIER_WORDS)):
        if word in lexicon:
            signals.append(Signal(HCPCS, kind, word, _WEIGHTS[kind]))
    return signals


def classify(query: str, synonyms: SynonymTable | None = None, *, named: str | None = None) -> Classification:
    """Score each code system for a term from the code set it names, its words, doses, literal codes and the synonym
    table's hints. named: a code set the term was found to name before (a term classified again after a spelling
    correction has lost the words that named it)."""
    synonyms = synonyms or load_clinical_synonyms()
    codes = literal_codes(query)
    named_in_term, rest = asked_code_set(query)
    named = named or named_in_term
    encounter, rest = asked_encounter(rest)
    unspecified, rest = unspecified_phrases(rest)
    words = words_of(strip_codes(rest))
    if _MODIFIER_WORDS.intersection(words):
        # "KX modifier", "modifier RT": two-character tokens are modifier codes to look up exactly.
        modifiers = tuple(word.upper() for word in words if _MODIFIER_CODE.fullmatch(word))
        if modifiers:
            codes[HCPCS] = tuple(dict.fromkeys((*codes.get(HCPCS, ()), *modifiers)))
    signals: list[Signal] = []
    if named is not None:
        signals.append(Signal(named, "named code set", named, _WEIGHTS["named code set"]))
    for system, found in codes.items():
        signals += [Signal(system, "literal code", code,
                           _WEIGHTS["category code"] if len(code) == 3 else _WEIGHTS["literal code"])
                    for code in found]
    for index, word in enumerate(words):
        word_signals = _word_signals(word)
        following = _word_signals(words[index + 1]) if index + 1 < len(words) else []
        if any(signal.system == ICD10CM for signal in word_signals) and \
                any(signal.kind in _ITEM_KINDS for signal in following):
            # "diabetic shoes", "apnea monitor": the condition names what the item is for.
            word_signals = [Signal(HCPCS, "item for", f"{word} {words[index + 1]}", _WEIGHTS["item for"])]
        signals += word_signals
    for dose in _DOSE.findall(query):
        signals.append(Signal(HCPCS, "dose", " ".join(dose.lower().split()), _WEIGHTS["dose"]))
    for match in synonyms.matches(words):
        for system in match.entry.systems:
            signals.append(Signal(system, "synonym", match.phrase, _WEIGHTS["synonym"]))
    totals = {system: sum(signal.weight for signal in signals if signal.system == system) for system in SYSTEMS}
    scores = {system: round(1 - math.exp(-total), 3) for system, total in totals.items()}
    wants_modifiers = any(signal.kind == "modifier" for signal in signals)
    return Classification(query, tuple(words), scores, tuple(signals), codes, wants_modifiers, named, rest,
                          encounter, unspecified)

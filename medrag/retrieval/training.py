"""Training pairs the releases give: a phrase and the code or document it names, never taken from the eval sets.

- index: an ICD-10-CM Index path read as a coder would say it ("Calculus > ureter" -> "ureter calculus" -> N20.1);
- inclusion: a Tabular inclusion term -> its code;
- hcpcs_short: a HCPCS short description -> its code;
- negation: an Index path or inclusion term that states a negation ("not intractable", "not done", "no loss of
  consciousness"), read as the index kind reads paths -> its code: how the finder reads a term's "not ..." that is
  a code's own wording;
- drug: a Table of Drugs row and column, the substance and the column's words ("chloroprocaine underdosing"), or
  "poisoning" alone where the Tabular lists the column's code as that poisoning's NOS ("amoxicillin poisoning" ->
  T36.0X1, "Poisoning by penicillins NOS"): how the finder reads a substance the Table names and an intent unsaid;
- reference: an Index entry that sends the reader elsewhere, read as the index kind reads paths -> the code of the
  entry its reference names, where that code is complete ("Rubeola - see Measles" -> B05.9; "Effusion > chest - see
  Effusion, pleura" -> "chest effusion" -> J90): how the finder reads the Index's other names for a condition;
- side: a Tabular description of a code that names a side where its family also has an unspecified side, "bilateral"
  written as people say it, "both" and the unspecified sibling's site ("Exudative retinopathy, bilateral" ->
  "exudative retinopathy, both eyes" -> H35.023; "..., left ankle" as written): how the finder reads a side named,
  never coded to the unspecified side;
- index_side: an Index path whose code is of unspecified side where its family names right and left, read as the index
  kind reads paths, and a side ("Puncture > thigh" -> S71.139 -> "thigh puncture, left") -> the sibling of that side
  (S71.132, Puncture wound without foreign body, left thigh): how the finder completes the code an Index entry gives
  with the side the term names;
- ncd_keyword: one of an NCD's keywords (the MCD's own list: "colon cleansing" -> NCD 100.7);
- misspelled: a phrase of the kinds above with one typing slip in its longest word (a letter doubled, two swapped,
  one dropped, a vowel changed), the pair's code unchanged: how the search's trigram leg earns its weight.

Each kind draws its pairs in a fixed pseudo-random order (md5 of seed and key), so the same releases and seed give
the same pairs. The code finder's ranker (medrag/codes/ranker.py) and the search's fusion (medrag.retrieval.fusion)
are fitted on them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, text

# The document source each kind's pairs name.
SOURCES = {"index": "icd10cm", "inclusion": "icd10cm", "hcpcs_short": "hcpcs", "negation": "icd10cm",
           "drug": "icd10cm", "reference": "icd10cm", "side": "icd10cm", "index_side": "icd10cm",
           "neoplasm": "icd10cm", "ncd_keyword": "ncd"}
# An Index path read innermost first ("Cyst > ovary, ovarian > serous" -> "serous ovary cyst"), each level's first
# wording, nonessential modifiers left out.
_INDEX_PHRASE = """lower(array_to_string(ARRAY(SELECT btrim(split_part(regexp_replace(part, '\\s*\\([^)]*\\)', '', 'g'),
                                                                 ',', 1))
                                       FROM unnest(string_to_array(e.path, ' > ')) WITH ORDINALITY AS p(part, n)
                                       ORDER BY n DESC), ' '))"""
# the newest release with an Index (the Index of a year comes with its code tables, not always loaded)
_INDEX_RELEASE = "(SELECT max(i.release) FROM v_icd10cm_index i WHERE i.index_name = 'diseases')"
# a negation the wording states, not the Tabular's filler ("not elsewhere classified")
_STATES_NEGATION = "'\\y(not|no)\\y'"
_FILLER_NEGATION = "'(not elsewhere|not otherwise)'"

_PAIRS = {
    # Index to Diseases paths of at most three levels whose code is complete, read as _INDEX_PHRASE says
    "index": f"""
        SELECT {_INDEX_PHRASE} AS phrase, e.code
        FROM v_icd10cm_index e
        WHERE e.index_name = 'diseases' AND e.code ~ '^[A-Z][0-9A-Z.]+[0-9A-Z]$'
          AND e.level <= 2 AND e.path !~* '(NEC|NOS|see |specified|other|unspecified)'
          AND e.release = {_INDEX_RELEASE}
        ORDER BY md5(:seed || e.entry_id::text) LIMIT :n""",
    "inclusion": """
        SELECT lower(term) AS phrase, c.code
        FROM icd10cm_code c JOIN release r ON r.id = c.release_id AND r.is_current,
             unnest(c.inclusion_terms) AS term
        WHERE c.billable AND c.seventh_character IS NULL AND term !~* '(NEC|NOS|other|unspecified)'
        ORDER BY md5(:seed || c.code || term) LIMIT :n""",
    "hcpcs_short": """
        SELECT lower(h.short_description) AS phrase, h.code
        FROM hcpcs_code h JOIN release r ON r.id = h.release_id AND r.is_current
        WHERE h.kind = 'procedure' AND h.termination_date IS NULL AND h.short_description !~* '(NOC|NOS|misc)'
        ORDER BY md5(:seed || h.code) LIMIT :n""",
    # Index paths of at most four levels and inclusion terms whose phrase states a negation, each phrase once
    "negation": f"""
        SELECT phrase, min(code) AS code
        FROM (SELECT {_INDEX_PHRASE} AS phrase, e.code, md5(:seed || e.entry_id::text) AS draw
              FROM v_icd10cm_index e
              WHERE e.index_name = 'diseases' AND e.code ~ '^[A-Z][0-9A-Z.]+[0-9A-Z]$' AND e.level <= 3
                AND e.path ~* {_STATES_NEGATION}
                AND e.path !~* '(NEC|NOS|see |specified|other|unspecified)' AND e.release = {_INDEX_RELEASE}
              UNION ALL
              SELECT lower(term), c.code, md5(:seed || c.code || term)
              FROM icd10cm_code c JOIN release r ON r.id = c.release_id AND r.is_current,
                   unnest(c.inclusion_terms) AS term
              WHERE c.billable AND c.seventh_character IS NULL AND term !~* '(NEC|NOS|other|unspecified)') said
        WHERE phrase ~* {_STATES_NEGATION} AND phrase !~* {_FILLER_NEGATION}
        GROUP BY phrase HAVING count(DISTINCT code) = 1
        ORDER BY min(draw) LIMIT :n""",
    # a Table of Drugs row and column: the substance (read as _INDEX_PHRASE reads a path) and the column's words, or
    # only the column's first word where the Tabular lists the column's code as that word's default ("Poisoning by
    # penicillins NOS" under T36.0X1: "amoxicillin poisoning")
    "drug": f"""
        SELECT {_INDEX_PHRASE} || ' ' || lower(CASE WHEN nos.is_default THEN split_part(e.column_name, ' ', 1)
                                                 ELSE regexp_replace(e.column_name, '\\s*\\([^)]*\\)', '', 'g')
                                            END) AS phrase, e.code
        FROM v_icd10cm_index e,
             LATERAL (SELECT EXISTS (SELECT 1
                                     FROM icd10cm_code c JOIN release r ON r.id = c.release_id AND r.is_current,
                                          unnest(c.inclusion_terms) AS term
                                     WHERE c.code = e.code AND term ~ '\\mNOS$') AS is_default) nos
        WHERE e.index_name = 'drugs' AND e.code ~ '^[A-Z][0-9A-Z.]+[0-9A-Z]$' AND e.level <= 1
          AND e.path !~* '(NEC|NOS|see |specified|other|unspecified)' AND e.release = {_INDEX_RELEASE}
        ORDER BY md5(:seed || e.entry_id::text || e.column_name) LIMIT :n""",
    # an Index entry that sends the reader elsewhere ("Fracture, traumatic > hip - see Fracture, femur, neck"), read
    # as _INDEX_PHRASE reads a path -> the code of the entry its reference names, where that code is complete
    "reference": f"""
        SELECT {_INDEX_PHRASE} AS phrase, t.code
        FROM (SELECT x.release_id, x.index_name, x.entry_id, x.level, x.code, x.see, x.see_entry_id,
                     array_to_string(x.path, ' > ') AS path
              FROM icd10cm_index_entry x JOIN release r ON r.id = x.release_id
              WHERE r.label = {_INDEX_RELEASE}) e
        JOIN icd10cm_index_entry t ON t.release_id = e.release_id AND t.index_name = e.index_name
                                  AND t.entry_id = e.see_entry_id
        WHERE e.index_name = 'diseases' AND e.see IS NOT NULL AND (e.code IS NULL OR e.code = t.code) AND e.level <= 2
          AND t.code ~ '^[A-Z][0-9A-Z.]+[0-9A-Z]$' AND e.path !~* '(NEC|NOS|specified|other|unspecified)'
        ORDER BY md5(:seed || e.entry_id::text) LIMIT :n""",
    # a right, left or bilateral code of a family with an unspecified side (medrag_code_detail.unspecified_side_of),
    # its description lower-cased, "bilateral" read as "both", and a last ", bilateral" as "both" and the plural of
    # the site the unspecified sibling names ("unspecified eye": "both eyes"), each phrase once
    "side": """
        SELECT phrase, min(code) AS code
        FROM (SELECT CASE WHEN c.description ~* ',\\s*bilateral$'
                          THEN regexp_replace(lower(c.description), ',\\s*bilateral$', ', both ' || site.plural)
                          ELSE regexp_replace(lower(c.description), '\\ybilateral\\y', 'both') END AS phrase,
                     c.code, md5(:seed || c.code) AS draw
              FROM icd10cm_code c JOIN release r ON r.id = c.release_id AND r.is_current
              JOIN icd10cm_code u ON u.release_id = c.release_id AND u.parent_code = c.parent_code AND u.code <> c.code
              JOIN medrag_code_detail d ON d.release_id = u.release_id AND d.code = u.code
                                       AND d.unspecified_side_of IS NOT NULL
              CROSS JOIN LATERAL (SELECT substring(u.description FROM '\\yunspecified ([a-z]+(?: [a-z]+)?)$') AS name) n
              CROSS JOIN LATERAL (SELECT n.name,
                                         CASE WHEN n.name ~ 'foot$' THEN regexp_replace(n.name, 'foot$', 'feet')
                                              WHEN n.name ~ '[^aeiou]y$' THEN regexp_replace(n.name, 'y$', 'ies')
                                              ELSE n.name || 's' END AS plural) site
              WHERE c.billable AND c.seventh_character IS NULL
                AND c.description ~* '\\y(right|left|bilateral)\\y' AND c.description !~* '(NEC|NOS|unspecified)'
                AND (c.description !~* ',\\s*bilateral$' OR site.name IS NOT NULL)) sided
        GROUP BY phrase HAVING count(DISTINCT code) = 1
        ORDER BY min(draw) LIMIT :n""",
    # an Index to Diseases path of at most three levels whose code is of unspecified side, its family naming right and
    # left (medrag_code_detail.unspecified_side_of), read as _INDEX_PHRASE reads a path, ", right" or ", left" after it
    # (md5 of seed and entry) -> the sibling whose description is the code's with "unspecified" read as that side
    "index_side": f"""
        SELECT {_INDEX_PHRASE} || ', ' || side.name AS phrase, s.code
        FROM v_icd10cm_index e
        JOIN release r ON r.is_current AND r.source = 'icd10cm'
        JOIN medrag_code_detail d ON d.release_id = r.id AND d.code = e.code
                                 AND d.unspecified_side_of && ARRAY['left', 'right']
        JOIN icd10cm_code u ON u.release_id = r.id AND u.code = e.code
        CROSS JOIN LATERAL (SELECT CASE WHEN ('x' || left(md5(:seed || e.entry_id::text), 8))::bit(32)::int % 2 = 0
                                        THEN 'right' ELSE 'left' END AS name) side
        JOIN icd10cm_code s ON s.release_id = r.id AND s.parent_code = u.parent_code AND s.code <> u.code
                           AND medrag_word_bag(s.description)
                               = medrag_word_bag(regexp_replace(u.description, '\\yunspecified\\y', side.name, 'i'))
        WHERE e.index_name = 'diseases' AND e.code ~ '^[A-Z][0-9A-Z.]+[0-9A-Z]$' AND e.level <= 2
          AND e.path !~* '(NEC|NOS|see |specified|other|unspecified)' AND e.release = {_INDEX_RELEASE}
        ORDER BY md5(:seed || e.entry_id::text) LIMIT :n""",
    # an Index entry that sends the reader to a whole column of the Neoplasm Table ("Metastasis, metastatic > spread -
    # see Neoplasm, secondary, by site"), read as _INDEX_PHRASE reads a path, and a site the table names as a row of
    # its own (its first wording): the code of that row's cell in that column ("spread metastasis of liver": C78.7)
    "neoplasm": f"""
        SELECT referring.phrase || ' of ' || lower(btrim(split_part(t.path[2], ',', 1))) AS phrase, t.code
        FROM (SELECT {_INDEX_PHRASE} AS phrase, e.entry_id, e.release_id,
                     CASE WHEN e.reference ~* 'in situ' THEN 'Ca in situ'
                          WHEN e.reference ~* 'secondary' THEN 'Malignant Secondary'
                          WHEN e.reference ~* 'malignant' THEN 'Malignant Primary'
                          WHEN e.reference ~* 'benign' THEN 'Benign'
                          WHEN e.reference ~* 'uncertain' THEN 'Uncertain Behavior' END AS column_name
              FROM (SELECT x.release_id, x.entry_id, coalesce(x.see, x.see_also) AS reference,
                           array_to_string(x.path, ' > ') AS path
                    FROM icd10cm_index_entry x JOIN release r ON r.id = x.release_id
                    WHERE r.label = {_INDEX_RELEASE} AND x.index_name = 'diseases' AND x.level <= 2) e
              WHERE e.reference ~* '^neoplasms?\\y.*\\yby site' AND e.path !~* '(NEC|NOS|specified|other|unspecified)')
             referring
        JOIN icd10cm_index_entry t ON t.release_id = referring.release_id AND t.index_name = 'neoplasms'
                                  AND t.column_name = referring.column_name AND t.level = 1
        WHERE t.code ~ '^[A-Z][0-9A-Z.]+[0-9A-Z]$'
          AND array_to_string(t.path, ' ') !~* '(NEC|NOS|specified|other|unspecified|see )'
        ORDER BY md5(:seed || referring.entry_id::text || t.entry_id::text) LIMIT :n""",
    # a keyword two current NCDs share names neither
    "ncd_keyword": """
        SELECT k.phrase, min(n.section) AS code
        FROM ncd n, LATERAL (SELECT DISTINCT lower(btrim(word)) AS phrase
                             FROM unnest(string_to_array(n.keywords, ',')) AS word) k
        WHERE n.is_current AND length(k.phrase) > 3
        GROUP BY k.phrase HAVING count(DISTINCT n.section) = 1
        ORDER BY md5(:seed || k.phrase) LIMIT :n""",
}
_VOWELS = "aeiou"


@dataclass(frozen=True)
class TrainingPair:
    """A phrase the releases pair with a code (or an NCD's section), and where the pair came from."""

    kind: str
    phrase: str
    code: str
    source: str


def training_pairs(conn: Connection, per_kind: int, seed: int, kinds: Sequence[str]) -> list[TrainingPair]:
    """`per_kind` pairs of each kind from the current releases, in a fixed order; misspelled ones come from the pairs
    of the other kinds asked for."""
    pairs = []
    for kind in (kind for kind in kinds if kind != "misspelled"):
        rows = conn.execute(text(_PAIRS[kind]), {"seed": str(seed), "n": per_kind}).all()
        pairs += [TrainingPair(kind, " ".join(phrase.split()), code, SOURCES[kind])
                  for phrase, code in rows if phrase.strip()]
    if "misspelled" in kinds:
        slipped = [(misspelled(pair.phrase, seed), pair)
                   for pair in sorted(pairs, key=lambda pair: _digest(seed, pair.phrase))]
        pairs += [TrainingPair("misspelled", phrase, pair.code, pair.source)
                  for phrase, pair in slipped if phrase is not None][:per_kind]
    return pairs


def misspelled(phrase: str, seed: int) -> str | None:
    """The phrase with one typing slip in its longest word (the first of equal length), chosen by md5 of seed and
    phrase; None when that word is shorter than six letters or not all letters."""
    words = phrase.split()
    at = max(range(len(words)), key=lambda n: (len(words[n]), -n))
    word = words[at]
    if len(word) < 6 or not word.isalpha():
        return None
    digest = _digest(seed, phrase)
    place, slip = 1 + digest % (len(word) - 2), (digest >> 8) % 4
    if slip == 0:
        typed = word[:place] + word[place] + word[place:]  # a letter doubled
    elif slip == 1:
        typed = word[:place] + word[place + 1] + word[place] + word[place + 2:]  # two letters swapped
    elif slip == 2:
        typed = word[:place] + word[place + 1:]  # a letter dropped
    else:
        vowels = [n for n in range(1, len(word) - 1) if word[n] in _VOWELS]
        if not vowels:
            return None
        n = vowels[digest % len(vowels)]
        typed = word[:n] + _VOWELS[(_VOWELS.index(word[n]) + 1 + (digest >> 12) % 4) % 5] + word[n + 1:]
    if typed == word:
        return None
    return " ".join([*words[:at], typed, *words[at + 1:]])


def pairs_hash(pairs: list[TrainingPair]) -> str:
    """SHA-256 of the pairs (kind, phrase, code), one per line in order: which training set a model came from."""
    digest = hashlib.sha256()
    for pair in pairs:
        digest.update(f"{pair.kind}\t{pair.phrase}\t{pair.code}\n".encode())
    return digest.hexdigest()


def _digest(seed: int, phrase: str) -> int:
    return int(hashlib.md5(f"{seed}|{phrase}".encode()).hexdigest(), 16)

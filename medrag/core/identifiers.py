"""The shapes of the identifiers CMS and people write (codes, determinations): one definition for every reader.

The search SQL (medrag_query_identifiers, rendered from these patterns by `identifiers_sql`), the answer gates
(medrag.answer.validate), the rewrite check (medrag.answer.checks) and the code finder (medrag.codes.classify) all
build their expressions from the pieces below, so a code one of them recognises the others recognise too. The
patterns are written in the subset of regular-expression syntax Python's `re` and PostgreSQL's AREs share.
"""

from __future__ import annotations

# HCPCS Level II: a letter A-V and four digits (E0601). A CPT code is five digits and not in the HCPCS file.
HCPCS = r"[A-V][0-9]{4}"
# An ICD-10-CM category: letter, digit, then a digit or a letter (E11, C4A, M1A, Z3A).
ICD10CM_CATEGORY = r"[A-Z][0-9][0-9A-Z]"
# A category standing alone in running text needs a digit third: "A1C" is a blood test, "B12" may be a vitamin.
ICD10CM_CATEGORY_IN_TEXT = r"[A-Z][0-9]{2}"
# The characters after a category's dot (E11.621, S72.001A), up to four.
ICD10CM_SUBCODE = r"[0-9A-Z]{1,4}"
ICD10CM_DOTTED = rf"{ICD10CM_CATEGORY}\.{ICD10CM_SUBCODE}"
ICD10CM_UNDOTTED = rf"{ICD10CM_CATEGORY}{ICD10CM_SUBCODE}"
# A category with or without its subcode, the dot optional: the shape a query token is looked up by.
ICD10CM_ANY = rf"{ICD10CM_CATEGORY}(?:\.?{ICD10CM_SUBCODE})?"
# Any ICD-10-CM code a person lists on its own (a code list, not running text): since FY2026 a category may have a
# letter second (QA0, neurodevelopmental disorders related to genetic variants), which the patterns for running text
# above leave out so that words and modifiers followed by a digit are not read as codes.
ICD10CM_LISTED = rf"[A-Z][0-9A-Z][0-9A-Z](?:\.?{ICD10CM_SUBCODE})?"
# A HCPCS modifier: two letters or digits (KX, GA, 59, RT).
MODIFIER = r"[A-Z0-9]{2}"
# An NCD section number (240.2, 20.4, 110.18.1), written after "NCD": group 1.
NCD = r"NCD\s*#?\s*([0-9]{1,3}(?:\.[0-9]{1,2}){0,2})(?![0-9])"
# An LCD: L33718, "LCD 33718", "LCD L33718": the five digits are group 1.
LCD = r"(?:LCD\s*#?\s*L?|L)([0-9]{5})"
# An MCD Article: A52458.
ARTICLE = r"A5[0-9]{4}"
# Five characters, a letter and four digits: a HCPCS code (E0601) or an undotted ICD-10-CM code (E1165); the tables
# decide which.
HCPCS_OR_UNDOTTED_ICD10CM = r"[A-Z][0-9]{4}"
# What a query rewrite must keep verbatim: a code, an LCD or Article number, a bare NCD section number.
ANY_IDENTIFIER = rf"{ICD10CM_CATEGORY}(?:\.{ICD10CM_SUBCODE})?|[A-Z][0-9]{{4,5}}|[0-9]{{1,3}}\.[0-9]{{1,2}}"

# A code set a query names (matched case-insensitively): ICD-10-CM as "ICD", "ICD-10", "ICD-10-CM", "diagnosis
# code", "dx code"; HCPCS by name. It says which codes are asked for, not what they are for.
NAMES_ICD10CM = r"icd(?:-?10(?:-?cm)?)?|(?:diagnosis|diagnostic|dx)\s+codes?"
NAMES_HCPCS = r"hcpcs"
# The words that ask for a code ("ICD-10 code for", "dx code", "HCPCS code for", "billing code for", "code for"),
# with a question's "what is the" before them: set aside, the rest of the query is what the code is for.
ASKS_FOR_CODE = (rf"(?:(?:what|which)(?:'s|\s+is|\s+are)?(?:\s+the)?\s+)?"
                 rf"(?:(?:{NAMES_ICD10CM}|{NAMES_HCPCS})(?:\s+codes?)?|(?:billing\s+)?codes?)(?:\s+(?:for|of))?")

# What a query says is absent or not known: ICD-10-CM's rule is then the code that says so ("without
# complications", "unspecified"). The search's default cue (medrag_default_cue) and the code finder, which reads a
# phrase of the second kind as the word "unspecified" (not as "specified", "known", ... to look for), share them.
UNCOMPLICATED_CUE = r"(?:no|without)\s+complications?|uncomplicated"
UNSPECIFIED_CUE = (r"not\s+(?:documented|stated|specified|further\s+specified|otherwise\s+specified|known)"
                   r"|unspecified|unknown")

# Token edges: not inside a longer word or number. A dot before a token makes it part of a number ("1.E11").
BEFORE = r"(?<![A-Za-z0-9.])"
AFTER = r"(?![A-Za-z0-9])"
# Words that make the token after them a nutrient's name, not a code: "vitamin B12" (36 times in the corpus, the only
# word before a code-shaped token that is not "of", "to" or "category"), "vitamin B17" (laetrile), "coenzyme Q10".
NUTRIENT_WORDS = ("vitamin", "vitamins", "coenzyme", "co-enzyme")


def _any_case(word: str) -> str:
    """A word matched in either case by a pattern that Python and PostgreSQL (which has no scoped flags) share."""
    return "".join(f"[{ch.upper()}{ch.lower()}]" if ch.isalpha() else ch for ch in word)


# Before a code token: a token edge, and no nutrient word just before it.
CODE_BEFORE = BEFORE + "".join(f"(?<!{_any_case(word)}[ -])" for word in NUTRIENT_WORDS)
# After a bare category: a dot and a character would continue it (E11 in "E11.621" is not a code of its own).
AFTER_CATEGORY = r"(?![A-Za-z0-9]|\.[0-9A-Za-z])"


def dotted_icd10cm(code: str) -> str:
    """An ICD-10-CM code in its dotted form (E11621 -> E11.621; a category stays E11), upper-cased."""
    code = code.upper().replace(".", "")
    return code if len(code) <= 3 else f"{code[:3]}.{code[3:]}"


def _first_match_sql(function: str, choices: tuple[tuple[str, str], ...]) -> str:
    """A SQL function of query_text: the value of the first (value, pattern) whose pattern the query holds as
    whole tokens, else NULL."""
    whens = "\n                ".join(f"WHEN query_text ~* '{BEFORE}(?:{pattern}){AFTER}' THEN '{value}'"
                                      for value, pattern in choices)
    return f"""
CREATE OR REPLACE FUNCTION {function}(query_text text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE {whens} END
$$;
"""


def named_code_set_sql() -> str:
    """medrag_named_code_set(query_text): 'icd10cm' or 'hcpcs' when the query names that code set, else NULL."""
    return _first_match_sql("medrag_named_code_set", (("icd10cm", NAMES_ICD10CM), ("hcpcs", NAMES_HCPCS)))


def default_cue_sql() -> str:
    """medrag_default_cue(query_text): 'uncomplicated' or 'unspecified' when the query says so, else NULL."""
    return _first_match_sql("medrag_default_cue", (("uncomplicated", UNCOMPLICATED_CUE),
                                                   ("unspecified", UNSPECIFIED_CUE)))


def identifiers_sql() -> str:
    """medrag_query_identifiers(query_text): the (source, key) pairs a query names, from the patterns above."""
    return f"""
CREATE OR REPLACE FUNCTION medrag_query_identifiers(query_text text)
RETURNS TABLE (source text, key text)
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    WITH token AS (
        SELECT m[1] AS t
        FROM regexp_matches(upper(coalesce(query_text, '')), '{CODE_BEFORE}({ICD10CM_ANY}){AFTER}', 'g') AS m
    )
    SELECT 'hcpcs', t FROM token WHERE t ~ '^{HCPCS}$'
    UNION SELECT 'icd10cm', t FROM token WHERE t ~ '^{ICD10CM_CATEGORY}(\\.{ICD10CM_SUBCODE})?$'
    UNION SELECT 'icd10cm', left(t, 3) || '.' || substr(t, 4) FROM token WHERE t ~ '^{ICD10CM_UNDOTTED}$'
    UNION SELECT 'ncd', m[1] FROM regexp_matches(upper(coalesce(query_text, '')), '{NCD}', 'g') AS m
    UNION SELECT 'lcd', 'L' || m[1]
        FROM regexp_matches(upper(coalesce(query_text, '')), '{BEFORE}{LCD}{AFTER}', 'g') AS m
    UNION SELECT 'article', m[1]
        FROM regexp_matches(upper(coalesce(query_text, '')), '{BEFORE}({ARTICLE}){AFTER}', 'g') AS m
$$;
"""


def code_shapes_sql() -> str:
    """medrag_code_shape(kind): the whole-value pattern of a 'hcpcs' code, a 'modifier' or an 'icd10cm' code (the
    dot optional), for the claim-line check's syntax findings."""
    return f"""
CREATE OR REPLACE FUNCTION medrag_code_shape(kind text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE kind WHEN 'hcpcs' THEN '^{HCPCS}$' WHEN 'modifier' THEN '^{MODIFIER}$'
                     WHEN 'icd10cm' THEN '^{ICD10CM_ANY}$' END
$$;
"""

"""The clinical code finder: classify a term, plan and run lookups concurrently, reflect, consolidate.

    finder = CodeFinder(engine, embedder_factory=query_embedder)
    search = finder.find("diabetes a1c test strips", top=5)

Rounds (at most three): every lookup of a round runs at once on its own connection; after it the pool of
candidates is scored and reflect() decides whether to broaden (synonyms, spelling, qualifiers, another
system), narrow (billable codes under a header) or stop. Only codes read from the tables are returned.
"""

from __future__ import annotations

import logging
import time
import unicodedata
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import Any, Protocol

from sqlalchemy import Engine

from medrag.codes import plan
from medrag.codes.classify import (
    HCPCS,
    ICD10CM,
    SYSTEMS,
    Classification,
    classify,
    words_of,
)
from medrag.codes.clinical_tables import search_clinical_tables
from medrag.codes.consolidate import Candidate, CandidatePool, routing_priors, score_candidates, top_results
from medrag.codes.plan import CodeRelease, CodeRow, IndexRelease, Lookup, LookupResult, SeventhCharacter
from medrag.codes.reflect import Decision, ReflectState, reflect
from medrag.codes.results import CodeMatch, CodeSearch, Related, summarize
from medrag.codes.synonyms import load_clinical_synonyms
from medrag.codes.terms import COMPOUND, SPELLING, SYNONYM, TermQuery, Wording, analyze_term
from medrag.core.errors import MedragError
from medrag.retrieval.search import RankedCode

log = logging.getLogger(__name__)

MAX_ROUNDS = 3
DEFAULT_TOP = 5
MAX_TOP = 50
MAX_TERM_CHARS = 500
# The trigram leg is for a misspelled word or two; longer terms are corrected word by word when they find nothing.
TRIGRAM_MAX_WORDS = 2
# The description-words leg (an ILIKE '%stem%' per word) is the slowest lookup on a sentence-long term and adds little
# that full text, the Index and the vectors do not find: a term of more concepts skips it. Swept on the dev sets
# (dev unchanged at every value): descriptive dev top-1 0.575 without the limit, 0.625 at 3 and 4, 0.60 at 5 and 6;
# at 4, p50 on the descriptive terms 132 -> 87 ms and on the retrieval dev questions 113 -> 88 ms (p95 332 -> 232);
# holdout unchanged, second holdout top-1 0.691 -> 0.676 (a deep-vein clot's I82.401 from first to third), top-5
# unchanged on all four sets.
WORDS_LEG_MAX_CONCEPTS = 4
MAX_CACHED_ROWS = 50_000
ALL_KINDS = {ICD10CM: ("diagnosis",), HCPCS: ("procedure", "modifier")}
SYSTEM_ALIASES = {"icd-10-cm": ICD10CM, "icd10cm": ICD10CM, "icd10": ICD10CM, "icd": ICD10CM, "hcpcs": HCPCS}


class CodeQueryError(MedragError):
    """The term or an option of a code search is not usable."""


class Embedder(Protocol):
    """Anything that turns a text into a unit vector (medrag.retrieval.query_embedding.QueryEmbedder)."""

    def embed(self, text: str) -> list[float]:
        """The text's embedding."""


def validate_term(term: str | None) -> str:
    """The term single-spaced, or CodeQueryError when it is empty, too long or holds control characters."""
    cleaned = " ".join((term or "").split())
    if not cleaned:
        raise CodeQueryError("the term is empty; give a clinical term such as \"type 2 diabetes\" or a code "
                             "such as E0601")
    if len(cleaned) > MAX_TERM_CHARS:
        raise CodeQueryError(f"the term is {len(cleaned):,} characters; the limit is {MAX_TERM_CHARS}")
    if any(unicodedata.category(ch) == "Cc" for ch in cleaned):
        raise CodeQueryError("the term contains control characters")
    return cleaned


def normalize_systems(names: Sequence[str] | None) -> list[str]:
    """Code system names as given on the command line ("icd10cm", "HCPCS" ...) in canonical form."""
    systems = []
    for name in names or ():
        system = SYSTEM_ALIASES.get(name.strip().lower())
        if system is None:
            raise CodeQueryError(f"unknown code system {name!r}; choose ICD-10-CM or HCPCS")
        if system not in systems:
            systems.append(system)
    return systems


class CodeFinder:
    """Finds ICD-10-CM and HCPCS codes for clinical terms in the loaded code tables.

    Release ids and whether code documents have embeddings are read once per finder: make a new finder after
    a refresh. The embedder is created on first need (only when code documents have embeddings).
    """

    def __init__(self, engine: Engine, *, embedder: Embedder | None = None,
                 embedder_factory: Callable[[], Embedder] | None = None,
                 max_workers: int = 8) -> None:
        self.engine = engine
        self._embedder = embedder
        self._embedder_factory = embedder_factory
        self._embedder_failed: str | None = None
        # the table the SQL term analysis was rendered from (medrag_code_synonyms): what broadening expands with
        self.synonyms = load_clinical_synonyms()
        self._executor = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="medrag-codes")
        self._releases: dict[str, list[CodeRelease]] | None = None
        self._index_releases: dict[int, IndexRelease | None] = {}
        self._has_embeddings: dict[str, bool] = {}
        # A release's codes never change: their details are read once per finder (None: not in the release).
        self._rows: dict[tuple[int, str], CodeRow | None] = {}

    def close(self) -> None:
        """Stop the lookup threads."""
        self._executor.shutdown(wait=True)

    def __enter__(self) -> CodeFinder:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- set-up, cached ------------------------------------------------------------------------------------------

    def releases(self) -> dict[str, list[CodeRelease]]:
        """Loaded releases per system (read once)."""
        if self._releases is None:
            with self.engine.connect() as conn:
                self._releases = plan.load_releases(conn)
        return self._releases

    def index_release(self, release: CodeRelease) -> IndexRelease | None:
        """The release whose ICD-10-CM Index serves searches of `release` (read once)."""
        if release.release_id not in self._index_releases:
            with self.engine.connect() as conn:
                self._index_releases[release.release_id] = plan.index_release_for(conn, release)
        return self._index_releases[release.release_id]

    def _vector_ready(self, system: str) -> bool:
        if system not in self._has_embeddings:
            self._has_embeddings[system] = plan.has_code_embeddings(self.engine, system)
        return self._has_embeddings[system]

    def code_rows(self, release: CodeRelease, codes: list[str]) -> dict[str, CodeRow]:
        """Details of the codes that exist in a release (active ones, for HCPCS), read once and then cached."""
        missing = [code for code in codes if (release.release_id, code) not in self._rows]
        if missing:
            if len(self._rows) > MAX_CACHED_ROWS:
                self._rows.clear()
            found = plan.fetch_details(self.engine, release, missing, ALL_KINDS[release.system])
            self._rows.update({(release.release_id, code): found.get(code) for code in missing})
        rows = {code: self._rows[(release.release_id, code)] for code in codes}
        return {code: row for code, row in rows.items() if row is not None}

    @property
    def can_embed(self) -> bool:
        """Whether this finder has (or may make) a query embedder."""
        return (self._embedder is not None or self._embedder_factory is not None) and self._embedder_failed is None

    def _get_embedder(self) -> Embedder | None:
        if self._embedder is None and self._embedder_factory is not None and self._embedder_failed is None:
            try:
                self._embedder = self._embedder_factory()
            except Exception as error:  # noqa: BLE001 - the lexical lookups still answer without vectors
                self._embedder_failed = str(error).splitlines()[0] if str(error) else type(error).__name__
                log.warning("code search without vectors: %s", self._embedder_failed)
        return self._embedder

    # -- the search ----------------------------------------------------------------------------------------------

    def find(self, term: str, *, systems: Sequence[str] | None = None, release: str | None = None,
             top: int = DEFAULT_TOP, external_url: str | None = None) -> CodeSearch:
        """Codes for a clinical term (or a code), best first, at most `top` per system.

        With external_url (the NLM Clinical Tables API base, off by default), LOINC, RxTerms, UCUM and HPO codes
        are asked for at the same time and listed apart from the local results.
        """
        started = time.perf_counter()
        term = validate_term(term)
        if not 1 <= top <= MAX_TOP:
            raise CodeQueryError(f"top must be between 1 and {MAX_TOP}, not {top}")
        external = (self._executor.submit(search_clinical_tables, term, base_url=external_url)
                    if external_url else None)
        requested = normalize_systems(systems)
        loaded = self.releases()  # first: on a database never migrated, what is missing is its tables
        classification, query = analyze_term(self.engine, term)
        # Every requested system is searched: the classifier's signal is a prior on the scores, never a filter.
        searched = requested or list(SYSTEMS)
        trace = [classification.describe() + f" -> search {', '.join(searched)}"]
        trace += [f'not known: "{phrase}" searched as "unspecified" (the code for a detail not known)'
                  for phrase in dict.fromkeys(classification.unspecified) if phrase != "unspecified"]
        releases = plan.pick_release(loaded, requested or list(SYSTEMS), release)
        if not releases:
            raise CodeQueryError("no ICD-10-CM or HCPCS release is loaded; run `medrag ingest --source icd10cm "
                                 "--source hcpcs` first")
        searched = [system for system in searched if system in releases]
        if not searched:
            # --release named a release of the other system only: search that one.
            searched = [system for system in SYSTEMS if system in releases]
        trace.append("releases: " + ", ".join(f"{system} {releases[system].label}"
                                              + ("" if releases[system].is_current else " (not current)")
                                              for system in searched))
        # the lookups search the term without the words that ask for a code ("ICD-10 code for CHF": CHF, a signal of
        # which codes) or name the visit, and without the codes written in it (classification.text)
        run = _Search(self, classification, query, releases, trace)
        run.search(searched)
        related_started = time.perf_counter()
        results = self._matches(run.pool, run.systems, top, trace, classification.encounter)
        run.timings["related"] = (time.perf_counter() - related_started) * 1000
        search = CodeSearch(term, run.systems, results, summarize(term, run.systems, results), trace,
                            candidates=[candidate for system in run.systems for candidate in run.pool.of(system)],
                            encounter=classification.encounter)
        if external is not None:
            lookup = external.result()
            search.external = lookup.codes
            trace.append(lookup.describe())
        search.timings_ms = {name: round(ms, 2) for name, ms in
                             {**run.timings, "total": (time.perf_counter() - started) * 1000}.items()}
        trace.append(f"consolidate: {len(run.pool)} candidates -> {len(results)} codes "
                     f"(top {top} per system, tiers {_tier_counts(results)}) in {search.timings_ms['total']:.0f} ms")
        return search

    def rank_codes(self, query: str, *, sources: Sequence[str], release: str | None,
                   limit: int) -> list[RankedCode]:
        """The codes for a search's code slots, best first: a search lists codes as `medrag codes` ranks them."""
        found = self.find(query, systems=sources, release=release, top=min(max(limit, 1), MAX_TOP))
        return [RankedCode(plan.DOCUMENT_SOURCE[match.system], match.code, match.confidence)
                for match in found.results]

    def _matches(self, pool: CandidatePool, systems: list[str], top: int, trace: list[str],
                 encounter: str | None) -> list[CodeMatch]:
        chosen = top_results(pool, systems, top)
        trace.extend(describe_seventh_character(candidate, encounter) for candidate in chosen
                     if seventh_character_form(candidate, encounter) is not None)
        hcpcs_codes = [candidate.row.code for candidate in chosen
                       if candidate.row.system == HCPCS and candidate.row.kind == "procedure"]
        lcds = plan.lcds_listing(self.engine, hcpcs_codes) if hcpcs_codes else {}
        return [_match(candidate, lcds.get(candidate.row.code, []), encounter) for candidate in chosen]


def _match(candidate: Candidate, lcds: list[dict[str, Any]], encounter: str | None) -> CodeMatch:
    row = candidate.row
    related: list[Related] = []
    if row.system == ICD10CM and row.parent:
        related.append(Related("icd10cm", row.parent, row.parent_display or row.parent))
    related += [Related(item["source"], item["key"], item["title"], tuple(item["contractors"])) for item in lcds]
    reported = seventh_character_form(candidate, encounter)
    if reported is not None:
        related.insert(0, Related("icd10cm", row.code, row.display))
        return CodeMatch(row.system, reported.code, reported.display, candidate.confidence, candidate.tier or "",
                         True, tuple(related))
    return CodeMatch(row.system, row.code, row.display, candidate.confidence, candidate.tier or "",
                     row.billable if row.system == ICD10CM else None, tuple(related))


def seventh_character_form(candidate: Candidate, encounter: str | None = None) -> SeventhCharacter | None:
    """The form to report for a code that needs a 7th character: the first whose meaning is the encounter the term
    names ("first visit": initial; "follow-up visit": subsequent), else the Tabular's first (A, initial encounter;
    0, unspecified); none when the code was typed as it is."""
    if candidate.exact or not candidate.row.seventh:
        return None
    return next((form for form in candidate.row.seventh if _means(form, encounter)), candidate.row.seventh[0])


def _means(form: SeventhCharacter, encounter: str | None) -> bool:
    return encounter is not None and encounter in form.meaning.lower()


def describe_seventh_character(candidate: Candidate, encounter: str | None = None) -> str:
    """The trace line saying which 7th character was added, why, and which others the code takes."""
    chosen = seventh_character_form(candidate, encounter) or candidate.row.seventh[0]
    others = ", ".join(f"{form.character} {form.meaning}" for form in candidate.row.seventh if form != chosen)
    why = f"; the term names the {encounter} encounter" if _means(chosen, encounter) else ""
    return (f"7th character: {candidate.row.code} -> {chosen.code} ({chosen.character} {chosen.meaning}{why}"
            + (f"; also {others}" if others else "") + ")")


def _tier_counts(results: list[CodeMatch]) -> str:
    counts = {}
    for result in results:
        counts[result.tier] = counts.get(result.tier, 0) + 1
    return ", ".join(f"{tier} {count}" for tier, count in counts.items()) or "none"


class _Search:
    """One find() in progress: the term's concepts, the candidate pool, the rounds run so far."""

    def __init__(self, finder: CodeFinder, classification: Classification, query: TermQuery,
                 releases: dict[str, CodeRelease], trace: list[str]) -> None:
        self.finder = finder
        self.classification = classification
        self.releases = releases
        self.trace = trace
        self.pool = CandidatePool()
        self.text = classification.text
        self.query = query
        self.systems: list[str] = []
        self.embedding: Future[list[float] | None] | None = None
        self.semantic_systems: set[str] = set()
        self.state = ReflectState()
        self.priors = routing_priors(classification.scores)
        self.timings: dict[str, float] = {}

    @property
    def executor(self) -> ThreadPoolExecutor:
        return self.finder._executor

    def _submit(self, lookup: Lookup) -> Future[LookupResult]:
        return self.executor.submit(plan.run_lookup, self.finder.engine, lookup, self.releases[lookup.system])

    def _embed(self) -> list[float] | None:
        embedder = self.finder._get_embedder()
        return embedder.embed(self.text) if embedder is not None else None

    def search(self, systems: list[str]) -> None:
        """Run up to three rounds of lookups, reflecting after each."""
        self.systems = list(systems)
        decision = self._first_round()
        for number in range(2, MAX_ROUNDS + 1):
            if decision.done:
                break
            decision = self._next_round(number, decision)
        if decision.done:
            return
        self.trace.append(f"stop after {MAX_ROUNDS} rounds")

    # -- rounds --------------------------------------------------------------------------------------------------

    def _first_round(self) -> Decision:
        started = time.perf_counter()
        futures: list[Future[LookupResult]] = []
        for system, codes in self.classification.literal_codes.items():
            if system in self.systems:
                futures.append(self._submit(Lookup("exact", system, codes=codes, kinds=self._kinds(system))))
        skipped = []
        known: Future[frozenset[str]] | None = None
        if self.text:
            vector_systems = []
            if self.finder.can_embed:
                vector_systems = [system for system in self.systems if self.finder._vector_ready(system)]
                skipped += [f"vector {system} (its code documents have no embeddings)"
                            for system in self.systems if system not in vector_systems]
            else:
                skipped.append("vector (no query embedder)")
            if vector_systems:
                self.embedding = self.executor.submit(self._embed)
            if len(words_of(self.text)) <= TRIGRAM_MAX_WORDS:
                futures += [self._submit(Lookup("trigram", system, text=self.text, kinds=self._kinds(system)))
                            for system in self.systems]
            negated = self.query.negations()
            if negated:
                self.trace.append(f"negation: not {', '.join(concept.text for concept in negated)} (not searched; a "
                                  "code whose description names it is left out)")
            compounds = [f"{concept.text} = {wording.words[0]}" for concept in self.query.concepts
                         for wording in concept.wordings if wording.origin == COMPOUND]
            if compounds:
                self.trace.append(f"hyphenated: {', '.join(compounds)} (searched both ways)")
            futures += self._word_lookups(self.systems)
            # a word of the corpus that no code's wording holds ("medicare", "cover") is no misspelling: asked
            # while the lookups run, read before the first reflection
            known = self.executor.submit(plan.known_words, self.finder.engine, words_of(self.text))
            if self.embedding is not None:
                embedding = self.embedding.result()
                if embedding is None:
                    skipped.append(f"vector (no query embedder: {self.finder._embedder_failed})")
                else:
                    self.semantic_systems = set(vector_systems)
                    futures += [self._submit(Lookup("vector", system, embedding=tuple(embedding),
                                                    kinds=self._kinds(system))) for system in vector_systems]
        self._collect(1, futures, started, skipped)
        if known is not None:
            self.state.known_words = known.result()
        return self._reflect()

    def _next_round(self, number: int, decision: Decision) -> Decision:
        started = time.perf_counter()
        changed: set[str] = set()
        phrases = [(concept, expansion) for concept, expansions in decision.expansions for expansion in expansions]
        misspelled = [(system, word) for system, words in decision.misspelled.items() for word in words]
        corrections = [self.executor.submit(plan.correct_spelling, self.finder.engine, self.releases[system], word)
                       for system, word in misspelled]
        expansion_words = sorted({word for _, expansion in phrases for word in words_of(expansion)})
        lexemes = plan.analyze_words(self.finder.engine, expansion_words) if expansion_words else {}
        for concept, expansion in phrases:
            words = tuple(words_of(expansion))
            wording = Wording(words, frozenset(lexeme for word in words for lexeme in lexemes.get(word, ())), SYNONYM)
            if concept.add(wording):
                changed.update(concept.systems & set(self.systems))
        for (system, word), future in zip(misspelled, corrections, strict=True):
            corrected = future.result()
            if corrected is None:
                self.trace.append(f"spelling: no close word for {word!r} in {system}")
                continue
            new_word, similarity = corrected
            self.trace.append(f"spelling: {word} -> {new_word} ({system}, trigram similarity {similarity:.2f})")
            for concept in self.query.focus(system):
                if word in concept.words:
                    fixed = tuple(new_word if w == word else w for w in concept.words)
                    fixed_lexemes = plan.analyze_words(self.finder.engine, fixed)
                    lexeme_set = frozenset(lexeme for w in fixed for lexeme in fixed_lexemes.get(w, ()))
                    if concept.add(Wording(fixed, lexeme_set, SPELLING)):
                        changed.update(concept.systems & set(self.systems))
        if misspelled:
            self._reclassify()
        if decision.dropped:
            changed.update(self.systems)
        futures = self._word_lookups([system for system in self.systems if system in changed])
        if decision.headers:
            futures.append(self._submit(Lookup("children", ICD10CM, codes=tuple(decision.headers))))
        if not futures:
            self.trace.append(f"round {number}: nothing new to look up")
            return Decision()
        self.trace.append(f"round {number}: term as {self.query.describe()}")
        self._collect(number, futures, started, [])
        return self._reflect()

    def _reclassify(self) -> None:
        """Classify the term again with its spelling corrected ("tuberculosus" had no signal, "tuberculosis" has):
        the routing priors follow the corrected words."""
        corrected = []
        for concept in self.query.concepts:
            spelled = [wording for wording in concept.wordings if wording.origin == SPELLING]
            corrected += list(spelled[0].words if spelled else concept.words)
        classification = classify(self.finder.engine, " ".join(corrected), named=self.classification.named)
        priors = routing_priors(classification.scores)
        if priors != self.priors:
            self.trace.append(f"re{classification.describe()} -> routing priors "
                              + ", ".join(f"{system} {prior:.2f}" for system, prior in priors.items()))
            self.priors = priors

    def _word_lookups(self, systems: list[str]) -> list[Future[LookupResult]]:
        futures = []
        for system in systems:
            patterns = self.query.patterns(system)
            if patterns and len(self.query.searched(system)) <= WORDS_LEG_MAX_CONCEPTS:
                futures.append(self._submit(Lookup("words", system, patterns=patterns, kinds=self._kinds(system))))
            tsquery = self.query.tsquery(system)
            if tsquery and self.releases[system].is_current:
                futures.append(self._submit(Lookup("fulltext", system, tsquery=tsquery, kinds=self._kinds(system))))
            index_release = self.finder.index_release(self.releases[system]) if system == ICD10CM else None
            lexemes = self.query.searched_lexemes(system)
            if index_release is not None and lexemes:
                futures.append(self._submit(Lookup("index", system, lexemes=lexemes, index_release=index_release)))
        return futures

    def _kinds(self, system: str) -> tuple[str, ...]:
        if system == HCPCS and self.classification.wants_modifiers:
            return ("procedure", "modifier")
        return ("procedure",) if system == HCPCS else ("diagnosis",)

    # -- after each round ----------------------------------------------------------------------------------------

    def _collect(self, number: int, futures: list[Future[LookupResult]], started: float, skipped: list[str]) -> None:
        counts = []
        results = [future.result() for future in futures]
        for result in results:
            for code, hit in result.hits:
                self.pool.add(result.lookup.system, code, hit)
            if result.lookup.leg == "children":
                self._inherit_index_entries(result)
        details = {system: self.executor.submit(self.finder.code_rows, self.releases[system],
                                                self.pool.without_details(system))
                   for system in self.systems if self.pool.without_details(system)}
        for system, future in details.items():
            kinds = self._kinds(system)
            self.pool.attach(system, {code: row for code, row in future.result().items() if row.kind in kinds})
        for result in results:
            found = sum(1 for code, _ in result.hits if (result.lookup.system, code) in self.pool.candidates)
            counts.append(f"{result.lookup.describe()} {found} ({result.milliseconds:.0f} ms)")
            if result.lookup.leg == "exact":
                missing = [code for code in result.lookup.codes
                           if (result.lookup.system, code) not in self.pool.candidates]
                if missing:
                    release = self.releases[result.lookup.system]
                    counts.append(f"{', '.join(missing)} not in {release.system} {release.label}")
        self._add_similarities()
        parts = counts + [f"{item} skipped" for item in skipped]
        self.timings[f"round_{number}"] = (time.perf_counter() - started) * 1000
        self.trace.append(f"round {number}: " + "; ".join(parts) + f" [{self.timings[f'round_{number}']:.0f} ms]")

    def _inherit_index_entries(self, result: LookupResult) -> None:
        """The billable codes under a header the Index gave (Cancer > breast -> C50.91-) are what that entry leads
        to, as a coder completes the code in the Tabular: each gets the entry as a wording inherited from the
        header, so the words a code adds ("right") count as unexplained and the unspecified default comes first."""
        headers = sorted(result.lookup.codes, key=len, reverse=True)
        for code, _hit in result.hits:
            header = next((header for header in headers if code.startswith(header)), None)
            found = self.pool.candidates.get((ICD10CM, header)) if header else None
            entry = found.hits.get("index") if found else None
            if entry is not None and not entry.via:
                self.pool.add(ICD10CM, code, replace(entry, via=header))

    def _add_similarities(self) -> None:
        if self.embedding is None or not self.semantic_systems:
            return
        embedding = self.embedding.result()
        if embedding is None:
            return
        futures = {}
        for system in self.semantic_systems:
            missing = [candidate.row.code for candidate in self.pool.of(system) if not candidate.similarity_read]
            if missing:
                futures[system] = self.executor.submit(plan.semantic_similarities, self.finder.engine, system,
                                                       missing, embedding)
        for system, future in futures.items():
            similarities = future.result()
            for candidate in self.pool.of(system):
                if not candidate.similarity_read:
                    candidate.similarity = similarities.get(candidate.row.code)
                    candidate.similarity_read = True

    def _reflect(self) -> Decision:
        score_candidates(self.finder.engine, self.releases, self.pool, self.query, kinds=ALL_KINDS,
                         wants_modifiers=self.classification.wants_modifiers, semantic_systems=self.semantic_systems,
                         priors=self.priors)
        decision = reflect(self.pool, self.query, self.systems, state=self.state, synonyms=self.finder.synonyms,
                           priors=self.priors)
        for system in self.systems:
            best = [candidate for candidate in self.pool.of(system) if candidate.score > 0]
            best.sort(key=lambda candidate: -candidate.score)
            if best:
                self.trace.append(f"score {system}: " + "; ".join(candidate.explain() for candidate in best[:3]))
        if decision.done:
            self.trace.append("reflect: enough" if any(c.score > 0 for c in self.pool.candidates.values())
                              else "reflect: nothing to broaden")
        else:
            self.trace += [f"reflect: {reason}" for reason in decision.reasons]
        return decision

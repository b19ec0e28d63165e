-- Views over current data for SQL analysts. A repeatable script (every statement is CREATE OR REPLACE):
-- `medrag db migrate` runs it again whenever it changes, before sql/search.sql and sql/roles.sql.

-- The releases whose rows may be read: loaded whole, or loaded with export members missing (partial); never one
-- pending, loading or failed. Every statement that picks a release reads this view, so the rule is written once.
CREATE OR REPLACE VIEW medrag_usable_release AS
SELECT * FROM release WHERE status IN ('loaded', 'partial');

-- What the full-text query adds to a query's words (medrag_text_queries, medrag_known_word): every row of the synonym
-- table but the exact-case document abbreviations (in a lower-cased query "hearing aids" must not bring AIDS's
-- wording), its term spelt as the query is split. A term and expansion two rows share come twice: the query's
-- expansions are a set (UNION) and a known word is counted as present or not.
CREATE OR REPLACE VIEW medrag_search_synonym AS
SELECT search_term AS term, expansion FROM medrag_synonym WHERE documents <> 'exact';

-- Every chunk with its document's metadata; `is_current` follows the document's release.
CREATE OR REPLACE VIEW v_chunk AS
SELECT c.id AS chunk_id, d.id AS document_id, d.source, d.key, d.version, d.title, c.heading, c.section, c.ordinal,
       c.text, c.page_start, c.page_end, r.label AS release, d.url, d.effective_date, d.termination_date,
       d.metadata, d.is_current, EXISTS (SELECT 1 FROM chunk_vector v WHERE v.chunk_id = c.id) AS has_embedding
FROM chunk c
JOIN document d ON d.id = c.document_id
JOIN release r ON r.id = d.release_id;

CREATE OR REPLACE VIEW v_hcpcs_current AS
SELECT r.label AS release, h.code, h.kind, h.long_description, h.short_description, h.coverage_code,
       h.betos_code, h.pricing_indicator_codes, h.code_added_date, h.action_effective_date, h.termination_date,
       h.action_code
FROM hcpcs_code h JOIN release r ON r.id = h.release_id AND r.is_current;

CREATE OR REPLACE VIEW v_icd10cm_current AS
SELECT r.label AS release, c.code, c.description, c.billable, c.parent_code, c.chapter, ch.description AS chapter_title,
       c.section_id, s.description AS section_title, c.depth, c.requires_seventh_character, c.inclusion_terms,
       c.excludes1, c.excludes2, c.code_first, c.use_additional_code, c.seventh_character
FROM icd10cm_code c
JOIN release r ON r.id = c.release_id AND r.is_current
LEFT JOIN icd10cm_chapter ch ON ch.release_id = c.release_id AND ch.chapter = c.chapter
LEFT JOIN icd10cm_section s ON s.release_id = c.release_id AND s.section_id = c.section_id;

CREATE OR REPLACE VIEW v_ncd_current AS
SELECT r.label AS release, n.section, n.title, n.ncd_id, n.version, n.effective_date, n.implementation_date,
       n.termination_date, n.coverage_level, n.description, n.indications_limitations, n.cross_reference, n.other,
       n.transmittal_url,
       'https://www.cms.gov/medicare-coverage-database/view/ncd.aspx?NCDId=' || n.ncd_id || '&ncdver=' || n.version
           AS url
FROM ncd n JOIN release r ON r.id = n.release_id AND r.is_current
WHERE n.is_current;

-- Each LCD-to-HCPCS row of the current MCD release with the LCD's contractors and the states they serve.
CREATE OR REPLACE VIEW v_lcd_hcpcs AS
SELECT r.label AS release, 'L' || x.lcd_id AS lcd, x.lcd_version, x.hcpc_code_id AS hcpcs_code,
       x.long_description AS hcpcs_description, x.hcpc_code_group AS code_group, l.title AS lcd_title,
       contractors.names AS contractors, contractors.numbers AS contractor_numbers, contractors.states
FROM mcd_lcd_x_hcpc_code x
JOIN release r ON r.id = x.release_id AND r.is_current
LEFT JOIN LATERAL (
    SELECT title FROM mcd_lcd l WHERE l.release_id = x.release_id AND l.lcd_id = x.lcd_id
    ORDER BY l.lcd_version DESC LIMIT 1
) l ON true
LEFT JOIN LATERAL (
    SELECT array_agg(DISTINCT c.contractor_bus_name) AS names, array_agg(DISTINCT c.contractor_number) AS numbers,
           array_remove(array_agg(DISTINCT s.state_abbrev ORDER BY s.state_abbrev), NULL) AS states
    FROM mcd_lcd_x_contractor lc
    JOIN mcd_contractor c ON c.release_id = lc.release_id AND c.contractor_id = lc.contractor_id
         AND c.contractor_type_id = lc.contractor_type_id AND c.contractor_version = lc.contractor_version
    LEFT JOIN mcd_contractor_jurisdiction j ON j.release_id = c.release_id AND j.contractor_id = c.contractor_id
         AND j.contractor_type_id = c.contractor_type_id AND j.contractor_version = c.contractor_version
    LEFT JOIN mcd_state_lookup s ON s.release_id = j.release_id AND s.state_id = j.state_id
    WHERE lc.release_id = x.release_id AND lc.lcd_id = x.lcd_id AND lc.lcd_version = x.lcd_version
) contractors ON true;

-- Release history: every release of every source with its provenance summary.
CREATE OR REPLACE VIEW v_release_history AS
SELECT r.source, r.label, r.status, r.is_current, r.fetched_at, r.loaded_at,
       r.status_detail -> 'missing_members' AS missing_members,
       count(f.id) AS files, coalesce(sum(f.bytes), 0) AS bytes,
       array_agg(f.url ORDER BY f.url) FILTER (WHERE f.id IS NOT NULL) AS urls,
       array_agg(f.sha256 ORDER BY f.url) FILTER (WHERE f.id IS NOT NULL) AS sha256s
FROM release r LEFT JOIN raw_file f ON f.release_id = r.id
GROUP BY r.id;

-- Every ICD-10-CM code of every release, for release-to-release comparisons.
CREATE OR REPLACE VIEW v_icd10cm_history AS
SELECT r.label AS release, r.is_current, c.code, c.description, c.billable, c.seventh_character
FROM icd10cm_code c JOIN release r ON r.id = c.release_id;

CREATE OR REPLACE VIEW v_hcpcs_history AS
SELECT r.label AS release, r.is_current, h.code, h.kind, h.long_description, h.termination_date, h.action_code
FROM hcpcs_code h JOIN release r ON r.id = h.release_id;

-- The ICD-10-CM Index as coders read it: "Calculus, calculi, calculous > ureter" -> N20.1, per release. A code
-- ending in "-" needs more characters (see the Tabular); see / see_also name where the Index sends the reader.
CREATE OR REPLACE VIEW v_icd10cm_index AS
SELECT r.label AS release, r.is_current, e.index_name, e.entry_id, e.level,
       array_to_string(e.path, ' > ') AS path, e.nemod, e.column_name, e.code, e.see, e.see_also, e.source_file
FROM icd10cm_index_entry e JOIN release r ON r.id = e.release_id;

-- The Table of Drugs and Chemicals, one row per substance with a column per intent (as printed).
CREATE OR REPLACE VIEW v_icd10cm_drug AS
SELECT r.label AS release, e.entry_id, array_to_string(e.path, ' > ') AS substance, max(e.nemod) AS nemod,
       max(e.code) FILTER (WHERE e.column_name LIKE 'Poisoning Accidental%') AS poisoning_accidental,
       max(e.code) FILTER (WHERE e.column_name LIKE 'Poisoning Intentional%') AS poisoning_intentional_self_harm,
       max(e.code) FILTER (WHERE e.column_name LIKE 'Poisoning Assault%') AS poisoning_assault,
       max(e.code) FILTER (WHERE e.column_name LIKE 'Poisoning Undetermined%') AS poisoning_undetermined,
       max(e.code) FILTER (WHERE e.column_name LIKE 'Adverse effect%') AS adverse_effect,
       max(e.code) FILTER (WHERE e.column_name LIKE 'Underdosing%') AS underdosing
FROM icd10cm_index_entry e JOIN release r ON r.id = e.release_id
WHERE e.index_name = 'drugs'
GROUP BY r.label, e.entry_id, e.path;

-- The Neoplasm Table, one row per site with a column per behaviour (as printed).
CREATE OR REPLACE VIEW v_icd10cm_neoplasm AS
SELECT r.label AS release, e.entry_id, array_to_string(e.path, ' > ') AS site, max(e.nemod) AS nemod,
       max(e.code) FILTER (WHERE e.column_name = 'Malignant Primary') AS malignant_primary,
       max(e.code) FILTER (WHERE e.column_name = 'Malignant Secondary') AS malignant_secondary,
       max(e.code) FILTER (WHERE e.column_name = 'Ca in situ') AS ca_in_situ,
       max(e.code) FILTER (WHERE e.column_name = 'Benign') AS benign,
       max(e.code) FILTER (WHERE e.column_name = 'Uncertain Behavior') AS uncertain_behavior,
       max(e.code) FILTER (WHERE e.column_name = 'Unspecified Behavior') AS unspecified_behavior
FROM icd10cm_index_entry e JOIN release r ON r.id = e.release_id
WHERE e.index_name = 'neoplasms'
GROUP BY r.label, e.entry_id, e.path;

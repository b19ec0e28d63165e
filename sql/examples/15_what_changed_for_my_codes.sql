-- What the releases changed for a coder's own codes (any spelling of the dot), in every comparison a refresh kept:
-- the code itself, the header above it, codes added under it, an LCD or NCD that lists it (`medrag changes --codes`).
-- expect-contains: J2920
-- expect-contains: terminated
-- expect-contains: became_header
SELECT v.source, v.from_label, v.to_label, m.your_code, m.relation, v.item, v.change, v.effective_date, v.title
FROM medrag_changes_for_codes(ARRAY['J2920', 'M5450', 'B88.09', 'E11.9'],
                              (SELECT array_agg(id) FROM release_change_set)) m
JOIN v_release_changes v USING (change_id)
ORDER BY m.your_code, v.to_label, v.item;

-- Codes whose billable flag changed between releases: a billable code that became a header must not be billed.
-- expect-contains: M54.5
SELECT old.code, old.description, old.billable AS billable_fy2021, new.billable AS billable_fy2026
FROM v_icd10cm_history old
JOIN v_icd10cm_history new ON new.code = old.code AND new.release = 'FY2026'
WHERE old.release = 'FY2021' AND old.billable IS DISTINCT FROM new.billable
ORDER BY old.code;

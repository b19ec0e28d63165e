-- The billable codes under an ICD-10-CM category (here E11.6, type 2 diabetes with other specified complications).
-- expect-contains: E11.621
SELECT code, description
FROM v_icd10cm_current
WHERE code LIKE 'E11.6%' AND billable
ORDER BY code;

-- ICD-10-CM codes added between two releases (FY2021 -> FY2026).
-- expect-row-count: 3119
-- expect-contains: M54.50
SELECT new.code, new.description, new.billable
FROM v_icd10cm_history new
WHERE new.release = 'FY2026'
  AND NOT EXISTS (SELECT 1 FROM v_icd10cm_history old WHERE old.release = 'FY2021' AND old.code = new.code)
ORDER BY new.code;

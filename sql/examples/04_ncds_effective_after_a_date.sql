-- National Coverage Determinations that took effect after a date, newest first.
-- expect-contains: 240.2
SELECT section, title, effective_date, url
FROM v_ncd_current
WHERE effective_date > DATE '2021-09-01'
ORDER BY effective_date DESC, section;

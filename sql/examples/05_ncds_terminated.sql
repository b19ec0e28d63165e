-- NCDs that are no longer in force (a termination date is set), with the date they ended.
SELECT section, title, effective_date, termination_date
FROM v_ncd_current
WHERE termination_date IS NOT NULL
ORDER BY termination_date DESC, section;

-- How many current HCPCS Level II procedure codes each letter section holds, and how many are terminated.
SELECT left(code, 1) AS section, count(*) AS codes, count(*) FILTER (WHERE termination_date IS NOT NULL) AS terminated
FROM v_hcpcs_current
WHERE kind = 'procedure'
GROUP BY 1
ORDER BY 1;

-- HCPCS codes the current release deletes (action code D), with the date the deletion takes effect.
-- expect-contains: D
SELECT code, long_description, action_code, action_effective_date, termination_date
FROM v_hcpcs_current
WHERE action_code = 'D'
ORDER BY code;

-- LCDs in force in one state (here Alaska) that list at least one HCPCS code, with how many codes each lists.
-- expect-contains: L33718
SELECT lcd, count(DISTINCT hcpcs_code) AS hcpcs_codes
FROM v_lcd_hcpcs
WHERE 'AK' = ANY (states)
GROUP BY lcd
ORDER BY hcpcs_codes DESC, lcd;

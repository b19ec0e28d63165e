-- Every LCD that lists a HCPCS code (here E0601, CPAP device), with its contractors and the states they serve.
-- expect-contains: L33718
SELECT lcd, lcd_title, hcpcs_code, hcpcs_description, contractors, contractor_numbers, states
FROM v_lcd_hcpcs
WHERE hcpcs_code = 'E0601'
ORDER BY lcd;

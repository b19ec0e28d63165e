-- Number of current LCDs each contractor publishes, largest first.
-- expect-contains: Noridian Healthcare Solutions, LLC
SELECT c.contractor_bus_name AS contractor, c.contractor_number, count(DISTINCT x.lcd_id) AS lcds
FROM mcd_lcd_x_contractor x
JOIN release r ON r.id = x.release_id AND r.is_current
JOIN mcd_contractor c ON c.release_id = x.release_id AND c.contractor_id = x.contractor_id
     AND c.contractor_type_id = x.contractor_type_id AND c.contractor_version = x.contractor_version
GROUP BY 1, 2
ORDER BY lcds DESC, contractor, contractor_number;

-- Local determinations that cite a national one (here NCD 240.2, home use of oxygen).
SELECT DISTINCT 'L' || x.lcd_id AS lcd, n.section AS ncd, n.title AS ncd_title
FROM mcd_lcd_related_ncd_documents x
JOIN release r ON r.id = x.release_id AND r.is_current
JOIN ncd n ON n.release_id = x.release_id AND n.ncd_id = x.r_ncd_id
WHERE n.section = '240.2'
ORDER BY lcd;

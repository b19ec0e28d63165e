-- The current release of every source and the files it was loaded from (URL, SHA-256, bytes).
-- expect-contains: hcpcs
SELECT source, label, status, loaded_at, files, bytes, urls, sha256s, missing_members
FROM v_release_history
WHERE is_current
ORDER BY source;

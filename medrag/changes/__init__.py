"""What each release changed: change sets computed after a refresh (compute), read as a digest (digest), a coder's
code list matched against them (in SQL, sql/changes.sql), written as markdown, CSV or JSON (render)."""

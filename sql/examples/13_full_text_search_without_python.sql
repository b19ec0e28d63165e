-- Hybrid search needs a query vector (`medrag embed "..."` prints one for \set); full text alone needs nothing.
-- expect-contains: 240.2
SELECT rank, source, key, title, heading, left(text, 120) AS snippet
FROM medrag_search_text('home oxygen therapy hypoxemia', 5, '{"source": ["ncd"]}');

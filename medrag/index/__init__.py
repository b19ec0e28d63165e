"""Documents out of tables: chunking, enrichment, document writing and embedding."""

"""Search: query embedding, the hybrid search, and its evaluation."""

"""HCPCS Level II: the quarterly fixed-width release, one document per code."""

from medrag.sources.registry import CODE_GROUP, DocumentKind, SourceSpec

# documents_format 2: a code's vector is computed from its descriptions alone (chunk.embedding_text)
SPEC = SourceSpec("hcpcs", kinds=(DocumentKind("hcpcs", CODE_GROUP),), documents_format=2)

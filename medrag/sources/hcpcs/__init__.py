"""HCPCS Level II: the quarterly fixed-width release, one document per code."""

from medrag.sources.registry import CODE_GROUP, DocumentKind, SourceSpec

# documents_format 2: a code's vector is computed from its descriptions alone (chunk.embedding_text)
PAGE_URL = "https://www.cms.gov/medicare/coding-billing/healthcare-common-procedure-system/quarterly-update"
SPEC = SourceSpec("hcpcs", page_url=PAGE_URL, kinds=(DocumentKind("hcpcs", CODE_GROUP),), documents_format=2)

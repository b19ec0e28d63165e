"""HCPCS Level II: the quarterly fixed-width release, one document per code."""

from medrag.sources.registry import CODE_GROUP, DocumentKind, ReleaseDiff, SourceSpec

PAGE_URL = "https://www.cms.gov/medicare/coding-billing/healthcare-common-procedure-system/quarterly-update"
KINDS = (DocumentKind("hcpcs", CODE_GROUP, "HCPCS", authority_rank=3),)
DIFF = ReleaseDiff("hcpcs_code", "code", ("long_description", "short_description", "termination_date", "coverage_code"))
# documents_format 2: a code's vector is computed from its descriptions alone (chunk.embedding_text)
SPEC = SourceSpec("hcpcs", page_url=PAGE_URL, kinds=KINDS, documents_format=2, diff=DIFF)

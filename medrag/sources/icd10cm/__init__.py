"""ICD-10-CM: the CDC tabular XML and order files, one document per code."""

from medrag.sources.registry import CODE_GROUP, DocumentKind, ReleaseDiff, SourceSpec

PAGE_URL = "https://www.cms.gov/medicare/coding-billing/icd-10-codes/icd-10-cm-files"
KINDS = (DocumentKind("icd10cm", CODE_GROUP, "ICD-10-CM", authority_rank=3),)
DIFF = ReleaseDiff("icd10cm_code", "code", ("description", "billable"))
SPEC = SourceSpec("icd10cm", page_url=PAGE_URL, kinds=KINDS, diff=DIFF)

"""ICD-10-CM: the CDC tabular XML and order files, one document per code."""

from medrag.sources.registry import CODE_GROUP, DocumentKind, SourceSpec

PAGE_URL = "https://www.cms.gov/medicare/coding-billing/icd-10-codes/icd-10-cm-files"
SPEC = SourceSpec("icd10cm", page_url=PAGE_URL, kinds=(DocumentKind("icd10cm", CODE_GROUP),))

"""ICD-10-CM: the CDC tabular XML and order files, one document per code."""

from medrag.sources.registry import CODE_GROUP, DocumentKind, SourceSpec

SPEC = SourceSpec("icd10cm", kinds=(DocumentKind("icd10cm", CODE_GROUP),))

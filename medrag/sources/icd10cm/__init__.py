"""ICD-10-CM: the CDC tabular XML and order files."""

from medrag.sources.icd10cm.release import SOURCE

__all__ = ["SOURCE"]

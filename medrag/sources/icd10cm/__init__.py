"""ICD-10-CM: the CDC tabular XML and order files, one document per code."""

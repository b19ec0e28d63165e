"""The clinical code finder: a term in, ICD-10-CM and HCPCS codes out, with confidence, tiers and a trace."""

from medrag.codes.classify import HCPCS, ICD10CM, SYSTEMS, classify
from medrag.codes.finder import CodeFinder, CodeQueryError, clean_term
from medrag.codes.results import CodeMatch, CodeSearch

__all__ = ["HCPCS", "ICD10CM", "SYSTEMS", "CodeFinder", "CodeMatch", "CodeQueryError", "CodeSearch", "classify",
           "clean_term"]

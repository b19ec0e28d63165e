"""The Medicare Coverage Database: NCD, LCD and Article CSV exports, one document per determination."""

from medrag.sources.registry import POLICY_GROUP, DocumentKind, SourceSpec

SPEC = SourceSpec("mcd", kinds=(DocumentKind("ncd", POLICY_GROUP), DocumentKind("lcd", POLICY_GROUP),
                               DocumentKind("article", POLICY_GROUP)))

"""The Medicare Coverage Database: NCD, LCD and Article CSV exports, one document per determination."""

from medrag.sources.registry import POLICY_GROUP, DocumentKind, SourceSpec

PAGE_URL = "https://www.cms.gov/medicare-coverage-database/downloads/downloads.aspx"
KINDS = (DocumentKind("ncd", POLICY_GROUP), DocumentKind("lcd", POLICY_GROUP), DocumentKind("article", POLICY_GROUP))
SPEC = SourceSpec("mcd", page_url=PAGE_URL, kinds=KINDS)

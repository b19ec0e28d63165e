"""The Medicare Coverage Database: NCD, LCD and Article CSV exports, one document per determination."""

from medrag.sources.registry import POLICY_GROUP, DocumentKind, SourceSpec

PAGE_URL = "https://www.cms.gov/medicare-coverage-database/downloads/downloads.aspx"
KINDS = (DocumentKind("ncd", POLICY_GROUP, "NCD", authority_rank=0),
         DocumentKind("lcd", POLICY_GROUP, "LCD", authority_rank=2),
         DocumentKind("article", POLICY_GROUP, "Article", authority_rank=2))
# documents_format 2: an NCD's (or LCD's) CMS keywords are a section of its document
SPEC = SourceSpec("mcd", page_url=PAGE_URL, kinds=KINDS, documents_format=2)

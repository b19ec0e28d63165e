"""The Internet-Only Manuals: chapter PDFs, one document per numbered section."""

from medrag.sources.registry import POLICY_GROUP, DocumentKind, SourceSpec

PAGE_URL = "https://www.cms.gov/medicare/regulations-guidance/manuals/internet-only-manuals-ioms"
KINDS = (DocumentKind("iom", POLICY_GROUP, "IOM", authority_rank=1),)
SPEC = SourceSpec("iom", page_url=PAGE_URL, kinds=KINDS)

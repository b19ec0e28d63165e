"""The Internet-Only Manuals: chapter PDFs, one document per numbered section."""

from medrag.sources.registry import POLICY_GROUP, DocumentKind, SourceSpec

SPEC = SourceSpec("iom", kinds=(DocumentKind("iom", POLICY_GROUP),))

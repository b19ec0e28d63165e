"""The Internet-Only Manuals: chapter PDFs."""

from medrag.sources.iom.release import SOURCE

__all__ = ["SOURCE"]

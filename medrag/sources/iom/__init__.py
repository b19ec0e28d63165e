"""The Internet-Only Manuals: chapter PDFs, one document per numbered section."""

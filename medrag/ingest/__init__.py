"""Releases in: discovery pages, downloads with provenance, archives, manifests, binary COPY, releases."""

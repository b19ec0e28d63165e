"""HCPCS Level II: the quarterly fixed-width release, one document per code."""

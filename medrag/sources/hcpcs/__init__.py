"""HCPCS Level II: the quarterly fixed-width release."""

from medrag.sources.hcpcs.release import SOURCE

__all__ = ["SOURCE"]

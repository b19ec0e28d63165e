"""The Medicare Coverage Database: NCD, LCD and Article CSV exports."""

from medrag.sources.mcd.release import SOURCE

__all__ = ["SOURCE"]

"""The Medicare Coverage Database: NCD, LCD and Article CSV exports, one document per determination."""

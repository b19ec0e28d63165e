"""A coder's code list: one HCPCS code or modifier or ICD-10-CM code per line, any spelling of the dot, checked
before it is used."""

from __future__ import annotations

import re
from pathlib import Path

from medrag.core.errors import MedragError
from medrag.core.identifiers import HCPCS, ICD10CM_LISTED, MODIFIER

MAX_CODES = 100_000
MAX_API_CODES = 2_000  # GET /changes: a query string of 2,000 codes is about 16 KB, within every proxy's limit
_CODE = re.compile(rf"(?:{HCPCS}|{ICD10CM_LISTED}|{MODIFIER})")


def parse_code_list(lines: list[str], where: str = "code list") -> list[str]:
    """The codes of the lines, upper-cased and in order, blank lines and '#' comments skipped; a line that is not a
    code is a MedragError naming it."""
    codes = []
    for number, line in enumerate(lines, start=1):
        value = line.split("#", 1)[0].strip(" \t\r,;").upper()
        if not value:
            continue
        if not _CODE.fullmatch(value):
            raise MedragError(f"{where}: entry {number} is not a HCPCS code or modifier or an ICD-10-CM code: "
                              f"{line.strip()[:40]!r}")
        codes.append(value)
    if len(codes) > MAX_CODES:
        raise MedragError(f"{where}: {len(codes):,} codes; at most {MAX_CODES:,} at a time")
    first_spelling = {}
    for code in codes:  # M54.50 and M5450 are one code: the first spelling stands for it
        first_spelling.setdefault(code.replace(".", ""), code)
    return list(first_spelling.values())


def read_code_list(path: Path) -> list[str]:
    """The codes of a text file (UTF-8, one per line); unreadable or binary files are a MedragError."""
    try:
        lines = Path(path).read_text(encoding="utf-8-sig").splitlines()
    except UnicodeDecodeError as exc:
        raise MedragError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except OSError as exc:
        raise MedragError(f"{path}: cannot read ({exc.strerror})") from exc
    return parse_code_list(lines, str(path))

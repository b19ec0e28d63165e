"""What every ICD-10-CM XML reader shares: the format error, safe parsing, whitespace clean-up."""

from __future__ import annotations

import re
import xml.etree.ElementTree as StdlibElementTree
from pathlib import Path
from xml.etree.ElementTree import Element

import defusedxml
import defusedxml.ElementTree as SafeElementTree

from medrag.core.errors import MedragError

_WHITESPACE = re.compile(r"\s+")


class Icd10cmFormatError(MedragError):
    """An ICD-10-CM release file (or release archive) is malformed, unsafe or not what its name claims."""


def clean_text(text: str | None) -> str | None:
    """Collapse whitespace runs (the XML is pretty-printed, some notes start with tabs); '' becomes None."""
    if text is None:
        return None
    collapsed = _WHITESPACE.sub(" ", text).strip()
    return collapsed or None


def parse_xml_safely(path: Path, what: str = "XML file") -> Element:
    """Parse with defusedxml so entity bombs and external references become Icd10cmFormatError."""
    try:
        tree = SafeElementTree.parse(str(path), forbid_dtd=False, forbid_entities=True, forbid_external=True)
    except defusedxml.EntitiesForbidden as exc:
        raise Icd10cmFormatError(
            f"{path}: XML declares an entity ({exc}); refused (XML bomb / external entity protection)"
        ) from exc
    except (defusedxml.ExternalReferenceForbidden, defusedxml.DTDForbidden) as exc:
        raise Icd10cmFormatError(f"{path}: XML refers to external resources ({exc}); refused") from exc
    except defusedxml.DefusedXmlException as exc:
        raise Icd10cmFormatError(f"{path}: unsafe XML refused ({exc})") from exc
    except StdlibElementTree.ParseError as exc:
        raise Icd10cmFormatError(f"{path}: not well-formed XML ({exc}); truncated or corrupt file?") from exc
    except OSError as exc:
        raise Icd10cmFormatError(f"{path}: cannot read {what} ({exc})") from exc
    return tree.getroot()

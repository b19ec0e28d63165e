"""Links on a web page: (absolute URL, visible text) for every <a href>, for discovering release files."""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import urljoin


def normalise_space(text: str) -> str:
    """Collapse runs of whitespace (including non-breaking spaces from &nbsp;) to one plain space."""
    return " ".join(text.replace("\xa0", " ").split())


class _AnchorCollector(HTMLParser):
    """Collects (href, visible text) for every <a href> in a page, text of nested tags included."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.anchors: list[tuple[str, str]] = []
        self._href: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag != "a":
            return
        # An <a> left open by sloppy markup ends where the next one starts, as browsers render it.
        self._close_anchor()
        href = dict(attrs).get("href")
        if href and href.strip():
            self._href = href.strip()
            self._text = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "a":
            self._close_anchor()

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self._text.append(data)

    def close(self) -> None:
        super().close()
        self._close_anchor()

    def _close_anchor(self) -> None:
        if self._href is not None:
            self.anchors.append((self._href, normalise_space("".join(self._text))))
        self._href = None
        self._text = []


def page_links(html: str, base_url: str) -> list[tuple[str, str]]:
    """(absolute URL, link text) of every link on the page, in page order, duplicates kept."""
    collector = _AnchorCollector()
    collector.feed(html)
    collector.close()
    return [(urljoin(base_url, href), text) for href, text in collector.anchors]

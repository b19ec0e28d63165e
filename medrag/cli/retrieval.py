"""`medrag search` and `medrag embed`: hybrid retrieval from the shell, and query vectors for psql."""

from __future__ import annotations

import json
import textwrap

import click

from medrag.core.config import load_settings
from medrag.core.db import get_engine, read_engine
from medrag.retrieval.search import (
    CODES_RANKED,
    SOURCES,
    SearchFilters,
    embedding_text,
    search,
    validate_query,
    vector_literal,
)


def query_embedder():  # noqa: ANN201 - QueryEmbedder is imported lazily to keep `medrag --help` fast
    """The fast query-time embedder (ONNX when exported, else torch) for the configured model."""
    from medrag.retrieval.query_embedding import QueryEmbedder

    return QueryEmbedder.for_settings(load_settings())


def filter_options(command):  # noqa: ANN001, ANN201 - a click decorator
    """The metadata filters shared by search and ask."""
    options = [
        click.option("-k", "k", default=10, show_default=True, type=click.IntRange(1, 200), help="Hits to return."),
        click.option("--source", "sources", multiple=True, type=click.Choice(SOURCES), help="Only these sources."),
        click.option("--key", "keys", multiple=True, help="Only these document keys (240.2, L33718, E0601...)."),
        click.option("--release", default="current", show_default=True, help="'current', 'all' or a label."),
        click.option("--as-of", "as_of", type=click.DateTime(formats=["%Y-%m-%d"]), default=None,
                     help="Only documents in force on this date (YYYY-MM-DD)."),
        click.option("--contractor", default=None, help="LCDs/Articles of this contractor (name or number)."),
        click.option("--state", default=None, help="LCDs/Articles in force in this state (two letters)."),
        click.option("--manual", default=None, help="IOM manual, e.g. 100-02."),
        click.option("--chapter", default=None, help="IOM chapter number."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def build_filters(sources, keys, release, as_of, contractor, state, manual, chapter) -> SearchFilters:  # noqa: ANN001
    """SearchFilters from the CLI options (validated there)."""
    return SearchFilters(
        sources=tuple(sources), keys=tuple(keys), release=release, as_of=as_of.date() if as_of else None,
        contractor=contractor, state=state, manual=manual, chapter=chapter,
    )


@click.command("search")
@click.argument("query")
@filter_options
@click.option("--json", "as_json", is_flag=True, help="Print exactly one JSON object.")
def search_command(query: str, k: int, as_json: bool, **filter_values: object) -> None:
    """Hybrid search: exact identifiers, vectors, full text and trigram similarity, fused."""
    validate_query(query)
    engine, embedder = read_engine(), query_embedder()
    result = search(engine, query, k=k, filters=build_filters(**filter_values), embedder=embedder)
    if as_json:
        click.echo(json.dumps(result.as_json(), default=str))
        return
    if not result.hits:
        click.echo("No results.")
    for hit in result.hits:
        score = (f"code finder confidence {hit.score:.2f}" if hit.ranked_by == CODES_RANKED
                 else f"score {hit.score:.3f}")
        click.echo(f"{hit.rank:>2}. [{hit.source} {hit.key}] {hit.title}  ({score}, {hit.release})")
        click.echo(f"    {hit.heading}")
        snippet = textwrap.shorten(hit.text, width=300, placeholder=" ...")
        click.echo(textwrap.indent(textwrap.fill(snippet, width=100), "    "))
        if hit.url:
            click.echo(f"    {hit.url}")
    timings = ", ".join(f"{name} {ms:.0f} ms" for name, ms in result.timings_ms.items())
    click.echo(f"\n{len(result.hits)} hits ({timings})", err=True)


@click.command("embed")
@click.argument("text")
def embed_command(text: str) -> None:
    r"""Print the query vector as a pgvector literal, for psql: \set q '[...]' then medrag_search(:'q', ...).

    Misspelt words are corrected first, as `medrag search` does, so psql and the CLI rank the same rows.
    """
    embedder = query_embedder()
    with get_engine().connect() as conn:
        click.echo(vector_literal(embedder.embed(embedding_text(conn, validate_query(text), embedder))))


COMMANDS = [search_command, embed_command]

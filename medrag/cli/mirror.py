"""`medrag mirror build`: a static CMS-like site from a local corpus folder, for MEDRAG_SOURCE=mirror:DEST."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from medrag.ingest.mirror import build_mirror


@click.group("mirror")
def mirror_group() -> None:
    """Build a local mirror of the CMS download pages from a folder of release files."""


@mirror_group.command("build")
@click.argument("cms_dir", type=click.Path(file_okay=False, path_type=Path))
@click.argument("dest", type=click.Path(file_okay=False, path_type=Path))
def mirror_build(cms_dir: Path, dest: Path) -> None:
    """Write the site under DEST from CMS_DIR (unchanged files are kept as they are) and print the setting to use."""
    dest = dest.resolve()
    written: list[str] = []
    files = build_mirror(cms_dir, dest, on_write=written.append)
    click.echo(f"mirror: {len(files)} files under {dest} ({len(written)} written, "
               f"{len(files) - len(written)} unchanged)", err=True)
    click.echo(f"MEDRAG_SOURCE={shlex.quote(f'mirror:{dest}')}")


COMMANDS = [mirror_group]

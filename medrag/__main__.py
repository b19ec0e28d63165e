"""`python -m medrag` runs the CLI."""

from medrag.cli import main

main()

"""`python -m medrag` runs the CLI."""

from medrag.cli import main

if __name__ == "__main__":  # a spawned process (the embedding stage's readers) imports this module again
    main()

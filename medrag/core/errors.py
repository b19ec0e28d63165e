"""Errors medrag raises on purpose: the CLI turns these into one-line messages and exit code 2."""


class MedragError(Exception):
    """A problem the user can act on (bad input, unreachable server, corrupt file); never a bug."""

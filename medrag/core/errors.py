"""Errors medrag raises on purpose: the CLI turns these into one-line messages and exit code 2."""


class MedragError(Exception):
    """A problem the user can act on (bad input, unreachable server, corrupt file); never a bug."""


def unreachable_message(error: Exception) -> str:
    """The one line for a database that cannot be reached: "database unreachable: <the driver's first line>"."""
    original = getattr(error, "orig", None)
    reason = (str(original) if original else str(error)).strip().splitlines()
    return f"database unreachable: {reason[0] if reason else type(error).__name__}"

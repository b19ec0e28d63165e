"""Errors medrag raises on purpose: the CLI turns these into one-line messages and exit code 2."""


class MedragError(Exception):
    """A problem the user can act on (bad input, unreachable server, corrupt file); never a bug."""


def unreachable_message(error: Exception) -> str:
    """The one line for a database that cannot be reached: "database unreachable: <the driver's first line>"."""
    original = getattr(error, "orig", None)
    reason = (str(original) if original else str(error)).strip().splitlines()
    return f"database unreachable: {reason[0] if reason else type(error).__name__}"


# SQLSTATEs of a statement that names a table or function the schema does not have yet.
_SCHEMA_MISSING = frozenset({"42P01", "42883"})


def schema_missing_message(error: Exception) -> str | None:
    """The one line for a database without medrag's tables (never migrated, or older than this code); None for
    any other error."""
    original = getattr(error, "orig", None)
    if getattr(original, "sqlstate", None) not in _SCHEMA_MISSING:
        return None
    reason = str(original).strip().splitlines()
    return f"the database lacks medrag's schema ({reason[0]}): run `medrag db migrate`"

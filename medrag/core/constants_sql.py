"""SQL functions that hold a value computed once, when generated.sql runs: a constant the planner folds, where a
function reading the table would be computed again whenever a statement is planned."""

from __future__ import annotations


def constant_function(name: str, returns: str, query: str) -> str:
    """A statement for a DO block of generated.sql: CREATE `name`() RETURNS `returns` as the value `query` gives now.

    `query` is a scalar SQL expression (a sub-select in parentheses), inserted as written."""
    return f"""    EXECUTE format($function$
CREATE OR REPLACE FUNCTION {name}()
RETURNS {returns}
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $body$ SELECT %L::{returns} $body$
$function$, {query});"""

"""The claim-line check: is a line valid on its date of service, and which coverage rules apply to it.

The rules run in PostgreSQL (medrag_check_lines in sql/check.sql), one statement over all the lines of a batch; this
package reads claim lines from files, sends them in batches and reports the findings. docs/check.md describes the
rules.
"""

"""Grounded answers for `medrag ask`: checks -> retrieval -> context -> generation -> validation gates -> audit.

Modules, in the order a question goes through them: checks (input checks, query expansion / rewrite), evidence
(threshold on retrieved chunks), context (numbered sources and the prompt), llm (OpenAI-compatible client) or
extractive (the embedded backend), structured (the answer schema and its parsing), validate (the gates), audit
(query_log), pipeline (the whole flow), evaluation (`medrag eval answers`).
"""

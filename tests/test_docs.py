"""The documentation stays true to the code: CLI reference, README shape, links, generated results page.

No database: the eval commands run on tiny inputs with their search / finder / answer pipeline replaced, so the
JSON the results generator reads is the JSON those commands really print.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import click
import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine

from medrag.cli import main

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
README = REPO / "README.md"
CLI_MD = DOCS / "cli.md"
GENERATOR = DOCS / "generate_results.py"
README_MAX_LINES = 150

# A heading that names a command, e.g. "### `medrag eval retrieval`"; its section runs to the next such heading.
COMMAND_HEADING = re.compile(r"^#{1,6}[ \t]+`(medrag(?: [a-z][a-z0-9-]*)*)`[ \t]*$", re.MULTILINE)
FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]\n]*\]\(([^)\s]+)(?:[ \t]+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)


# ------------------------------------------------------------------------------------------------ CLI reference


def live_commands(command: click.Command = main, path: tuple[str, ...] = ("medrag",)) -> Iterator[tuple[str, Any]]:
    """(command path, command) for medrag and every command and subcommand below it, as the CLI has them now."""
    yield " ".join(path), command
    if isinstance(command, click.Group):
        context = click.Context(command)  # list_commands / get_command: the top group loads its commands lazily
        for name in sorted(command.list_commands(context)):
            sub = command.get_command(context, name)
            if not sub.hidden:
                yield from live_commands(sub, (*path, name))


def option_names(command: click.Command) -> list[str]:
    """Every option name of a command (--json, --as-of, -k ...), --help aside."""
    return [name for param in command.params if isinstance(param, click.Option) and not param.hidden
            for name in (*param.opts, *param.secondary_opts)]


def cli_sections() -> dict[str, str]:
    """docs/cli.md as {command path: its section's text}."""
    text = CLI_MD.read_text(encoding="utf-8")
    found = list(COMMAND_HEADING.finditer(text))
    return {match.group(1): text[match.end(): found[number + 1].start() if number + 1 < len(found) else len(text)]
            for number, match in enumerate(found)}


COMMANDS = dict(live_commands())


@pytest.mark.parametrize("path", sorted(COMMANDS))
def test_cli_reference_has_every_command_and_option(path: str) -> None:
    sections = cli_sections()
    assert path in sections, f"docs/cli.md has no heading `{path}` (a command the CLI has)"
    missing = [name for name in option_names(COMMANDS[path])
               if not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", sections[path])]
    assert not missing, f"docs/cli.md, section `{path}`, does not mention {', '.join(missing)}"


def test_cli_reference_names_only_real_commands() -> None:
    stale = sorted(set(cli_sections()) - set(COMMANDS))
    assert not stale, f"docs/cli.md documents commands the CLI does not have: {stale}"


# ------------------------------------------------------------------------------------------------ README


def test_readme_is_short_and_starts_with_the_two_commands() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) < README_MAX_LINES, f"README.md has {len(lines)} lines; keep it under {README_MAX_LINES}"
    body = [line for line in lines[1:6] if line.strip()]
    assert lines[0] == "# medrag"
    assert body[0] == "```bash"
    assert body[1].startswith("make run ") and body[2].startswith("make test ")
    assert body[3] == "```"


# ------------------------------------------------------------------------------------------------ links


def markdown_files() -> list[Path]:
    """README.md, eval/README.md and every page under docs/."""
    return [README, REPO / "eval" / "README.md", *sorted(DOCS.rglob("*.md"))]


def anchors(path: Path) -> set[str]:
    """The anchors GitHub makes for a page's headings (lower case, punctuation dropped, spaces to dashes)."""
    seen: dict[str, int] = {}
    out = set()
    for heading in HEADING.findall(FENCE.sub("", path.read_text(encoding="utf-8"))):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        out.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return out


def relative_links(path: Path) -> list[str]:
    """Link targets outside code that are not URLs."""
    text = INLINE_CODE.sub("", FENCE.sub("", path.read_text(encoding="utf-8")))
    return [target for target in LINK.findall(text) if not re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target)]


@pytest.mark.parametrize("page", markdown_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_point_at_files_that_exist(page: Path) -> None:
    broken = []
    for target in relative_links(page):
        file_part, _, anchor = target.partition("#")
        resolved = (page.parent / file_part).resolve() if file_part else page
        if not resolved.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target} (no heading #{anchor})")
    assert not broken, f"{page.relative_to(REPO)}: broken links: {broken}"


def test_docs_has_the_pages() -> None:
    for name in ("architecture", "sources", "search", "evaluation", "results", "cli", "sql", "configuration",
                 "deployment", "changes", "check", "coders", "operators"):
        assert (DOCS / f"{name}.md").is_file(), f"docs/{name}.md is missing"


# ------------------------------------------------------------------------------------------------ results page


def test_results_page_is_what_the_committed_json_gives() -> None:
    run = subprocess.run([sys.executable, str(GENERATOR), "--check"], cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_readme_types_no_figures() -> None:
    """Figures live in docs/results.md and the README's performance block, both generated from the JSON."""
    gen = generator()
    readme_text = README.read_text(encoding="utf-8")
    typed = readme_text[:readme_text.index(gen.README_START)] + readme_text[readme_text.index(gen.README_END):]
    text = INLINE_CODE.sub("", FENCE.sub("", typed))
    assert not re.search(r"\b0\.\d{2,}|\d+(?:\.\d+)? ?ms\b|\bhit@|\bMRR\b|\btop-1\b", text)
    assert "docs/results.md" in README.read_text(encoding="utf-8")


def generator() -> ModuleType:
    """docs/generate_results.py as a module (it is a script, not a package)."""
    spec = importlib.util.spec_from_file_location("generate_results", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def jsonl(path: Path, items: list[dict[str, Any]]) -> Path:
    """Write items one JSON object a line."""
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    return path


def eval_json(args: list[str]) -> dict[str, Any]:
    """The JSON an eval command prints (exit 1 only says a goal was missed)."""
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def retrieval_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """`medrag eval retrieval --json` on three questions, search answering from a fixed list."""
    import medrag.cli.evaluation as cli_evaluation

    ranked = {"home oxygen": [("ncd", "240.2"), ("lcd", "L33797")],
              "cpap device code": [("lcd", "L33718"), ("hcpcs", "E0601")],
              "weather tomorrow": [("ncd", "240.2")]}
    # an engine that never connects: the eval's session settings are set on it, and the fake search ignores it
    monkeypatch.setattr(cli_evaluation, "get_engine", lambda: create_engine("postgresql+psycopg://nowhere/none"))
    monkeypatch.setattr(cli_evaluation, "search", lambda _engine, query, **_kw: SimpleNamespace(
        hits=[SimpleNamespace(source=s, key=k) for s, k in ranked.get(query, [])]))
    questions = jsonl(tmp_path / "retrieval.jsonl", [
        {"id": "q1", "question": "home oxygen", "category": "ncd_topic",
         "expected": [{"source": "ncd", "key": "240.2", "grade": 3}], "filters": {}},
        {"id": "q2", "question": "cpap device code", "category": "hcpcs_plain",
         "expected": [{"source": "hcpcs", "key": "E0601", "grade": 3}], "filters": {}},
        {"id": "q3", "question": "weather tomorrow", "category": "unanswerable", "expected": [], "filters": {}},
    ])
    return eval_json(["eval", "retrieval", "--questions", str(questions), "-k", "1,5", "--json", "--text-only"])


def codes_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """`medrag eval codes --json` on two terms, the finder answering from a fixed list."""
    import medrag.cli.codes as cli_codes

    found = {"sugar diabetes": ["E11.9"], "cpap machine": ["E0562", "E0601"]}

    class Finder:
        def __init__(self, *_args: Any, **_kwargs: Any) -> None: ...
        def __enter__(self) -> Finder: return self
        def __exit__(self, *_exc: object) -> None: ...
        def find(self, term: str, **_kwargs: Any) -> SimpleNamespace:
            return SimpleNamespace(results=[SimpleNamespace(code=code, scored=code,
                                                            tier="high" if rank == 0 else "possible")
                                            for rank, code in enumerate(found[term])])

    monkeypatch.setattr(cli_codes, "get_engine", lambda: None)
    monkeypatch.setattr(cli_codes, "CodeFinder", Finder)
    terms = jsonl(tmp_path / "codes.jsonl", [{"term": "sugar diabetes", "system": "ICD-10-CM", "expected": ["E11.9"]},
                                             {"term": "cpap machine", "system": "HCPCS", "expected": ["E0601"]}])
    return eval_json(["eval", "codes", "--terms", str(terms), "--json"])


def answers_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """`medrag eval answers --json` on one answerable and one unanswerable question, the pipeline replaced."""
    import medrag.answer.evaluation as answer_evaluation
    import medrag.cli.ask as cli_ask

    timings = {"checks": 1.0, "retrieval": 10.0, "generation": 5.0, "validation": 1.0, "audit": 2.0,
               "overhead": 14.0, "total": 19.0}

    def ask(_engine: Any, question: str, **_kwargs: Any) -> SimpleNamespace:
        answered = question.startswith("When")
        sentence = SimpleNamespace(invented_codes=[])
        return SimpleNamespace(
            refused=not answered, refusal_reason=None if answered else "insufficient_evidence", degraded=False,
            checks=[sentence] if answered else [], sentences=[sentence] if answered else [],
            cited_sources=[SimpleNamespace(source="ncd", key="240.2")] if answered else [], timings_ms=timings,
            answer="Home oxygen is covered when ... [1]" if answered else "", model=None, backend="extractive",
            gate_probability=0.6 if answered else None)

    monkeypatch.setattr(cli_ask, "get_engine", lambda *_args: None)
    monkeypatch.setattr(cli_ask, "query_embedder", lambda: None)
    monkeypatch.setattr(answer_evaluation, "ask", ask)
    questions = jsonl(tmp_path / "answers.jsonl", [
        {"id": "a1", "question": "When does Medicare pay for home oxygen?", "answerable": True,
         "expected_keys": ["ncd:240.2"]},
        {"id": "a2", "question": "What is the capital of France?", "answerable": False},
    ])
    return eval_json(["eval", "answers", "--questions", str(questions), "--json", "--llm", "extractive"])


# Shaped as benchmarks/search.py and benchmarks/codes.py write them (they need a loaded database); test-only values.
BENCH_SEARCH = {
    "benchmark": "search", "machine": "x86_64", "cpus": 2,
    "real_corpus": {"chunks_embedded": 1000, "embed": {"p50_ms": 1.5, "p95_ms": 2.5, "mean_ms": 1.7, "n": 9},
                    "sql": {"p50_ms": 11.5, "p95_ms": 12.5, "mean_ms": 11.7, "n": 9},
                    "documents_sql": {"p50_ms": 4.5, "p95_ms": 5.5, "mean_ms": 4.7, "n": 9},
                    "vector_recall_at_10": 0.5},
    "scale": {"chunks": 2000, "queries": 3, "results": [
        {"filter": "none", "recall_at_10": 0.25, "search": {"p50_ms": 21.5, "p95_ms": 22.5, "mean_ms": 21.7, "n": 3}},
    ]},
}
BENCH_CODES = {
    "terms": 2, "repeat": 1, "database": {"releases": {"hcpcs": "2019"}, "code_chunks_embedded": {"hcpcs": "0/10"}},
    "modes": {"lexical": {"calls": 2, "latency_ms": {"p50": 31.5, "p95": 32.5, "max": 33.5},
                          "cpu_ms_per_call": {"server": 28.5, "client": 1.25},
                          "stages_ms": {}, "mean_rounds": 1.5, "top1": 0.5, "top5": 1.0},
              # a remote server's CPU cannot be read, and the cold mode has none
              "vector": {"calls": 2, "latency_ms": {"p50": 41.5, "p95": 42.5, "max": 43.5},
                         "cpu_ms_per_call": {"server": None, "client": 2.5},
                         "stages_ms": {}, "mean_rounds": 1.0, "top1": 1.0, "top5": 1.0},
              "cold": {"calls": 1, "latency_ms": {"p50": 800.5, "p95": 800.5, "max": 800.5},
                       "mean_rounds": None, "top1": 1.0, "top5": 1.0}},
    "machine": {"python": "3.11.0", "cpus": 2, "load_average_1m": 0.5},
}


def readme(folder: Path) -> Path:
    """A README with an empty performance block (made once per test folder), for the generator to fill."""
    path = folder / "README.md"
    if not path.exists():
        gen = generator()
        path.write_text(f"# medrag\n\n{gen.README_START}\n{gen.README_END}\n\nmore\n", encoding="utf-8")
    return path


def paths(folder: Path, results: Path, page: Path) -> list[str]:
    """The generator's arguments for a results folder, a page and a README, all inside a test's folder."""
    return ["--results", str(results), "--output", str(page), "--readme", str(readme(folder))]


def test_generator_renders_what_the_eval_commands_print(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = tmp_path / "results"
    results.mkdir()
    write = {
        "retrieval_dev.json": retrieval_report(tmp_path, monkeypatch),
        "codes_dev.json": codes_report(tmp_path, monkeypatch),
        "answers_dev.json": answers_report(tmp_path, monkeypatch),
        "bench_search.json": BENCH_SEARCH,
        "bench_codes.json": BENCH_CODES,
        "meta.json": {"database": "test corpus", "machine": "test machine", "date": "2000-01-01"},
        "extra.json": {"something": {"else": 7}, "rows": [1, 2]},
    }
    for name, report in write.items():
        (results / name).write_text(json.dumps(report), encoding="utf-8")
    page = tmp_path / "results.md"
    gen = generator()
    assert gen.main(paths(tmp_path, results, page)) == 0
    text = page.read_text(encoding="utf-8")

    for name in ("retrieval_dev.json", "codes_dev.json", "answers_dev.json", "bench_search.json",
                 "bench_codes.json", "meta.json", "extra.json"):
        assert f"[`results/{name}`](results/{name})" in text, f"no table says it came from {name}"
    for name in ("retrieval_holdout.json", "codes_holdout.json"):
        assert f"`{name}` is not in results/: skipped" in text
    # q1 first at rank 1, q2 at rank 2: hit@1 0.5, hit@5 1.0, MRR 0.75; q3 (unanswerable) not scored
    assert "| overall | 0.5 | 1.0 | 0.75 |" in text
    assert "| category hcpcs_plain | 0.0 | 1.0 | 0.5 |" in text
    assert "unanswerable, not scored here: 1" in text
    assert "| all | 2 | 0.5 | 1.0 |" in text and "| HCPCS | 1 | 0.0 | 1.0 |" in text
    assert "| refusal_accuracy | 1.0 |" in text and "| citation_precision | 1.0 |" in text
    assert "| medrag_search, the code finder run each time for its code slots | 11.5 | 12.5 | 11.7 | 9 |" in text
    assert "| medrag_search_documents (the search statement alone) | 4.5 | 5.5 | 4.7 | 9 |" in text
    assert "| none | 0.25 | 21.5 | 22.5 | 21.7 |" in text
    assert "| lexical | 2 | 31.5 | 32.5 | 33.5 | 28.5 | 1.25 | 1.5 | 0.5 | 1.0 |" in text
    assert "| vector | 2 | 41.5 | 42.5 | 43.5 | - | 2.5 | 1.0 | 1.0 | 1.0 |" in text
    assert "| cold | 1 | 800.5 | 800.5 | 800.5 | - | - | - | 1.0 | 1.0 |" in text
    assert "| machine | test machine |" in text and "| something.else | 7 |" in text
    block = readme(tmp_path).read_text(encoding="utf-8")
    assert "| retrieval dev: hit@5 / MRR | - | 1.0 / 0.75 |" in block and block.endswith("more\n")
    assert "| answers dev: fact recall; refusal accuracy | - | 1.0; 1.0 |" in block

    assert gen.main(["--check", *paths(tmp_path, results, page)]) == 0
    (results / "bench_codes.json").write_text(json.dumps({**BENCH_CODES, "terms": 3}), encoding="utf-8")
    assert gen.main(["--check", *paths(tmp_path, results, page)]) == 1
    assert gen.main(paths(tmp_path, results, page)) == 0
    assert gen.main(["--check", *paths(tmp_path, results, page)]) == 0


def test_generator_refuses_unreadable_or_misshapen_results(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "results"
    results.mkdir()
    page = tmp_path / "results.md"
    gen = generator()
    (results / "codes_dev.json").write_text("{not json", encoding="utf-8")
    assert gen.main(paths(tmp_path, results, page)) == 2
    assert "codes_dev.json" in capsys.readouterr().err
    (results / "codes_dev.json").write_text(json.dumps({"terms": 1}), encoding="utf-8")
    assert gen.main(paths(tmp_path, results, page)) == 2
    assert "codes_dev.json: not the report of `medrag eval codes" in capsys.readouterr().err
    assert not page.exists()


def test_generator_with_no_results_says_each_file_is_skipped(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    page = tmp_path / "results.md"
    gen = generator()
    assert gen.main(["--check", *paths(tmp_path, results, page)]) == 1  # no page yet
    assert gen.main(paths(tmp_path, results, page)) == 0
    text = page.read_text(encoding="utf-8")
    assert text.count(": skipped") == len(gen.KINDS)
    assert "`meta.json` is not in results/" in text

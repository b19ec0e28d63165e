"""Measure the search's fusion weights, hand-set against fitted, on every retrieval and answer set.

Run against the indexed database of `make run`, after `medrag eval fit-fusion --out docs/results/fusion_fit.json`:
  .venv/bin/python benchmarks/fusion_eval.py [--model docs/results/fusion_fit.json]
Each set is measured twice in one run, through `medrag eval retrieval` / `medrag eval answers --llm extractive`,
with the four weights set explicitly (the hand-set ones, then the model's), and the figures are written into the
model file as its "evaluation". The dev sets choose which weights medrag keeps; the holdouts are only measured.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from medrag.core.tuning import HAND_SET_FUSION

REPO = Path(__file__).resolve().parents[1]
RETRIEVAL = ("hit@1", "hit@3", "hit@5", "hit@10", "mrr")
ANSWERS = ("fact_recall", "refusal_accuracy", "expected_source_cited", "cited_sources_expected",
           "citation_precision", "invented_codes_shown")


def measured(command: list[str], weights: dict[str, float]) -> dict:
    """One eval command's JSON report, run with these weights."""
    overrides = [part for name, value in weights.items() for part in ("--set", f"{name}={value}")]
    # an eval whose goals are not met exits 1 after printing its report: the report is what is measured here
    done = subprocess.run([sys.executable, "-m", "medrag", "eval", *command, "--json", *overrides],
                          capture_output=True, text=True, check=False, cwd=REPO)
    if not done.stdout.strip():
        raise SystemExit(f"medrag eval {command[0]} failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout)


def figures(weights: dict[str, float]) -> dict[str, dict[str, float]]:
    """Every retrieval and answer set under one weighting."""
    result = {}
    for name in ("retrieval_dev", "retrieval_holdout"):
        overall = measured(["retrieval", "--questions", f"eval/{name}.jsonl"], weights)["overall"]
        result[name] = {key: overall[key] for key in RETRIEVAL}
    for name in ("answers_dev", "answers_holdout"):
        report = measured(["answers", "--questions", f"eval/{name}.jsonl", "--llm", "extractive"], weights)
        result[name] = {key: report["figures"][key] for key in ANSWERS}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, default=REPO / "docs" / "results" / "fusion_fit.json")
    args = parser.parse_args()
    model = json.loads(args.model.read_text())
    evaluation = {"hand_set_weights": HAND_SET_FUSION, "hand_set": figures(HAND_SET_FUSION),
                  "fitted": figures(model["weights"])}
    for name in evaluation["hand_set"]:
        print(name)
        for key, before in evaluation["hand_set"][name].items():
            print(f"  {key:24} hand-set {before:>8}  fitted {evaluation['fitted'][name][key]:>8}")
    args.model.write_text(json.dumps({**model, "evaluation": evaluation}, indent=2) + "\n")
    print(f"-> {args.model}")


if __name__ == "__main__":
    main()

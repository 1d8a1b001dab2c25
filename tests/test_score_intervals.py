"""``score``: intervals on every figure (``--format json`` key ``intervals``, the
table), ``--confidence``, the paired differences of ``--baseline`` and the gate that
knows noise (SPEC §4.5). Worked by hand on small runs."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from statsmodels.stats.proportion import proportion_confint

from labeling.importers.load import run_import
from scoring.intervals import Z_95
from tests.conftest import FIXTURES_DIR
from tests.factories import ProjectFactory


def score_json(*args: str, capsys) -> dict:
    call_command("score", *args, "--format", "json")
    return json.loads(capsys.readouterr().out)


def answers_file(run: str, answers: dict[str, list[str]]) -> io.BytesIO:
    """An answers file: one answer per question, one cited claim per label."""
    lines = []
    for question, labels in answers.items():
        lines.append({
            "question_id": question, "question": f"Question {question}?", "run": run, "answer": "An answer.",
            "passages": [{"id": "P1", "source": "doc.md", "text": "A passage."}],
            "claims": [{"text": f"Claim {i} of {question}.", "citations": [{"passage_id": "P1"}], "label": label,
                        "justification": "" if label == "SUPPORTED" else "not in P1", "reviewer": "expert"}
                       for i, label in enumerate(labels)],
        })
    return io.BytesIO("".join(json.dumps(line) + "\n" for line in lines).encode())


@pytest.fixture
def seed(db):
    project = ProjectFactory(slug="demo")
    run_import(project=project, source=FIXTURES_DIR / "seed_coverage_support.jsonl")
    return project


@pytest.fixture
def pair(db):
    """Run A: q1 2 of 2 SUPPORTED, q2 1 of 2 → support 3/4. Run B: q1 and q2 1 of 2 → 2/4.
    Paired by question (SPEC §4.5): Δ = −0.25; d₁ = (1 − 0.5·2)/4 − (2 − 0.75·2)/4 = −0.125,
    d₂ = 0 − (1 − 1.5)/4 = 0.125; Var = 2/1 · 2 · 0.125² = 0.0625, sd 0.25 →
    −0.25 ± 1.96·0.25 = (−0.74, 0.24)."""
    project = ProjectFactory(slug="pair")
    run_import(project=project, source=answers_file("A", {"q1": ["SUPPORTED"] * 2,
                                                          "q2": ["SUPPORTED", "UNSUPPORTED"]}))
    run_import(project=project, source=answers_file("B", {"q1": ["SUPPORTED", "UNSUPPORTED"],
                                                          "q2": ["UNSUPPORTED", "SUPPORTED"]}))
    return project


def test_json_gives_an_interval_for_every_figure(seed, capsys):
    """Seed run: one answer, 5 claims all cited, 3 SUPPORTED. One answer (n < 2): n_eff = X = 5
    and the interval is Wilson's at 5: support (0.2307, 0.8824); coverage 5/5 → [5/(5+z²), 1] =
    [0.5655, 1], never [1, 1]. The run holds one answer: no narrower half-width is reachable.
    Per-answer means rest on one answer: no interval."""
    intervals = score_json("--run", "seed-coverage-support", capsys=capsys)["intervals"]
    support = intervals["support"]
    assert support["estimate"] == 0.6
    assert support["ci95"] == pytest.approx(list(proportion_confint(3, 5, alpha=0.05, method="wilson")))
    assert support["ci95"] == pytest.approx([0.2307, 0.8824], abs=1e-4)
    assert (support["n_answers"], support["n_units"], support["n_eff"], support["method"]) == (
        1, 5, 5.0, "wilson-clustered")
    assert support["more_answers_for"] == dict.fromkeys(("0.05", "0.03", "0.02"), "more than the run holds")
    w = (support["ci95"][1] - support["ci95"][0]) / 2
    assert support["answers_needed"]["0.05"] == int(-(-(w / 0.05) ** 2 // 1))
    assert intervals["coverage"]["ci95"] == pytest.approx([5 / (5 + Z_95**2), 1.0])
    assert intervals["mean_support"] == {"estimate": 0.6, "ci95": None, "n_answers": 1, "n_units": 1, "n_eff": None,
                                         "method": "student-t", "more_answers_for": None, "answers_needed": None}
    assert intervals["gap"]["estimate"] == pytest.approx(0.4) and intervals["gap"]["ci95"] is None
    assert list(intervals)[:4] == ["coverage", "support", "gap", "supported_rate"]


def test_other_levels_use_the_key_ci_with_the_level(seed, capsys):
    support = score_json("--run", "seed-coverage-support", "--confidence", "0.9", capsys=capsys)["intervals"]["support"]
    assert "ci95" not in support and support["level"] == 0.9
    assert support["ci"] == pytest.approx(list(proportion_confint(3, 5, alpha=0.1, method="wilson")))


@pytest.mark.parametrize("level", ["1.5", "0", "nan"])
def test_a_level_outside_zero_and_one_is_refused(seed, level):
    with pytest.raises(CommandError, match=r"--confidence \S+: confidence must be a level between 0 and 1"):
        call_command("score", "--run", "seed-coverage-support", "--confidence", level)


def test_table_prints_the_interval_beside_the_fraction(seed, capsys):
    call_command("score", "--run", "seed-coverage-support")
    out = capsys.readouterr().out
    assert "3/5 = 0.60 (0.23–0.88)" in out and "5/5 = 1.00 (0.57–1.00)" in out
    assert "support: ±0.05: about 43 answers · ±0.03: about 118 · ±0.02: about 266 (more than the run holds: 1)" in out


def test_seed_gold_context_precision_gets_its_interval(db, capsys):
    """Seed gold cases: context precision per answer 1/1, 0/1, 1/3 → R = 2/5; residuals
    0.6, −0.4, −0.2; v = 3/2 · 0.56/25 = 0.0336; R(1−R)/v = 0.24/0.0336 = 7.14 → n_eff = 5."""
    run_import(project=ProjectFactory(slug="gold"), source=FIXTURES_DIR / "seed_gold_references.jsonl")
    entry = score_json("--run", "seed-gold-references", "--match-method", "substring",
                       capsys=capsys)["intervals"]["context_precision"]
    assert (entry["estimate"], entry["n_answers"], entry["n_units"], entry["n_eff"]) == (0.4, 3, 5, 5.0)
    assert entry["ci95"] == pytest.approx(list(proportion_confint(2, 5, alpha=0.05, method="wilson")))


def test_baseline_reports_paired_differences(pair, capsys):
    result = score_json("--run", "B", "--baseline", "A", "--max-drop", "support=0.8", capsys=capsys)
    support = result["differences"]["support"]
    assert result["baseline"] == "A"
    assert (support["a"], support["b"], support["delta"], support["n_questions"]) == (0.75, 0.5, -0.25, 2)
    assert support["ci95"] == pytest.approx([-0.25 - Z_95 * 0.25, -0.25 + Z_95 * 0.25])
    assert support["method"] == "paired-clustered"


def test_interval_gate_passes_when_the_lower_bound_clears_the_allowed_drop(pair, capsys):
    """Lower bound −0.74 ≥ −0.8: non-inferior."""
    call_command("score", "--run", "B", "--baseline", "A", "--max-drop", "support=0.8", "--confidence", "0.95")
    assert "CI gate passed: B vs baseline A on the 2 question(s) both runs answered" in capsys.readouterr().err


def test_interval_gate_fails_naming_delta_interval_and_the_answers_that_would_settle_it(pair):
    """Lower bound −0.74 < −0.05: fails. To settle it the interval must shrink to the distance
    |−0.25 + 0.05| = 0.2 from the delta: ⌈2·(0.49/0.2)²⌉ = 13 questions, more than the 2 shared."""
    with pytest.raises(CommandError) as failure:
        call_command("score", "--run", "B", "--baseline", "A", "--max-drop", "support=0.05", "--confidence", "0.95")
    assert failure.value.returncode == 1
    assert str(failure.value).endswith(
        "support: B vs baseline A: B − A −0.2500 (95% interval −0.7400 to +0.2400, 2 questions): the interval "
        "reaches below −0.05; settling it takes about 13 questions labeled in both runs at the current variance, "
        "more than the runs share (2)")


def test_interval_gate_passes_where_the_point_rule_would_fail(pair, capsys):
    """The point rule fails a 0.25 drop against a 0.2 bound; at 50% the interval is
    −0.25 ± 0.6745·0.25 = (−0.4186, −0.0814), whose lower bound passes −0.45 but not −0.2."""
    with pytest.raises(CommandError, match="dropped 0.2500 > allowed 0.2000"):
        call_command("score", "--run", "B", "--baseline", "A", "--max-drop", "support=0.2")
    capsys.readouterr()
    call_command("score", "--run", "B", "--baseline", "A", "--max-drop", "support=0.45", "--confidence", "0.5")
    assert "CI gate passed" in capsys.readouterr().err
    with pytest.raises(CommandError, match=r"−0\.4186 to −0\.0814.*reaches below −0\.2"):
        call_command("score", "--run", "B", "--baseline", "A", "--max-drop", "support=0.2", "--confidence", "0.5")


def test_point_gate_prints_the_interval_and_warns_within_noise(pair, capsys):
    """Point rule, bound 0.3: a drop of 0.25 passes as before; the interval (−0.74, 0.24)
    straddles −0.3, so the verdict warns that the change is within noise."""
    call_command("score", "--run", "B", "--baseline", "A", "--max-drop", "support=0.3")
    err = capsys.readouterr().err
    assert "CI gate passed: B vs baseline A on the 2 question(s) both runs answered (support may drop ≤ 0.3)" in err
    assert ("support: B − A −0.2500 (95% interval −0.7400 to +0.2400, 2 questions); within noise: the interval "
            "straddles the bound −0.3") in err


def test_point_gate_failure_keeps_its_message_and_prints_the_interval(pair, capsys):
    with pytest.raises(CommandError) as failure:
        call_command("score", "--run", "B", "--baseline", "A", "--max-drop", "support=0.05")
    assert str(failure.value).endswith("support: B 0.5000 vs baseline A 0.7500: dropped 0.2500 > allowed 0.0500")
    assert "within noise: the interval straddles the bound −0.05" in capsys.readouterr().err


def test_f1_cannot_be_gated_on_an_interval(pair):
    with pytest.raises(CommandError, match="context_f1 with --confidence: F1 of pooled figures has no interval"):
        call_command("score", "--run", "B", "--baseline", "A", "--max-drop", "context_f1=0.1", "--confidence", "0.95")


def test_table_with_baseline_lists_the_differences(pair, capsys):
    call_command("score", "--run", "B", "--baseline", "A", "--max-drop", "support=0.8")
    out = capsys.readouterr().out
    assert "B B − A A, paired by question on the 2 question(s) both answered" in out
    support = [line for line in out.splitlines() if line.strip().startswith("support ")][-1]
    assert support.split() == ["support", "0.75", "0.50", "−0.25", "(−0.74", "to", "+0.24)", "2"]

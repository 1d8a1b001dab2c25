"""``manage.py agreement``: grading a reviewer (or an automated labeler) against another (SPEC §4.4)."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from labeling.importers.load import run_import
from labeling.models import Claim, ReviewerKind, Run
from tests.agreement_data import EXPERT, FLIP_RUN, copy_with_flips
from tests.conftest import FIXTURES_DIR
from tests.factories import LabelFactory, ProjectFactory, ReviewerFactory


@pytest.fixture
def seed_run(db):
    project = ProjectFactory(slug="demo")
    run_import(project=project, source=FIXTURES_DIR / "seed_coverage_support.jsonl")
    return project


def test_model_labeler_graded_against_the_seed_reviewer(seed_run, capsys):
    """seed-reviewer: S S U S U. judge (kind model): S S S S U on the same 5 claims.
    Agreement 4/5. Cohen's kappa: p_o = 0.8; A has 3 S / 2 U, B has 4 S / 1 U →
    p_e = (3·4 + 2·1)/25 = 0.56 → kappa = (0.8 − 0.56)/(1 − 0.56) = 0.24/0.44 = 6/11."""
    judge = ReviewerFactory(username="judge", kind=ReviewerKind.MODEL)
    for claim in Claim.objects.order_by("index"):
        LabelFactory(claim=claim, reviewer=judge, value="UNSUPPORTED" if claim.index == 5 else "SUPPORTED")
    call_command("agreement", "--run", "seed-coverage-support", "--reviewer", "seed-reviewer",
                 "--reviewer", "judge", "--format", "json")
    result = json.loads(capsys.readouterr().out)
    assert result["n"] == 5 and result["agreement"] == 0.8
    assert result["kappa"] == pytest.approx(6 / 11)
    assert result["confusion"]["UNSUPPORTED"]["SUPPORTED"] == 1
    claim3 = Claim.objects.get(index=3).pk
    assert result["disagreements"] == [{"claim_id": claim3, "a": "UNSUPPORTED", "b": "SUPPORTED"}]
    call_command("agreement", "--run", "seed-coverage-support", "--reviewer", "seed-reviewer", "--reviewer", "judge")
    table = capsys.readouterr().out
    assert "raw agreement  4/5 = 0.80" in table and "Token errors are never repeated" in table


def test_agreement_needs_two_reviewers_with_labels(seed_run):
    with pytest.raises(CommandError, match="exactly twice"):
        call_command("agreement", "--run", "seed-coverage-support", "--reviewer", "seed-reviewer")
    with pytest.raises(CommandError, match="given twice"):
        call_command("agreement", "--run", "seed-coverage-support", "--reviewer", "seed-reviewer",
                     "--reviewer", "seed-reviewer")
    with pytest.raises(CommandError, match="'nobody' has no current label"):
        call_command("agreement", "--run", "seed-coverage-support", "--reviewer", "seed-reviewer",
                     "--reviewer", "nobody")


# -- every reviewer, intervals, the real ExpertQA labels, the CI gate ------------------------------

@pytest.fixture
def flipped(expertqa_project):
    """The experts' labels on post_hoc_gs_gpt4 and a copy with 10 SUPPORTED → UNSUPPORTED
    and 5 UNSUPPORTED → SUPPORTED flips (tests/agreement_data.py)."""
    copy_with_flips(Run.objects.get(project=expertqa_project, name=FLIP_RUN))
    return expertqa_project


def agreement_json(capsys, *args) -> dict:
    call_command("agreement", "--project", "expertqa", "--run", FLIP_RUN, "--format", "json", *args)
    return json.loads(capsys.readouterr().out)


# Hand computation for `flipped`, on the 175 labeled cited claims (the 4 UNCITED claims
# both gave are left out: UNCITED is given by rule, not judged):
#   expert S 133, U 42; flipper S 133 − 10 + 5 = 128, U 42 + 10 − 5 = 47.
#   Confusion (rows expert, columns flipper): S→S 123, S→U 10, U→S 5, U→U 37. Agreement 160/175.
#   Kappa: chance = 133·128 + 42·47 = 17024 + 1974 = 18998;
#          (175·160 − 18998)/(175² − 18998) = 9002/11627 ≈ 0.7742
#          (scikit-learn cohen_kappa_score and statsmodels cohens_kappa print 0.77423 too).
#   Alpha: n_S = 133 + 128 = 261, n_U = 89, N = 350, o_SU + o_US = 2·15 = 30:
#          1 − 349·30/(2·261·89) = 1 − 10470/46458 = 35988/46458 ≈ 0.7746.
#   AC1:  p_a = 160/175 = 112000/122500; π_S = 261/350, π_U = 89/350, q = 2:
#          p_e = 2·261·89/350² = 46458/122500; AC1 = (112000 − 46458)/(122500 − 46458) = 65542/76042 ≈ 0.8619.
#   Per label: SUPPORTED 2·123/(133 + 128) = 246/261, UNSUPPORTED 2·37/(42 + 47) = 74/89.
KAPPA, ALPHA, AC1 = 9002 / 11627, 35988 / 46458, 65542 / 76042


def test_real_labels_with_known_flips_give_the_hand_computed_figures(flipped, capsys):
    result = agreement_json(capsys, "--reviewer", EXPERT, "--reviewer", "flipper")

    assert list(result)[:9] == ["reviewer_a", "reviewer_b", "n", "agreement", "kappa", "kappa_ci95", "per_label",
                                "confusion", "disagreements"]
    assert {"krippendorff_alpha", "reviewers", "gwet_ac1", "alpha_ci95", "ac1_ci95"} <= set(result)
    assert result["n"] == 175
    assert result["agreement"] == 160 / 175
    assert result["kappa"] == pytest.approx(KAPPA, abs=1e-12)
    assert result["krippendorff_alpha"] == pytest.approx(ALPHA, abs=1e-12)
    assert result["gwet_ac1"] == pytest.approx(AC1, abs=1e-12)
    assert result["alpha_n"] == result["ac1_n"] == 175
    assert result["per_label"] == {"SUPPORTED": 246 / 261, "UNSUPPORTED": 74 / 89}
    assert result["confusion"] == {
        "SUPPORTED": {"SUPPORTED": 123, "UNSUPPORTED": 10, "UNCITED": 0},
        "UNSUPPORTED": {"SUPPORTED": 5, "UNSUPPORTED": 37, "UNCITED": 0},
        "UNCITED": {"SUPPORTED": 0, "UNSUPPORTED": 0, "UNCITED": 0},
    }
    assert len(result["disagreements"]) == 15
    assert {d["b"] for d in result["disagreements"][:1]} <= {"SUPPORTED", "UNSUPPORTED"}
    assert result["reviewers"] == [EXPERT, "flipper"]
    for figure, interval in ((KAPPA, "kappa_ci95"), (ALPHA, "alpha_ci95"), (AC1, "ac1_ci95")):
        low, high = result[interval]
        assert low < figure < high and high - low < 0.35


def test_without_reviewers_every_pair_and_the_overall_figures_are_reported(flipped, capsys):
    """A third reviewer, a copy with 20 SUPPORTED → UNSUPPORTED flips, adds two pairs.
    expert vs cleo: S→S 113, S→U 20, U→U 42, n 175: agreement 155/175;
    chance = 133·113 + 42·62 = 15029 + 2604 = 17633; kappa = (175·155 − 17633)/(30625 − 17633)
    = 9492/12992."""
    copy_with_flips(Run.objects.get(name=FLIP_RUN), name="cleo", to_unsupported=20, to_supported=0)

    result = agreement_json(capsys)

    assert result["reviewers"] == ["cleo", EXPERT, "flipper"]
    assert [(p["reviewer_a"], p["reviewer_b"]) for p in result["pairs"]] == [
        ("cleo", EXPERT), ("cleo", "flipper"), (EXPERT, "flipper")]
    by_pair = {(p["reviewer_a"], p["reviewer_b"]): p for p in result["pairs"]}
    assert by_pair[("cleo", EXPERT)]["kappa"] == pytest.approx(9492 / 12992, abs=1e-12)
    assert by_pair[("cleo", EXPERT)]["agreement"] == 155 / 175
    assert by_pair[(EXPERT, "flipper")]["kappa"] == pytest.approx(KAPPA, abs=1e-12)
    assert result["alpha_n"] == result["ac1_n"] == 175
    assert 0 < result["krippendorff_alpha"] < 1 and 0 < result["gwet_ac1"] < 1
    assert result["alpha_ci95"][0] < result["krippendorff_alpha"] < result["alpha_ci95"][1]
    # the same numbers on every run: the bootstrap has a fixed seed
    assert agreement_json(capsys) == result


def test_undefined_figures_are_null_never_nan(seed_run, capsys):
    """seed-reviewer alone: no pair, alpha and AC1 rest on no claim."""
    call_command("agreement", "--run", "seed-coverage-support", "--format", "json")
    output = capsys.readouterr().out
    result = json.loads(output)

    assert "NaN" not in output
    assert result["pairs"] == []
    assert (result["krippendorff_alpha"], result["alpha_ci95"], result["alpha_n"]) == (None, None, 0)
    assert (result["gwet_ac1"], result["ac1_ci95"], result["ac1_n"]) == (None, None, 0)


def test_gate_passes_above_the_minimum(flipped, capsys):
    call_command("agreement", "--project", "expertqa", "--run", FLIP_RUN, "--min-alpha", "0.67",
                 "--min-kappa", "0.7")

    assert "agreement gate passed" in capsys.readouterr().err


def test_gate_fails_naming_the_figure_and_its_interval(flipped, capsys):
    with pytest.raises(CommandError) as failed:
        call_command("agreement", "--project", "expertqa", "--run", FLIP_RUN, "--min-alpha", "0.8")

    assert failed.value.returncode == 1
    message = str(failed.value)
    assert f"Krippendorff's alpha {ALPHA:.2f} (95% CI " in message and "n = 175) is below --min-alpha 0.8" in message


def test_kappa_gate_checks_the_named_pair_or_every_pair(flipped, capsys):
    """expert vs flipper kappa 0.77; cleo (the first 20 SUPPORTED flipped) vs expert
    9492/12992 = 0.73; cleo vs flipper 0.80 (their first 10 flips are the same claims)."""
    copy_with_flips(Run.objects.get(name=FLIP_RUN), name="cleo", to_unsupported=20, to_supported=0)

    call_command("agreement", "--project", "expertqa", "--run", FLIP_RUN, "--reviewer", EXPERT,
                 "--reviewer", "flipper", "--min-kappa", "0.75")
    with pytest.raises(CommandError) as failed:
        call_command("agreement", "--project", "expertqa", "--run", FLIP_RUN, "--min-kappa", "0.75")

    message = str(failed.value)
    assert "Cohen's kappa of cleo vs expertqa-annotator 0.73 (95% CI" in message
    assert "cleo vs flipper" not in message and "expertqa-annotator vs flipper" not in message


def test_gate_fails_when_the_figure_is_undefined(seed_run):
    with pytest.raises(CommandError, match="alpha — \\(no interval, n = 0\\) is undefined"):
        call_command("agreement", "--run", "seed-coverage-support", "--min-alpha", "0.67")


def test_table_reports_intervals_and_method(flipped, capsys):
    call_command("agreement", "--project", "expertqa", "--run", FLIP_RUN)
    table = capsys.readouterr().out

    assert "percentile bootstrap over claims, 2000 resamples, fixed seed" in table
    assert f"Krippendorff alpha over 2 reviewers {ALPHA:.2f} (95% CI" in table
    assert "raw agreement  160/175 = 0.91" in table


def test_reviewer_typed_in_a_look_alike_spelling_is_found(flipped, capsys):
    """Fullwidth ｆｌｉｐｐｅｒ is flipper in the names' normal form (NFKC)."""
    result = agreement_json(capsys, "--reviewer", EXPERT, "--reviewer", "ｆｌｉｐｐｅｒ")

    assert result["reviewer_b"] == "flipper" and result["n"] == 175


@pytest.mark.parametrize("flag", ["--min-alpha", "--min-kappa"])
def test_gate_minimum_outside_minus_one_to_one_refused(seed_run, flag):
    with pytest.raises(CommandError, match=f"{flag} 67.0: must be between -1 and 1"):
        call_command("agreement", "--run", "seed-coverage-support", flag, "67")

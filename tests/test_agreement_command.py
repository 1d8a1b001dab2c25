"""``manage.py agreement``: grading a reviewer (or an automated labeler) against another (SPEC §4.4)."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from labeling.answers_import import run_import
from labeling.models import Claim, ReviewerKind
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

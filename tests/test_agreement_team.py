"""On a run with assigned reviewers the headline agreement and the disputed
claims are the assigned reviewers'; the same figures over every human
reviewer (an imported ``external`` one included) stay beside them, named as
such (SPEC §7, item 7)."""

from __future__ import annotations

import json
import re
from io import StringIO

import krippendorff
import numpy as np
import pytest
from django.core.management import call_command
from django.urls import reverse

from labeling.models import ReviewerKind
from labeling.team.agreement import (
    Verdict,
    agreement_labels,
    disagreement_rows,
    run_agreement,
    run_judgment_agreement,
    run_verdicts,
)
from labeling.team.memberships import run_assign, run_settings_set
from tests.counted_run import counted_run
from tests.factories import LabelFactory, ReviewerFactory
from tests.test_assignment import team  # noqa: F401 (the fixture)

pytestmark = pytest.mark.django_db

S, U = "SUPPORTED", "UNSUPPORTED"
ANN, BOB, EXT = (S, S, U, U), (S, U, U, S), (U, S, S, U)

# Hand computation, nominal alpha = 1 − D_o / D_e with n pairable values:
# ann + bob (claims 2 and 4 disputed): n = 8 (4 S, 4 U); disagreeing ordered pairs 2 per
# disputed claim over m − 1 = 1 → D_o = 4/8 = 0.5; D_e = 2·4·4/(8·7) = 32/56;
# alpha = 1 − 0.5·56/32 = 0.125.
TEAM_ALPHA = 0.125
# ann + bob + ext (every claim 2 of one label, 1 of the other: 4 disputed): n = 12 (6 S, 6 U);
# per claim 2·2·1 = 4 disagreeing ordered pairs over m − 1 = 2 → 2; D_o = 8/12;
# D_e = 2·6·6/(12·11) = 72/132; alpha = 1 − (8/12)·(132/72) = 1 − 11/9 = −2/9.
EVERYONE_ALPHA = -2 / 9


def _reference_alpha(*rows: tuple[str, ...]) -> float:
    """krippendorff's nominal alpha over reviewers × claims (S = 1, U = 0)."""
    data = np.array([[1.0 if value == S else 0.0 for value in row] for row in rows])
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))


@pytest.fixture
def labeled(team):  # noqa: F811
    """Overlap 2, ann and bob assigned, each labeling the 4 cited claims; an imported
    external reviewer ``ext`` labels them too."""
    run, people = team["run"], team["people"]
    run_settings_set(run=run, overlap=2)
    run_assign(run=run, reviewers=[people["ann"], people["bob"]])
    ext = ReviewerFactory(username="ext", kind=ReviewerKind.EXTERNAL)
    for reviewer, values in ((people["ann"], ANN), (people["bob"], BOB), (ext, EXT)):
        for claim_id, value in zip(team["cited"], values, strict=True):
            LabelFactory(claim_id=claim_id, reviewer=reviewer, value=value, justification="why")
    return team


def test_the_headline_is_the_assigned_reviewers_and_every_human_is_beside_it(labeled):
    """Team: alpha 0.125, 2 disputed claims (the 2nd and 4th); every human: alpha −2/9,
    4 disputed. Both equal the krippendorff package's figure."""
    assert _reference_alpha(ANN, BOB) == pytest.approx(TEAM_ALPHA, abs=1e-12)
    assert _reference_alpha(ANN, BOB, EXT) == pytest.approx(EVERYONE_ALPHA, abs=1e-12)
    result = run_agreement(run=labeled["run"])
    cited = labeled["cited"]
    assert result.assigned and result.overall.reviewers == ["ann", "bob"]
    assert result.overall.alpha.value == pytest.approx(TEAM_ALPHA, abs=1e-12)
    assert result.disputed == [cited[1], cited[3]]
    assert result.every_human.reviewers == ["ann", "bob", "ext"]
    assert result.every_human.alpha.value == pytest.approx(EVERYONE_ALPHA, abs=1e-12)
    assert result.every_human_disputed == cited


def test_without_assignments_every_human_is_the_headline(labeled):
    """Nobody assigned: the headline is every human's (−2/9, 4 disputed), nothing beside it."""
    run_assign(run=labeled["run"], reviewers=[])
    result = run_agreement(run=labeled["run"])
    assert not result.assigned and result.every_human is None and result.every_human_disputed is None
    assert result.overall.alpha.value == pytest.approx(EVERYONE_ALPHA, abs=1e-12)
    assert len(result.disputed) == 4


def test_agreement_json_names_whose_figures_they_are(labeled):
    out = StringIO()
    call_command("agreement", "--run", "r", "--project", "team", "--format", "json", stdout=out)
    payload = json.loads(out.getvalue())
    assert (payload["counted"], payload["counted_reviewers"], payload["disputed"]) == (
        "assigned reviewers", ["ann", "bob"], 2)
    assert payload["krippendorff_alpha"] == pytest.approx(TEAM_ALPHA, abs=1e-12)
    everyone = payload["all_human_reviewers"]
    assert (everyone["counted_reviewers"], everyone["disputed"]) == (["ann", "bob", "ext"], 4)
    assert everyone["krippendorff_alpha"] == pytest.approx(EVERYONE_ALPHA, abs=1e-12)
    assert payload["reviewers"] == ["ann", "bob", "ext"]
    # Fleiss' kappa. Team: agreement per claim 1, 0, 1, 0 → P̄ = 0.5, P_e = 0.5² + 0.5² = 0.5 → 0.
    # Everyone: each claim 2 of one label, 1 of the other → P_i = 2/(3·2) = 1/3, P_e = 0.5 → −1/3.
    from statsmodels.stats.inter_rater import fleiss_kappa

    assert payload["fleiss_kappa"] == pytest.approx(0.0, abs=1e-12)
    assert everyone["fleiss_kappa"] == pytest.approx(-1 / 3, abs=1e-12)
    assert fleiss_kappa(np.array([[2, 1], [2, 1], [1, 2], [1, 2]])) == pytest.approx(-1 / 3, abs=1e-12)
    table = StringIO()
    call_command("agreement", "--run", "r", "--project", "team", stdout=table)
    assert "Krippendorff alpha over 2 assigned reviewers (ann, bob) 0.13" in table.getvalue()
    assert "disputed claims over 3 human reviewers, imported ones included (ann, bob, ext): 4" in table.getvalue()


def test_agreement_page_shows_the_team_first_and_every_human_labeled(client, labeled):
    client.force_login(labeled["people"]["lea"])
    html = client.get(reverse("run_agreement", args=["team", "r"])).content.decode()
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))
    assert "Assigned reviewers (2: ann, bob;" in text
    assert re.search(r'id="figure-alpha".*?0\.13', html, re.S)
    assert re.search(r'id="figure-disputed".*?<p class="stat-value metric">2</p>', html, re.S)
    assert "Every human reviewer, imported ones included (3: ann, bob, ext)" in text
    assert re.search(r'id="every-human-alpha".*?−0\.22|id="every-human-alpha".*?-0\.22', html, re.S)
    assert re.search(r'id="every-human-disputed".*?<span class="metric">4</span>', html, re.S)
    assert re.search(r'id="every-human-fleiss".*?-0\.33', html, re.S)
    assert "Disagreements 2" in text


# Query counts the docstrings of labeling/team/agreement.py state, on tests/counted_run.py's run.


def test_agreement_reads_query_counts(django_assert_num_queries):
    """rev1, rev2 and the judge label the six cited claims (18 labels); the humans differ on
    q02's two claims, the first of which lead adjudicated UNSUPPORTED."""
    world = counted_run()
    disputed = [claim.pk for claim in world.claims["q02"][:2]]
    # The run's label state, the labels, then their reviewers' names and kinds.
    with django_assert_num_queries(3):
        labels, kinds = agreement_labels(world.run)
    assert (len(labels), kinds) == (18, {"judge": "model", "rev1": "human", "rev2": "human"})
    # agreement_labels' two, then the run's assigned reviewers.
    with django_assert_num_queries(3):
        agreement = run_agreement(run=world.run)
    assert agreement.disputed == disputed
    # One more with a promoted judge: its name.
    world.run.promoted_judge = world.judge
    world.run.save()
    world.run.refresh_from_db()
    with django_assert_num_queries(4):
        run_agreement(run=world.run)
    with django_assert_num_queries(1):
        judged = run_judgment_agreement(run=world.run)
    assert (judged.reviewers, judged.citations) == (["rev1"], 1)
    with django_assert_num_queries(1):
        verdicts = run_verdicts(run=world.run)
    assert verdicts == {disputed[0]: Verdict("UNSUPPORTED", "P1 says less.", "lead")}
    # The claims, then their current labels.
    with django_assert_num_queries(2):
        rows = disagreement_rows(run=world.run, claim_ids=disputed, reviewers=["rev1", "rev2"], verdicts=verdicts)
    assert [[label.value for label in row.labels] for row in rows] == [["SUPPORTED", "UNSUPPORTED"]] * 2

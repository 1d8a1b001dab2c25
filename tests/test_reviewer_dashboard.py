"""The reviewer dashboard (SPEC §4.4), hand-worked: labels, median seconds per
claim, UNSUPPORTED share, kappa against the counted label with its interval,
gold accuracy with its Wilson interval, open send-backs, qualified, the flag;
the page (sortable, with a query budget) and ``reviewers --format json``."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import numpy as np
import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone
from statsmodels.stats.inter_rater import cohens_kappa
from statsmodels.stats.proportion import proportion_confint

from labeling.models import Claim, GoldClaim, GoldSource, Label
from labeling.team.adjudication import adjudication_save
from labeling.team.quality import _label_figures, project_dashboard, run_dashboard
from labeling.team.send_backs import send_back_create
from scoring.reviewers import fast_and_supported, median_gap_seconds
from tests.counted_run import counted_run
from tests.quality_data import label, quality_world

pytestmark = pytest.mark.django_db

JSON_KEYS = ["reviewer", "labels", "median_seconds", "unsupported_share", "kappa", "kappa_ci95", "gold_correct",
             "gold_total", "gold_accuracy_ci95", "send_backs_open", "qualified"]


def _at(labels, seconds):
    start = timezone.now() - timedelta(days=1)
    for item, offset in zip(labels, seconds, strict=True):
        Label.objects.filter(pk=item.pk).update(created_at=start + timedelta(seconds=offset))


@pytest.fixture
def board_world(db):
    """Six claims, overlap 2. rev1: S S S S U U, rev2: S S U S U S. Claim 3 adjudicated S.
    Gold: claim 1 S, claim 5 U, claim 6 S. rev2's label on claim 3 sent back. Rule 0.3
    after 3 gold claims. Saves: rev1 at 0, 10, 30, 1000, 1006, 1010 s; rev2 at 0, 5, 10,
    710, 712, 720 s."""
    world = quality_world(answers=3, claims_per_answer=2, overlap=2, qualify_min_lower=0.3, qualify_min_gold=3)
    rev1, rev2 = world.reviewers
    values = {"S": "SUPPORTED", "U": "UNSUPPORTED"}
    ones = [label(c, rev1, values[v]) for c, v in zip(world.claims, "SSSSUU", strict=True)]
    twos = [label(c, rev2, values[v]) for c, v in zip(world.claims, "SSUSUS", strict=True)]
    _at(ones, [0, 10, 30, 1000, 1006, 1010])
    _at(twos, [0, 5, 10, 710, 712, 720])
    third = Claim.objects.select_related("answer__run").get(pk=world.claims[2].pk)
    adjudication_save(claim=third, lead=world.lead, value="SUPPORTED", reason="P1 states it.")
    for index, value in ((0, "SUPPORTED"), (4, "UNSUPPORTED"), (5, "SUPPORTED")):
        GoldClaim.objects.create(run=world.run, claim=world.claims[index], value=value, reason="known",
                                 source=GoldSource.FILE, lead=world.lead, claim_revision=1)
    send_back_create(run=world.run, claim=third, reviewer=rev2, lead=world.lead, comment="Look again.")
    return world


def test_median_gap_drops_breaks_between_sittings():
    """Saves at 0, 12, 20, 900, 905 s → gaps 12, 8, 880 (a break: dropped), 5 → median 8."""
    assert median_gap_seconds([900, 0, 20, 12, 905]) == 8.0
    assert median_gap_seconds([0, 601]) is None
    assert median_gap_seconds([5]) is None


def test_fast_and_nearly_always_supported_flag():
    """20 labels, 1 UNSUPPORTED (5 %), median 6 s → flagged; 2 UNSUPPORTED or a 12 s median
    or 19 labels → not."""
    assert fast_and_supported(median_seconds=6, unsupported=1, labels=20)
    assert not fast_and_supported(median_seconds=6, unsupported=2, labels=20)
    assert not fast_and_supported(median_seconds=12, unsupported=0, labels=20)
    assert not fast_and_supported(median_seconds=6, unsupported=0, labels=19)
    assert not fast_and_supported(median_seconds=None, unsupported=0, labels=50)


def test_dashboard_figures_by_hand(board_world):
    """rev1: gaps 10, 20, (970 dropped), 6, 4 → median 8; UNSUPPORTED 2/6. Against the label
    without theirs (rev2's, or the adjudication on claim 3): (ref, rev1) = SS SS SS SS UU SU →
    [[4, 1], [0, 1]]: p_o 5/6, p_e (5·4 + 1·2)/36 = 22/36, kappa (30 − 22)/(36 − 22) = 8/14.
    Gold 2/3 (claim 6 wrong), Wilson lower 0.208 < 0.3: not qualified.
    rev2: gaps 5, 5, (700 dropped), 2, 8 → median 5; (ref, rev2) = SS SS SU SS UU US →
    [[3, 1], [1, 1]]: p_o 4/6, p_e 20/36, kappa 4/16 = 0.25. Gold 3/3, lower 3/6.84 = 0.4385:
    qualified. One open send-back."""
    rows = {row.reviewer: row for row in run_dashboard(run=board_world.run).rows}
    one, two = rows["quality-rev1"], rows["quality-rev2"]
    assert (one.labels, one.unsupported, one.unsupported_share.value) == (6, 2, 2 / 6)
    assert one.median_seconds == pytest.approx(8.0, abs=1e-3)
    assert two.median_seconds == pytest.approx(5.0, abs=1e-3)
    assert one.kappa == pytest.approx(8 / 14, abs=1e-12) and one.kappa_n == 6
    assert two.kappa == pytest.approx(0.25, abs=1e-12)
    for row, table in ((one, [[4, 1], [0, 1]]), (two, [[3, 1], [1, 1]])):
        reference = cohens_kappa(np.array(table), return_results=True)
        assert row.kappa == pytest.approx(reference.kappa, abs=1e-12)
        half = 1.959963984540054 * reference.std_kappa
        assert row.kappa_ci95 == pytest.approx((max(-1, reference.kappa - half), min(1, reference.kappa + half)),
                                               abs=1e-9)
    assert (one.gold_correct, one.gold_total, two.gold_correct, two.gold_total) == (2, 3, 3, 3)
    assert one.gold_accuracy_ci95 == pytest.approx(proportion_confint(2, 3, method="wilson"), abs=1e-12)
    assert one.gold_accuracy_ci95[0] == pytest.approx(0.2077, abs=1e-4)
    assert two.gold_accuracy_ci95[0] == pytest.approx(3 / (3 + 1.959963984540054 ** 2), abs=1e-12)
    assert (one.qualified, two.qualified) == (False, True)
    assert (one.send_backs_open, two.send_backs_open) == (0, 1)


def test_reviewers_command_json_has_exactly_the_issue_keys_first(board_world):
    out = io.StringIO()
    call_command("reviewers", "--run", "r1", "--project", "quality", "--format", "json", stdout=out)
    data = json.loads(out.getvalue())
    rows = {row["reviewer"]: row for row in data["reviewers"]}
    assert list(rows["quality-rev1"])[:len(JSON_KEYS)] == JSON_KEYS
    assert rows["quality-rev1"]["median_seconds"] == 8.0 and rows["quality-rev2"]["median_seconds"] == 5.0
    assert rows["quality-rev1"]["unsupported_share"] == pytest.approx(1 / 3)
    assert rows["quality-rev2"]["kappa"] == 0.25 and rows["quality-rev2"]["send_backs_open"] == 1
    assert (rows["quality-rev1"]["gold_correct"], rows["quality-rev1"]["gold_total"]) == (2, 3)
    assert rows["quality-rev1"]["gold_accuracy_ci95"] == pytest.approx(list(proportion_confint(2, 3,
                                                                                               method="wilson")))
    assert (rows["quality-rev1"]["qualified"], rows["quality-rev2"]["qualified"]) == (False, True)
    table = io.StringIO()
    call_command("reviewers", "--run", "r1", "--project", "quality", stdout=table)
    assert "quality-rev2" in table.getvalue() and "2/3 = 0.67" in table.getvalue()


def test_dashboard_page_sorts_and_matches_the_json(board_world, client):
    world = board_world
    client.force_login(world.lead)
    url = reverse("run_dashboard", args=[world.project.slug, world.run.name])
    page = client.get(url, {"sort": "-kappa"}).content.decode()
    assert page.index('id="reviewer-quality-rev1"') < page.index('id="reviewer-quality-rev2"')
    page = client.get(url, {"sort": "kappa"}).content.decode()
    assert page.index('id="reviewer-quality-rev2"') < page.index('id="reviewer-quality-rev1"')
    row = page.split('id="reviewer-quality-rev1"')[1].split("</tr>")[0]
    assert "2/6 = 0.33" in row and "0.57" in row and "2/3 = 0.67" in row and "below the rule" in row
    project = client.get(reverse("project_dashboard", args=[world.project.slug])).content.decode()
    assert "r1" in project.split('id="reviewer-quality-rev1"')[1].split("</tr>")[0]
    client.force_login(world.reviewers[0])
    assert client.get(url).status_code == 403


def test_project_dashboard_sums_runs(board_world):
    """A second run where rev1 labels 2 claims (both gold SUPPORTED, both right): labels
    6 + 2, gold 2/3 + 2/2 = 4/5. Both runs have the rule 0.3 after 3: rev1 is unqualified
    on r1 (2/3, lower 0.208) and on r2 (2 gold claims < 3); rev2, who never labeled r2,
    qualifies on r1 (3/3, lower 0.4385) and is not listed on r2."""
    world = board_world
    other = quality_world(answers=1, claims_per_answer=2, slug="quality-b")
    other.run.project = world.project
    other.run.name = "r2"
    other.run.qualify_min_lower, other.run.qualify_min_gold = 0.3, 3
    other.run.save()
    for claim in other.claims:
        label(claim, world.reviewers[0])
        GoldClaim.objects.create(run=other.run, claim=claim, value="SUPPORTED", reason="known",
                                 source=GoldSource.FILE, claim_revision=1)
    rows = {row.reviewer: row for row in project_dashboard(project=world.project).rows}
    one = rows["quality-rev1"]
    assert (one.labels, one.gold_correct, one.gold_total) == (8, 4, 5)
    assert one.unqualified_runs == ("r1", "r2") and one.qualified is False
    assert rows["quality-rev2"].unqualified_runs == () and rows["quality-rev2"].qualified is True


@pytest.mark.parametrize("answers", [2, 40])
def test_dashboard_page_has_a_constant_query_count(answers, client, django_assert_max_num_queries):
    """2 or 40 answers (4 or 80 claims) labeled by two reviewers: the same queries."""
    world = quality_world(answers=answers, claims_per_answer=2, overlap=2)
    for claim in world.claims:
        for reviewer in world.reviewers:
            label(claim, reviewer)
    client.force_login(world.lead)
    url = reverse("run_dashboard", args=[world.project.slug, world.run.name])
    # 2: session, user · 1: run with its project and role · dashboard: labels per reviewer, gold per
    # reviewer, save-time medians, the confusion against the counted label, open send-backs,
    # assignments, reviewer names, current gold claims (8) · exclusion: none (the run leaves nobody out).
    with django_assert_max_num_queries(11):
        response = client.get(url)
    assert response.status_code == 200 and 'id="reviewer-quality-rev2"' in response.content.decode()


def test_label_figures_query_count(django_assert_num_queries):
    """tests/counted_run.py's run: rev1 and rev2 each labeled the six cited claims, rev2 two of them
    UNSUPPORTED; the judge's labels are no human's."""
    world = counted_run()
    with django_assert_num_queries(1):
        assert _label_figures([world.run.pk + 1000]).counts == {}
    # The label rows, then the current adjudications.
    with django_assert_num_queries(2):
        figures = _label_figures([world.run.pk])
    assert figures.counts == {world.rev1.pk: (6, 0), world.rev2.pk: (6, 2)}

"""Which label counts for a claim (SPEC §3, §4.1, §4.4) is computed twice, for
good reasons: in SQL for the pages (``labeling.review.tallies``: a fixed number of
aggregate queries whatever the size of the run, per run and per answer, and the
adjudication page's disputed claims, ``labeling.models.counted.disputed_q``) and in
pandas for the CLI, exports and comparisons (``labeling.scores.metrics`` with
``scoring.labels.counted_labels`` and ``resolve_labels``). These tests hold them to
each other on every answers file in ``fixtures/`` as imported, and again after a
second reviewer, an automated judge, an undo and a claim edit have left claims
agreed, disputed, pending and stale; then with the judge promoted and the second
reviewer left out as unqualified."""

from __future__ import annotations

import json
from io import StringIO
from itertools import cycle

import pytest
from django.core.management import call_command
from django.urls import reverse

from labeling.importers.load import project_for_import, run_import
from labeling.models import Claim, Label, LabelValue, Membership, Project, ReviewerKind, Run
from labeling.review import screen, tallies
from labeling.review.claim_edits import claim_edit
from labeling.scores.metrics import run_scores
from labeling.team.adjudication import adjudication_save, disputed_claims
from tests.conftest import FIXTURES_DIR
from tests.factories import LabelFactory, ProjectFactory, ReviewerFactory

pytestmark = pytest.mark.django_db

FIXTURE_FILES = sorted(path.name for path in FIXTURES_DIR.glob("*.jsonl"))
FLIP = {LabelValue.SUPPORTED: LabelValue.UNSUPPORTED, LabelValue.UNSUPPORTED: LabelValue.SUPPORTED}


def test_every_answers_file_of_fixtures_is_checked():
    assert FIXTURE_FILES == ["expertqa_dev.jsonl", "expertqa_judged.jsonl", "expertqa_sample.jsonl",
                             "seed_citation_ids.jsonl",
                             "seed_coverage_support.jsonl", "seed_coverage_support_v2.jsonl",
                             "seed_gold_references.jsonl"]


def _imported(name: str) -> Project:
    project = project_for_import(slug=name.removesuffix(".jsonl").replace("_", "-"))
    run_import(project=project, source=FIXTURES_DIR / name)
    return project


def _second_opinions(project: Project) -> None:
    """Cycle through the cited claims of every run of ``project``: bob agrees
    with the label already there, bob disagrees, the judge (kind ``model``)
    labels, bob labels and undoes (his label stays in history, not current),
    the claim is reworded (every label on it goes stale)."""
    bob = ReviewerFactory(username="bob")
    judge = ReviewerFactory(username="judge", kind=ReviewerKind.MODEL)
    cited = Claim.objects.filter(answer__run__project=project, citations__isnull=False).distinct().order_by("id")
    current = {claim_id: value for claim_id, value in
               Label.objects.filter(claim__in=cited, is_current=True).values_list("claim_id", "value")}
    steps = cycle(["agree", "disagree", "judge", "undone", "reworded"])
    for claim, step in zip(cited, steps, strict=False):
        value = current.get(claim.pk, LabelValue.SUPPORTED)
        if step == "agree":
            LabelFactory(claim=claim, reviewer=bob, value=value, justification="same")
        elif step == "disagree":
            LabelFactory(claim=claim, reviewer=bob, value=FLIP[LabelValue(value)], justification="other")
        elif step == "judge":
            LabelFactory(claim=claim, reviewer=judge, value=LabelValue.UNSUPPORTED, justification="model")
        elif step == "undone":
            LabelFactory(claim=claim, reviewer=bob, value=LabelValue.SUPPORTED, is_current=False)
        else:
            claim_edit(claim=claim, text=claim.text + " (reworded)")


def _assert_agree(project: Project) -> dict[str, int]:
    """SQL per run, SQL per answer and pandas give the same counts on every run
    of ``project``; returns the totals checked (so a test can say what it covered)."""
    reviewer = ReviewerFactory(username="viewer")
    totals = {"runs": 0, "answers": 0, "supported": 0, "unsupported": 0, "disagreements": 0, "pending": 0}
    for run in Run.objects.filter(project=project).select_related("project"):
        scores = run_scores(run)
        pooled = scores.claims
        sql = tallies.run_counts(run=run, reviewer=reviewer)
        assert (sql.claims, sql.cited, sql.supported, sql.unsupported, sql.pending, sql.disagreements) == (
            pooled.claims, pooled.cited, pooled.supported, pooled.unsupported, pooled.pending,
            scores.disagreements), run.name
        assert (sql.coverage, sql.support, sql.gap) == (pooled.coverage, pooled.support, pooled.gap), run.name

        page = screen.answer_page(run=run, reviewer=reviewer, per_page=10_000)
        per_answer_sql = {
            row.answer.question_key: (row.counts.claims, row.counts.cited, row.counts.supported,
                                      row.counts.supported + row.counts.unsupported, row.counts.pending)
            for row in page.rows
        }
        per_answer_pandas = {
            record["question_id"]: (record["claims"], record["cited"], record["supported"], record["labeled_cited"],
                                    record["pending"])
            for record in scores.per_answer_records()
        }
        assert per_answer_sql == per_answer_pandas, run.name
        assert sum(row.counts.disagreements for row in page.rows) == scores.disagreements, run.name
        # Disputed, claim by claim: the adjudication page's ORM predicate and the pandas frame.
        frame = scores.claims_frame
        assert sorted(disputed_claims(run=run).values_list("pk", flat=True)) == sorted(
            frame.loc[frame["disagreement"], "claim_id"].tolist()), run.name
        totals["runs"] += 1
        totals["answers"] += len(per_answer_sql)
        for key in ("supported", "unsupported", "pending"):
            totals[key] += getattr(pooled, key)
        totals["disagreements"] += scores.disagreements
    return totals


@pytest.mark.parametrize("name", FIXTURE_FILES)
def test_pages_and_scoring_count_the_same_labels_as_imported(name):
    totals = _assert_agree(_imported(name))

    assert totals["runs"] >= 1 and totals["answers"] >= 1


@pytest.mark.parametrize("name", FIXTURE_FILES)
def test_pages_and_scoring_count_the_same_labels_with_disagreements(name):
    project = _imported(name)
    _second_opinions(project)

    totals = _assert_agree(project)

    assert totals["disagreements"] > 0 and totals["pending"] > 0


def test_expertqa_with_second_opinions_covers_every_state():
    """The 118 ExpertQA answers after the second opinions, 639 cited claims,
    dealt by id into five steps. The experts' labels (kind ``external``: they
    count) on each fifth, as imported — SUPPORTED / UNSUPPORTED / none:

    - agree     87 / 35 / 6: bob gives the same value, SUPPORTED where none
      → 93 SUPPORTED, 35 UNSUPPORTED;
    - disagree  91 / 33 / 4: bob flips it (UNSUPPORTED where none)
      → 124 disputed, 4 UNSUPPORTED;
    - judge     94 / 33 / 1: the judge (kind ``model``) says UNSUPPORTED and
      never counts (SPEC §4.4) → 94 SUPPORTED, 33 UNSUPPORTED, 1 pending;
    - undone    88 / 36 / 4: bob's label is history → 88 SUPPORTED,
      36 UNSUPPORTED, 4 pending;
    - reworded  88 / 34 / 5: every label goes stale → 127 pending.

    SUPPORTED 93 + 94 + 88 = 275; UNSUPPORTED 35 + 4 + 33 + 36 = 108;
    disputes 124; pending 124 + 1 + 4 + 127 = 256 (275 + 108 + 256 = 639).
    Pinned so a change in either implementation shows up here."""
    project = _imported("expertqa_dev.jsonl")
    _second_opinions(project)

    totals = _assert_agree(project)

    assert totals == {"runs": 4, "answers": 118, "supported": 275, "unsupported": 108, "disagreements": 124,
                      "pending": 256}


def test_expertqa_with_adjudicated_disputes_counts_the_leads_verdicts():
    """As above, then a lead adjudicates the first 20 disputed claims (by id), alternating
    SUPPORTED / UNSUPPORTED: 10 more SUPPORTED (285), 10 more UNSUPPORTED (118), 20 fewer
    disputes (104) and pending claims (236), in SQL and in pandas alike."""
    project = _imported("expertqa_dev.jsonl")
    _second_opinions(project)
    lead = ReviewerFactory(username="lea")
    disputed = sorted((claim for run in Run.objects.filter(project=project) for claim in disputed_claims(run=run)),
                      key=lambda claim: claim.pk)[:20]
    for claim, value in zip(disputed, cycle([LabelValue.SUPPORTED, LabelValue.UNSUPPORTED]), strict=False):
        adjudication_save(claim=claim, lead=lead, value=value, reason="checked the passage")

    totals = _assert_agree(project)

    assert totals == {"runs": 4, "answers": 118, "supported": 285, "unsupported": 118, "disagreements": 104,
                      "pending": 236}


def test_a_models_label_against_the_humans_leaves_the_humans_label(client):
    """One answer, two cited claims. Claim 1: ann (human) SUPPORTED, the judge
    (kind ``model``) UNSUPPORTED; claim 2: ann SUPPORTED alone. The judge is
    graded, never counted (SPEC §4.4), so both claims are SUPPORTED: support
    2/2 = 1.00, nothing pending or disputed — on the run page and in ``score``
    (counting the judge would make claim 1 disputed: 1/1, 1 pending)."""
    from tests.test_adjudication import disputed_run

    project = ProjectFactory(slug="team")
    run = disputed_run(project, answers=1)
    judge = ReviewerFactory(username="judge", kind=ReviewerKind.MODEL)
    bob_labels = Label.objects.filter(claim__answer__run=run, reviewer__username="bob")
    for label in bob_labels:
        Label.objects.create(claim=label.claim, reviewer=judge, value=label.value, justification="model",
                             claim_revision=1)
    bob_labels.delete()
    lea = ReviewerFactory(username="lea")
    Membership.objects.create(project=project, reviewer=lea, role="lead")
    client.force_login(lea)

    page = client.get(reverse("run_detail", args=["team", "r"])).content.decode()

    support = page.split('<h2 class="stat-title">Support</h2>', 1)[1].split("</div>", 1)[0]
    assert '<p class="stat-value metric">2/2 = 1.00</p>' in support
    assert "SUPPORTED / labeled cited claims" in support
    assert "Adjudicate (0 disputed)" in page
    assert "provisional" not in page and "has disagreement" not in page
    out = StringIO()
    call_command("score", "--run", "r", "--project", "team", "--format", "json", stdout=out)
    claims = json.loads(out.getvalue())["claims"]
    assert (claims["supported"], claims["unsupported"], claims["pending"], claims["disputed"]) == (2, 0, 0, 0)


def test_expertqa_with_the_judge_promoted_and_the_second_reviewer_left_out():
    """As in the test above, then a lead promotes the judge on every run and leaves out the
    labels of reviewers who do not qualify (rule: ≥ 1 gold claim; there is none, so bob,
    the one person of kind ``human``, is out; the experts, kind ``external``, have no gold
    checks and stay). Per fifth, from the experts' SUPPORTED / UNSUPPORTED / none:

    - agree     87 / 35 / 6 and disagree 91 / 33 / 4: bob is out → as imported;
    - judge     94 / 33 / 1: the promoted judge's UNSUPPORTED counts → 94 disputed,
      33 + 1 UNSUPPORTED;
    - undone    88 / 36 / 4: as before; reworded: 127 pending.

    SUPPORTED 87 + 91 + 88 = 266; UNSUPPORTED 35 + 33 + 34 + 36 = 138; disputes 94;
    pending 6 + 4 + 94 + 4 + 127 = 235 (266 + 138 + 235 = 639), in SQL and in pandas."""
    from labeling.models import Reviewer

    project = _imported("expertqa_dev.jsonl")
    _second_opinions(project)
    Run.objects.filter(project=project).update(promoted_judge=Reviewer.objects.get(username="judge"),
                                               exclude_unqualified=True, qualify_min_lower=0.0, qualify_min_gold=1)

    totals = _assert_agree(project)

    assert totals == {"runs": 4, "answers": 118, "supported": 266, "unsupported": 138, "disagreements": 94,
                      "pending": 235}

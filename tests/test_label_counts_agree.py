"""Which label counts for a claim (SPEC §3, §4.1, §4.4) is computed twice, for
good reasons: in SQL for the pages (``labeling.selectors``: a fixed number of
aggregate queries whatever the size of the run, per run and per answer) and in
pandas for the CLI, exports and comparisons (``labeling.metrics`` with
``scoring.labels.resolve_labels``). These tests hold the three to each other
on every answers file in ``fixtures/`` as imported, and again after a second
reviewer, an automated judge, an undo and a claim edit have left claims
agreed, disputed, pending and stale."""

from __future__ import annotations

from itertools import cycle

import pytest

from labeling import selectors
from labeling.answers_import import project_for_import, run_import
from labeling.metrics import run_scores
from labeling.models import Claim, Label, LabelValue, Project, ReviewerKind, Run
from labeling.services import claim_edit
from tests.conftest import FIXTURES_DIR
from tests.factories import LabelFactory, ReviewerFactory

pytestmark = pytest.mark.django_db

FIXTURE_FILES = sorted(path.name for path in FIXTURES_DIR.glob("*.jsonl"))
FLIP = {LabelValue.SUPPORTED: LabelValue.UNSUPPORTED, LabelValue.UNSUPPORTED: LabelValue.SUPPORTED}


def test_every_answers_file_of_fixtures_is_checked():
    assert FIXTURE_FILES == ["expertqa_dev.jsonl", "expertqa_sample.jsonl", "seed_citation_ids.jsonl",
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
        sql = selectors.run_counts(run=run, reviewer=reviewer)
        assert (sql.claims, sql.cited, sql.supported, sql.unsupported, sql.pending, sql.disagreements) == (
            pooled.claims, pooled.cited, pooled.supported, pooled.unsupported, pooled.pending,
            scores.disagreements), run.name
        assert (sql.coverage, sql.support, sql.gap) == (pooled.coverage, pooled.support, pooled.gap), run.name

        page = selectors.answer_page(run=run, reviewer=reviewer, per_page=10_000)
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
    """The 118 ExpertQA answers after the second opinions, 639 cited claims in
    all: a fifth each agreed (label kept), disputed by bob, labeled UNSUPPORTED
    by the judge (disputed where the expert said SUPPORTED), undone by bob
    (label kept) and reworded (pending). 218 disputes + the reworded fifth and
    the claims the experts left unlabeled = 349 pending; what stays resolved is
    181 SUPPORTED and 109 UNSUPPORTED. Pinned so a change in either
    implementation shows up here."""
    project = _imported("expertqa_dev.jsonl")
    _second_opinions(project)

    totals = _assert_agree(project)

    assert totals == {"runs": 4, "answers": 118, "supported": 181, "unsupported": 109, "disagreements": 218,
                      "pending": 349}


def test_expertqa_with_adjudicated_disputes_counts_the_leads_verdicts():
    """As above, then a lead adjudicates the first 20 disputed claims (by id), alternating
    SUPPORTED / UNSUPPORTED: 10 more SUPPORTED (191), 10 more UNSUPPORTED (119), 20 fewer
    disputes (198) and pending claims (329), in SQL and in pandas alike."""
    from labeling.adjudication import adjudication_save, disputed_claims

    project = _imported("expertqa_dev.jsonl")
    _second_opinions(project)
    lead = ReviewerFactory(username="lea")
    disputed = sorted((claim for run in Run.objects.filter(project=project) for claim in disputed_claims(run=run)),
                      key=lambda claim: claim.pk)[:20]
    for claim, value in zip(disputed, cycle([LabelValue.SUPPORTED, LabelValue.UNSUPPORTED]), strict=False):
        adjudication_save(claim=claim, lead=lead, value=value, reason="checked the passage")

    totals = _assert_agree(project)

    assert totals == {"runs": 4, "answers": 118, "supported": 191, "unsupported": 119, "disagreements": 198,
                      "pending": 329}

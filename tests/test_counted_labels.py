"""Whose labels count, whose a run leaves out, and which claims are disputed (SPEC §4.4):
the predicates of ``labeling.models.counted`` on one hand-built run, in every setting
of the promoted judge and the exclusion, and the pages' SQL counts and the pandas
scores agreeing with them (``tests/test_label_counts_agree.py`` does the same on every
fixture)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from labeling.exports.frames import labels_frame, resolved_claims_frame
from labeling.models import Claim, GoldClaim, GoldSource, Label, Reviewer, ReviewerKind, Run
from labeling.models.counted import (
    Exclusion,
    counted_q,
    disputed_q,
    excludes,
    run_counted_q,
    run_exclusion,
    runs_exclusions,
)
from labeling.review import tallies
from labeling.scores.metrics import run_scores
from labeling.team.adjudication import adjudication_save, disputed_claims
from scoring.labels import counted_labels
from tests.factories import LabelFactory, ReviewerFactory
from tests.quality_data import quality_world

pytestmark = pytest.mark.django_db

S, U = "SUPPORTED", "UNSUPPORTED"

# Claim index → the current labels on it. rev1..rev3 are people (kind human), ex an imported
# expert (external), judge-a and judge-b automated labelers (model). Claim 8 is marked not factual.
LABELS = {
    1: {"rev1": S, "rev2": S},              # two people agree: SUPPORTED
    2: {"rev1": S, "rev2": U},              # two people disagree: disputed
    3: {"rev1": S, "rev2": U},              # disagree, then a lead says UNSUPPORTED: settled
    4: {"rev1": S, "judge-a": U},           # disputed only when judge-a is promoted
    5: {"rev1": S, "judge-b": U},           # judge-b is never promoted: SUPPORTED
    6: {"rev1": S, "rev3": U},              # rev3 does not qualify: SUPPORTED once left out
    7: {"rev2": S, "ex": U},                # an imported expert counts: disputed
    8: {"rev1": S, "rev2": U},              # not factual: outside every count
}
# Gold claims, all SUPPORTED: rev1 3/3 (claims 1, 4, 6), rev2 2/2 (1, 7), rev3 0/1 (6). Rule
# "Wilson lower bound ≥ 0.3 after ≥ 2 gold claims": 2/2 has lower bound 2 / (2 + 1.96²) = 0.342,
# so rev1 and rev2 qualify; rev3, with one gold claim, does not.
GOLD = (1, 4, 6, 7)


@dataclass
class World:
    run: Run
    claims: dict[int, Claim]
    people: dict[str, Reviewer]


@pytest.fixture
def world():
    built = quality_world(answers=1, claims_per_answer=8, reviewers=3, slug="rules",
                          qualify_min_lower=0.3, qualify_min_gold=2)
    people = {person.username.removeprefix("rules-"): person for person in built.reviewers}
    people["ex"] = ReviewerFactory(username="ex", kind=ReviewerKind.EXTERNAL)
    people["judge-a"] = ReviewerFactory(username="judge-a", kind=ReviewerKind.MODEL)
    people["judge-b"] = ReviewerFactory(username="judge-b", kind=ReviewerKind.MODEL)
    claims = {claim.index: claim for claim in built.claims}
    for index, given in LABELS.items():
        for name, value in given.items():
            LabelFactory(claim=claims[index], reviewer=people[name], value=value, justification=f"{name} read it")
    for index in GOLD:
        GoldClaim.objects.create(run=built.run, claim=claims[index], value=S, reason="The passage says so.",
                                 source=GoldSource.FILE, lead=built.lead, claim_revision=claims[index].revision)
    adjudication_save(claim=claims[3], lead=built.lead, value=U, reason="The passage says the opposite.")
    Claim.objects.filter(pk=claims[8].pk).update(factual=False)
    return World(run=built.run, claims=claims, people=people)


def _set(world: World, *, promoted: bool, exclude: bool) -> Run:
    world.run.promoted_judge = world.people["judge-a"] if promoted else None
    world.run.exclude_unqualified = exclude
    world.run.save()
    return Run.objects.select_related("project").get(pk=world.run.pk)


def _counted(run: Run, q) -> set[tuple[int, str]]:
    rows = Label.objects.filter(claim__answer__run=run, is_current=True).filter(q)
    return {(index, name.removeprefix("rules-")) for index, name in rows.values_list("claim__index",
                                                                                     "reviewer__username")}


def _every_label(but: set[str] = frozenset()) -> set[tuple[int, str]]:
    return {(index, name) for index, given in LABELS.items() for name in given if name not in but}


# (promoted, exclude) → whose labels count, the disputed claims, and the run's
# (supported, unsupported, disputed, pending) over its 7 cited factual claims.
CASES = {
    (False, False): ({"judge-a", "judge-b"}, [2, 6, 7], (3, 1, 3, 3)),
    (True, False): ({"judge-b"}, [2, 4, 6, 7], (2, 1, 4, 4)),
    (True, True): ({"judge-b", "rev3"}, [2, 4, 7], (3, 1, 3, 3)),
    (False, True): ({"judge-a", "judge-b", "rev3"}, [2, 7], (4, 1, 2, 2)),
}


@pytest.mark.parametrize(("promoted", "exclude"), list(CASES))
def test_whose_labels_count_and_which_claims_are_disputed(world, promoted, exclude):
    """Per setting, by hand from LABELS: people and the expert always count, judge-b never,
    judge-a when promoted, rev3 unless left out. Disputed: claim 2 always (people), 7 always
    (the expert), 4 with the promotion, 6 unless rev3 is left out; never 3 (adjudicated), 5
    (judge-b) or 8 (not factual). Counts over claims 1–7, 3 being UNSUPPORTED by the lead:
    no promotion, no exclusion → SUPPORTED 1, 4, 5; promoted → 1, 5; promoted and rev3 out
    → 1, 5, 6; rev3 out alone → 1, 4, 5, 6."""
    run = _set(world, promoted=promoted, exclude=exclude)
    left_out, disputed, (supported, unsupported, n_disputed, pending) = CASES[(promoted, exclude)]

    assert _counted(run, run_counted_q(run)) == _every_label(but=left_out)
    assert [claim.index for claim in disputed_claims(run=run)] == disputed
    assert sorted(Claim.objects.filter(answer__run=run).filter(disputed_q(run_counted_q(run)))
                  .values_list("index", flat=True)) == disputed
    counts = tallies.run_counts(run=run, reviewer=world.people["rev1"])
    assert (counts.supported, counts.unsupported, counts.disagreements, counts.pending) == (
        supported, unsupported, n_disputed, pending)
    # The pandas twin: the same claims disputed, the same counts.
    frame, n_frame = resolved_claims_frame(run)
    assert sorted(frame.loc[frame["disagreement"], "claim_index"].tolist()) == disputed and n_frame == n_disputed
    scores = run_scores(run)
    assert (scores.claims.supported, scores.claims.unsupported, scores.disagreements, scores.claims.pending) == (
        supported, unsupported, n_disputed, pending)


def test_the_humans_alone_are_the_reference_a_judge_is_graded_against(world):
    """``humans_only``: people and the expert, never a judge (promoted or not), nobody
    left out: with judge-a promoted and rev3 out, claims 2, 6 and 7 are disputed, 4 is not."""
    run = _set(world, promoted=True, exclude=True)

    assert _counted(run, run_counted_q(run, humans_only=True)) == _every_label(but={"judge-a", "judge-b"})
    assert sorted(Claim.objects.filter(answer__run=run).filter(disputed_q(run_counted_q(run, humans_only=True)))
                  .values_list("index", flat=True)) == [2, 6, 7]
    frame, _n = resolved_claims_frame(run, humans_only=True)
    assert sorted(frame.loc[frame["disagreement"], "claim_index"].tolist()) == [2, 6, 7]


def test_counted_q_with_a_promoted_judge_per_row_counts_as_with_its_id(world):
    """``promoted`` as an expression (one query over several runs) picks the same labels as
    the run's id: judge-a's one label joins the people's when promoted."""
    from django.db.models import F

    run = _set(world, promoted=True, exclude=False)
    by_row = counted_q(promoted=F("claim__answer__run__promoted_judge_id"))

    assert _counted(run, by_row) == _counted(run, counted_q(promoted=run.promoted_judge_id))
    assert _counted(run, by_row) - _counted(run, counted_q()) == {(4, "judge-a")}


def test_a_run_leaves_out_its_unqualified_reviewers_only_when_the_lead_says_so(world):
    """rev3 (gold 0/1) does not qualify; rev1 (3/3) and rev2 (2/2) do; ex, an imported expert,
    has no gold checks and is never left out. Without ``exclude_unqualified``: nobody, no query."""
    run = _set(world, promoted=False, exclude=False)
    assert not excludes(run) and run_exclusion(run=run) == Exclusion() and runs_exclusions([run]) == {}

    run = _set(world, promoted=False, exclude=True)
    exclusion = run_exclusion(run=run)

    assert excludes(run)
    assert (exclusion.names, exclusion.labels, exclusion.reviewer_ids) == (
        ("rules-rev3",), 1, frozenset({world.people["rev3"].pk}))
    assert runs_exclusions([run]) == {run.pk: exclusion}
    # The pandas twin leaves the same reviewer out by name.
    kept = counted_labels(labels_frame(run), excluded=exclusion.names)
    assert "rules-rev3" not in set(kept["reviewer"]) and {"rules-rev1", "rules-rev2", "ex"} <= set(kept["reviewer"])


def test_a_run_without_a_rule_leaves_nobody_out(world):
    """``exclude_unqualified`` without a rule (no minimum lower bound): nobody is left out."""
    run = _set(world, promoted=False, exclude=True)
    Run.objects.filter(pk=run.pk).update(qualify_min_lower=None)
    run = Run.objects.get(pk=run.pk)

    assert not excludes(run) and not run_exclusion(run=run)
    assert [claim.index for claim in disputed_claims(run=run)] == [2, 6, 7]


@pytest.mark.parametrize("promoted", [False, True])
def test_citation_judgments_count_as_labels_do(world, promoted):
    """Claim 1's citation: rev1 FULL, judge-a NONE, judge-b NONE. Not promoted: only rev1's
    counts — the figures read FULL, the label table writes ``[P1] FULL``. judge-a promoted:
    its NONE counts too — the citation is disputed (no judgment, nothing in the table), and
    the judgment agreement sees two reviewers instead of one."""
    from labeling.exports.frames import citations_frame, resolved_judgments_frame
    from labeling.exports.label_table import label_table_frame
    from labeling.models import Citation, CitationJudgment
    from labeling.team.agreement import run_judgment_agreement

    citation = Citation.objects.get(claim=world.claims[1])
    for name, value in (("rev1", "FULL"), ("judge-a", "NONE"), ("judge-b", "NONE")):
        CitationJudgment.objects.create(citation=citation, reviewer=world.people[name], judgment=value,
                                        claim_revision=world.claims[1].revision)
    run = _set(world, promoted=promoted, exclude=False)

    rows = resolved_judgments_frame(run, citations_frame(run))
    row = rows[rows["citation_id"] == citation.pk].iloc[0]
    table = label_table_frame(run, with_passages=False)
    cell = table.loc[table["claim_index"] == 1, "judgments"].iloc[0]

    assert (row["judgment"], bool(row["disputed"])) == ((None, True) if promoted else ("FULL", False))
    assert cell == ("" if promoted else "[P1] FULL")
    assert run_judgment_agreement(run=run).reviewers == (["judge-a", "rules-rev1"] if promoted else ["rules-rev1"])

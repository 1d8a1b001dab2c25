"""Hidden gold checks (SPEC §4.4–3): marking gold, import_gold, the queue's mixing
at the lead's rate, never shown as gold, feedback mode, accuracy with its Wilson
interval, the qualification rule and leaving unqualified reviewers' labels out."""

from __future__ import annotations

import io
import json

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from statsmodels.stats.proportion import proportion_confint

from labeling.models import AuditEvent, Claim, GoldClaim, GoldSource, Label
from labeling.models.counted import run_exclusion
from labeling.review import queue, tallies
from labeling.team.adjudication import adjudication_save
from labeling.team.gold_claims import gold_mark
from labeling.team.quality import run_dashboard
from scoring.reviewers import accuracy_interval, qualified
from tests.quality_data import label, quality_world

pytestmark = pytest.mark.django_db


def _gold(world, claims, value="SUPPORTED", reason="The passage says so word for word."):
    for claim in claims:
        GoldClaim.objects.create(run=world.run, claim=claim, value=value, reason=reason, source=GoldSource.FILE,
                                 lead=world.lead, claim_revision=claim.revision)


# -- figures ---------------------------------------------------------------------------------------

def test_wilson_interval_of_gold_accuracy_is_statsmodels():
    """3/5: z² = 3.8415, centre (0.6 + 0.38415) / 1.76829 = 0.5566, half-width
    1.96 · √(0.048 + 0.038415) / 1.76829 = 0.3258 → (0.2307, 0.8824). 20/20: lower
    20 / 23.8415 = 0.8389. No gold claim: no interval."""
    low, high = accuracy_interval(3, 5)
    assert low == pytest.approx(0.2307, abs=1e-4) and high == pytest.approx(0.8824, abs=1e-4)
    for correct, total in [(3, 5), (0, 4), (20, 20), (17, 23)]:
        expected = proportion_confint(correct, total, alpha=0.05, method="wilson")
        assert accuracy_interval(correct, total) == pytest.approx(expected, abs=1e-12)
    assert accuracy_interval(20, 20)[0] == pytest.approx(20 / (20 + 1.959963984540054 ** 2), abs=1e-12)
    assert accuracy_interval(0, 0) is None
    with pytest.raises(ValueError):
        accuracy_interval(6, 5)


def test_qualification_rule_lower_bound_after_enough_gold():
    """Rule 0.7 after 20: 19/20 → lower 0.764 qualifies; 18/20 → 0.699 does not; 10/10
    (lower 0.722) is too few gold claims; no rule → None."""
    assert proportion_confint(19, 20, method="wilson")[0] == pytest.approx(0.7639, abs=1e-4)
    assert proportion_confint(18, 20, method="wilson")[0] == pytest.approx(0.6990, abs=1e-4)
    assert qualified(19, 20, min_lower=0.7, min_gold=20) is True
    assert qualified(18, 20, min_lower=0.7, min_gold=20) is False
    assert qualified(10, 10, min_lower=0.7, min_gold=20) is False
    assert qualified(10, 10, min_lower=None, min_gold=None) is None


def test_gold_due_places_one_check_in_each_stretch():
    """Rate 0.5, offsets 0.3 then 0.7: check 0 is due before the first label (0.3 < 0.5);
    check 1 not after 2 labels (1.7 < 1.5 is false), due after 3 (1.7 < 2.0)."""
    assert queue.gold_due(rate=0.5, labeled=0, gold_labeled=0, offset=0.3)
    assert not queue.gold_due(rate=0.5, labeled=2, gold_labeled=1, offset=0.7)
    assert queue.gold_due(rate=0.5, labeled=3, gold_labeled=1, offset=0.7)
    assert not queue.gold_due(rate=0.0, labeled=100, gold_labeled=0, offset=0.0)
    offsets = [queue.gold_offset(1, 2, k) for k in range(50)]
    assert all(0 <= u < 1 for u in offsets) and len(set(offsets)) == 50


# -- marking gold ----------------------------------------------------------------------------------

def test_lead_marks_gold_from_adjudication_or_own_label():
    world = quality_world(answers=1, claims_per_answer=3)
    first, second, third = world.claims
    rev1, rev2 = world.reviewers
    label(first, rev1, "SUPPORTED")
    label(first, rev2, "UNSUPPORTED")
    adjudication_save(claim=Claim.objects.select_related("answer__run").get(pk=first.pk), lead=world.lead,
                      value="UNSUPPORTED", reason="Only half of it is in the passage.")
    gold = gold_mark(run=world.run, claim=first, lead=world.lead, source=GoldSource.ADJUDICATION)
    assert (gold.value, gold.reason, gold.source) == ("UNSUPPORTED", "Only half of it is in the passage.",
                                                      "adjudication")
    label(second, world.lead, "SUPPORTED", "Stated in P1.")
    assert gold_mark(run=world.run, claim=second, lead=world.lead, source=GoldSource.LABEL).reason == "Stated in P1."
    with pytest.raises(ValidationError, match="no SUPPORTED or UNSUPPORTED label"):
        gold_mark(run=world.run, claim=third, lead=world.lead, source=GoldSource.LABEL)
    with pytest.raises(ValidationError, match="no adjudication"):
        gold_mark(run=world.run, claim=third, lead=world.lead, source=GoldSource.ADJUDICATION)
    assert GoldClaim.objects.filter(run=world.run, is_current=True).count() == 2
    assert AuditEvent.objects.filter(run=world.run, action="gold").count() == 2


def test_editing_a_claim_ends_its_gold_label(client):
    world = quality_world(answers=1, claims_per_answer=1)
    _gold(world, world.claims)
    client.force_login(world.lead)
    claim = world.claims[0]
    client.post(reverse("claim_edit", args=[world.project.slug, world.run.name, claim.pk]),
                {"text": "Fact 1.1, reworded.", "revision": claim.revision})
    assert not GoldClaim.objects.filter(claim=claim, is_current=True).exists()


def test_import_gold_marks_every_row_or_nothing(tmp_path):
    world = quality_world(answers=2, claims_per_answer=2)
    good = tmp_path / "gold.csv"
    good.write_text("question_id,claim_index,label,reason\nq01,1,SUPPORTED,In P1.\nq02,2,unsupported,Not in P1.\n",
                    encoding="utf-8")
    out = io.StringIO()
    call_command("import_gold", str(good), "--run", "r1", "--project", "quality", stdout=out)
    assert "2 claims marked gold" in out.getvalue()
    assert sorted(GoldClaim.objects.filter(run=world.run).values_list("claim__answer__question_key", "claim__index",
                                                                      "value")) == [
        ("q01", 1, "SUPPORTED"), ("q02", 2, "UNSUPPORTED")]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([
        json.dumps({"question_id": "q01", "claim_index": 2, "label": "SUPPORTED", "reason": "ok"}),
        json.dumps({"question_id": "q09", "claim_index": 1, "label": "SUPPORTED", "reason": "no such question"}),
        json.dumps({"question_id": "q02", "claim_index": 1, "label": "MAYBE", "reason": "bad label"}),
        json.dumps({"question_id": "q02", "claim_index": 1, "label": "SUPPORTED", "reason": ""}),
    ]) + "\n", encoding="utf-8")
    with pytest.raises(CommandError) as error:
        call_command("import_gold", str(bad), "--run", "r1", "--project", "quality")
    message = str(error.value)
    assert "line 3: label: 'MAYBE' is not SUPPORTED or UNSUPPORTED" in message
    assert "line 4: reason: missing" in message
    assert GoldClaim.objects.filter(run=world.run).count() == 2
    unknown = tmp_path / "unknown.csv"
    unknown.write_text("question_id,claim_index,label,reason\nq09,1,SUPPORTED,x\nq01,1,SUPPORTED,again\n"
                       "q01,1,SUPPORTED,twice\n", encoding="utf-8")
    with pytest.raises(CommandError) as error:
        call_command("import_gold", str(unknown), "--run", "r1", "--project", "quality")
    assert "line 2: question_id, claim_index: run 'r1' has no claim 1 of question 'q09'" in str(error.value)
    assert "line 4: question_id, claim_index: the same claim as line 3" in str(error.value)
    assert GoldClaim.objects.filter(run=world.run).count() == 2


# -- the queue ---------------------------------------------------------------------------------------

def _walk(world, reviewer, limit=50):
    """Label everything the queue hands ``reviewer`` (SUPPORTED), in its order; the claim ids."""
    order, after = [], None
    for _ in range(limit):
        claim = queue.next_unlabeled_claim(run=world.run, reviewer=reviewer, after=after, lease=True)
        if claim is None:
            return order
        label(claim, reviewer)
        order.append(claim.pk)
        after = claim
    raise AssertionError("the queue never ran out")


def test_queue_mixes_gold_into_each_reviewers_work_at_the_rate():
    """Overlap 1, 10 claims, 4 gold at rate 0.5. rev2 labels the 4 gold claims first, so
    they reached their overlap; rev1's walk still meets each of them as a check, and
    after n labels rev1's gold count stays within one of 0.5 · n."""
    world = quality_world(answers=5, claims_per_answer=2)
    world.run.gold_rate = 0.5
    world.run.save()
    gold = [world.claims[i] for i in (1, 4, 6, 9)]
    _gold(world, gold)
    rev1, rev2 = world.reviewers
    for claim in gold:
        label(claim, rev2)
    order = _walk(world, rev1)
    gold_ids = {c.pk for c in gold}
    assert sorted(order) == sorted(c.pk for c in world.claims)
    for n in range(1, len(order) + 1):
        seen = sum(1 for pk in order[:n] if pk in gold_ids)
        assert abs(seen - 0.5 * n) <= 1, (n, seen, order)
    assert Label.objects.filter(claim__in=gold, is_current=True).count() == 8


def test_queue_at_five_percent_leaves_gold_for_later_and_never_checks_a_lead_on_their_own_gold():
    """Rate 0.05, 1 gold claim among 10 (claim 10, last in walk order): check 0 is due at the
    hand-out after n labels when 0 + u₀ < 0.05 · (n + 1), i.e. at the first n > u₀ / 0.05 − 1.
    So it comes at position n + 1 when that n is under 9, else last, in walk order; once
    either way. The lead who marked it never gets it as a check."""
    world = quality_world(answers=5, claims_per_answer=2)
    gold = world.claims[-1]
    _gold(world, [gold])
    rev1 = world.reviewers[0]
    order = _walk(world, rev1)
    assert len(order) == 10 and order.count(gold.pk) == 1
    offset = queue.gold_offset(world.run.pk, rev1.pk, 0)
    due_after = next((n for n in range(10) if offset < 0.05 * (n + 1)), 9)
    assert order.index(gold.pk) + 1 == min(due_after, 9) + 1
    lead_claim = queue.priority_claim(run=world.run, reviewer=world.lead)
    assert lead_claim is None


def test_gold_claim_is_never_shown_as_gold(client):
    world = quality_world(answers=1, claims_per_answer=2)
    _gold(world, [world.claims[0]])
    client.force_login(world.reviewers[0])
    url = reverse("answer_review", args=[world.project.slug, world.run.name, world.claims[0].answer_id])
    page = client.get(url, {"claim": world.claims[0].pk}).content.decode().lower()
    assert "gold" not in page
    client.force_login(world.lead)
    lead_page = client.get(url, {"claim": world.claims[0].pk}).content.decode()
    assert "gold SUPPORTED" in lead_page


def _save(client, world, claim, value, justification=""):
    return client.post(reverse("claim_label", args=[world.project.slug, world.run.name, claim.pk]),
                       {"value": value, "justification": justification, "claim": claim.pk,
                        "revision": claim.revision, "base_label": ""}, headers={"HX-Request": "true"})


def test_feedback_shows_the_gold_label_after_a_gold_claim_only(client):
    """Feedback on: labeling gold claim 1 UNSUPPORTED shows its gold label SUPPORTED and the
    lead's reason; labeling non-gold claim 2 shows nothing of gold. Feedback off: nothing."""
    world = quality_world(answers=1, claims_per_answer=3, feedback=True, gold_rate=0)
    _gold(world, [world.claims[0]], reason="P1 says it in so many words.")
    client.force_login(world.reviewers[0])
    before = client.get(reverse("answer_review", args=[world.project.slug, world.run.name,
                                                       world.claims[0].answer_id]), {"claim": world.claims[0].pk})
    assert "P1 says it in so many words." not in before.content.decode()
    after_gold = _save(client, world, world.claims[0], "UNSUPPORTED", "Not in the passage.").content.decode()
    feedback = after_gold.split('id="gold-feedback"')[1].split("</div>")[0]
    assert "Claim 1 was a gold check." in feedback and "SUPPORTED" in feedback
    assert "P1 says it in so many words." in feedback and "you said" in feedback
    after_plain = _save(client, world, world.claims[1], "SUPPORTED").content.decode()
    assert "gold" not in after_plain.lower()
    world.run.feedback = False
    world.run.save()
    client.force_login(world.reviewers[1])
    off = _save(client, world, world.claims[0], "SUPPORTED").content.decode()
    assert "gold" not in off.lower()


def test_feedback_on_a_blind_run_shows_nothing_of_other_claims(client):
    """Blind run (overlap 2), feedback on: rev2 labels non-gold claim 2 after rev1; the page
    shows neither rev1's label nor anything of gold."""
    world = quality_world(answers=1, claims_per_answer=2, feedback=True, overlap=2, gold_rate=0)
    _gold(world, [world.claims[0]], reason="Secret reason.")
    rev1, rev2 = world.reviewers
    label(world.claims[1], rev1, "UNSUPPORTED", "rev1's private reason")
    client.force_login(rev2)
    page = _save(client, world, world.claims[1], "SUPPORTED").content.decode()
    assert "gold" not in page.lower() and "rev1's private reason" not in page and "Secret reason." not in page


# -- qualification and exclusion ------------------------------------------------------------------

def test_unqualified_reviewers_labels_are_left_out_when_the_lead_says_so(client):
    """3 claims, gold SUPPORTED on 1 and 2. rev1 says UNSUPPORTED on all three (gold 0/2,
    Wilson lower 0), rev2 SUPPORTED on all (2/2, lower 2/5.84 = 0.342). Rule 0.3 after 2.
    Counting both: 3 disputed, support undefined. Leaving rev1 out: support 3/3, and the
    figures say 3 labels of rev1 are left out."""
    world = quality_world(answers=1, claims_per_answer=3, qualify_min_lower=0.3, qualify_min_gold=2)
    _gold(world, world.claims[:2])
    rev1, rev2 = world.reviewers
    for claim in world.claims:
        label(claim, rev1, "UNSUPPORTED")
        label(claim, rev2, "SUPPORTED")
    counts = tallies.run_counts(run=world.run, reviewer=world.lead)
    assert (counts.supported, counts.unsupported, counts.disagreements) == (0, 0, 3)
    board = {row.reviewer: row for row in run_dashboard(run=world.run).rows}
    assert (board[rev1.username].qualified, board[rev2.username].qualified) == (False, True)
    world.run.exclude_unqualified = True
    world.run.save()
    assert run_exclusion(run=world.run).labels == 3
    counts = tallies.run_counts(run=world.run, reviewer=world.lead)
    assert (counts.supported, counts.unsupported, counts.disagreements) == (3, 0, 0)
    out = io.StringIO()
    call_command("score", "--run", "r1", "--project", "quality", "--format", "json", stdout=out)
    scored = json.loads(out.getvalue())
    assert scored["claims"]["supported"] == 3 and scored["claims"]["support"] == 1.0
    assert scored["excluded"] == {"reviewers": [rev1.username], "labels": 3}
    client.force_login(world.lead)
    page = client.get(reverse("run_detail", args=[world.project.slug, world.run.name])).content.decode()
    assert 'id="flag-quality-rev1"' in page and "below the rule" in page
    assert "<strong>3</strong> labels of quality-rev1 left out" in page
    # rev1's own progress still counts their labels.
    assert tallies.run_counts(run=world.run, reviewer=rev1).labeled == 3


@pytest.mark.parametrize("answers", [2, 40])
def test_gold_checks_page_has_a_constant_query_count(answers, client, django_assert_max_num_queries):
    """2 or 40 gold claims listed: the same queries."""
    world = quality_world(answers=answers, claims_per_answer=1)
    _gold(world, world.claims)
    client.force_login(world.lead)
    url = reverse("run_gold_checks", args=[world.project.slug, world.run.name])
    # 2: session, user · 1: run with its project and role · 1: the gold claims with their claim, answer
    # and lead · 1: the messages (none) are in the session already read.
    with django_assert_max_num_queries(5):
        response = client.get(url)
    assert response.content.decode().count('<tr id="gold-') == answers

"""Judge-assisted estimates of a run (SPEC §4.6): ``score``'s
``estimates`` and the run page's headline, by hand, against ppi-python and on
the real ExpertQA answers."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from ppi_py import ppi_mean_ci

from labeling.exports.frames import claims_frame
from labeling.models import Answer, Claim, Label, LabelValue, Membership, ReviewerKind, Role, Run, SampleMember
from labeling.review.label_writes import label_save
from labeling.scores.estimates import _per_answer, pick_judge, run_estimates, run_judges, target_reached
from labeling.scores.samples import sample_draw
from scoring.deltas import format_delta
from scoring.ppi import ppi_mean
from scoring.ratio import format_value
from tests.conftest import EXPERTQA_PATH
from tests.counted_run import counted_run
from tests.factories import LabelFactory, ReviewerFactory
from tests.test_samples import make_run

HX = {"HTTP_HX_REQUEST": "true"}
KEYS = ["method", "estimate", "ci95", "lambda", "n_human_units", "n_human_answers", "n_judge_units",
        "effective_human_labels", "judge", "human_only", "judge_only"]


def score_json(run: Run, *args: str) -> dict:
    out = io.StringIO()
    call_command("score", "--project", run.project.slug, "--run", run.name, "--format", "json", *args, stdout=out)
    return json.loads(out.getvalue())


def human(claim: Claim, reviewer, value: str) -> None:
    label_save(claim=claim, reviewer=reviewer, value=value, justification="" if value == "SUPPORTED" else "no",
               base_revision=claim.revision, base_label_id=None)


def judge_label(claim: Claim, judge, value: str) -> None:
    LabelFactory(claim=claim, reviewer=judge, value=value)


def sampled_answers(run: Run) -> list[Answer]:
    return [m.answer for m in SampleMember.objects.filter(sample__run=run).order_by("position")]


@pytest.fixture
def small(db):
    """4 answers of 2 cited claims and 1 uncited; a sample of 2 (seed 42) labeled by
    alice: S1 SUPPORTED, SUPPORTED; S2 SUPPORTED, UNSUPPORTED. Judge ``j`` agrees on
    S1 and S2; on the other two answers it says O1 SUPPORTED, UNSUPPORTED and O2
    UNSUPPORTED, (no verdict)."""
    run = make_run(answers=4)
    alice = ReviewerFactory(username="alice")
    judge = ReviewerFactory(username="j", kind=ReviewerKind.MODEL)
    sample_draw(run=run, answers=2, seed=42)
    s1, s2 = sampled_answers(run)
    o1, o2 = Answer.objects.filter(run=run).exclude(pk__in=[s1.pk, s2.pk]).order_by("question_key")
    for answer, humans, verdicts in ((s1, "SS", "SS"), (s2, "SU", "SU"), (o1, "", "SU"), (o2, "", "U")):
        for index, value in enumerate(humans, start=1):
            human(answer.claims.get(index=index), alice, "SUPPORTED" if value == "S" else "UNSUPPORTED")
        for index, value in enumerate(verdicts, start=1):
            judge_label(answer.claims.get(index=index), judge, "SUPPORTED" if value == "S" else "UNSUPPORTED")
    return run


def test_score_json_gains_the_estimates_with_the_issues_keys(small):
    """Support, per answer (human 1s, judge's predictions, cited claims): labeled S1 (2, 2, 2),
    S2 (1, 1, 2); judge only O1 (1, 2), O2 (0 + 0.5 for the claim without a verdict, 2).
    ȳ = 3/4 = ŷ; residuals a = b = ±0.5: C = 0.5/16. Judge sums 2, 1, 1, 0.5 over 8 claims:
    p̄ = 0.5625, residuals .875, −.125, −.125, −.625, Σ² = 1.1875, τ² = 1.1875/3;
    λ̂ = (0.5/16) / (1.1875/3 · (2/16 + 2/16)) = 6/19. Estimate = λ̂·1.5/4 + (3 − 3λ̂)/4
    = 0.75 − 0.375·6/19 = 12/19. Judge alone: 2 + 1 + 1 + 0 = 4 SUPPORTED of the 7 claims it labeled."""
    data = score_json(small)

    support = data["estimates"]["support"]
    assert list(support) == KEYS and list(data["estimates"]) == ["support", "supported_rate"]
    assert list(data)[-2:] == ["estimates", "per_answer"]
    assert support["method"] == "ppi++" and support["judge"] == "j"
    assert support["lambda"] == pytest.approx(6 / 19, rel=1e-12)
    assert support["estimate"] == pytest.approx(12 / 19, rel=1e-12)
    assert (support["n_human_units"], support["n_human_answers"], support["n_judge_units"]) == (4, 2, 4)
    assert support["judge_only"] == pytest.approx(4 / 7)
    assert support["human_only"]["estimate"] == 0.75
    reference = ppi_mean([2, 1], [2, 1], [2, 2], [1, 0.5], [2, 2])
    assert support["ci95"] == pytest.approx([reference.low, reference.high], rel=1e-12)
    assert support["human_only"]["ci95"] == pytest.approx([reference.human_only.low, reference.human_only.high])
    assert support["effective_human_labels"] == pytest.approx(reference.effective_human_labels)
    # Supported rate: each answer's uncited claim is a unit too (0 for humans and judge).
    rate = data["estimates"]["supported_rate"]
    expected = ppi_mean([2, 1], [2, 1], [3, 3], [1, 0.5], [3, 3])
    assert (rate["n_human_units"], rate["n_judge_units"]) == (6, 6)
    assert rate["estimate"] == pytest.approx(expected.estimate, rel=1e-12)
    assert rate["ci95"] == pytest.approx([expected.low, expected.high], rel=1e-12)
    assert rate["judge_only"] == pytest.approx(4 / 11)
    assert rate["human_only"]["estimate"] == pytest.approx(3 / 6)


def test_one_claim_per_answer_through_the_whole_stack_equals_ppi_python(db):
    """40 answers of one cited claim (seeded: 60% SUPPORTED); a sample of 20 labeled by
    alice; the judge on all 40, wrong on one in eight: ``score``'s support interval
    is ppi_py.ppi_mean_ci's on the labels read back from the database, to 1e-9."""
    run = make_run(answers=40, claims=1)
    alice = ReviewerFactory(username="alice")
    judge = ReviewerFactory(username="j", kind=ReviewerKind.MODEL)
    sample_draw(run=run, answers=20, seed=5)
    rng = np.random.default_rng(3)
    ids = list(Answer.objects.filter(run=run).order_by("question_key").values_list("pk", flat=True))
    truth = dict(zip(ids, np.where(rng.random(40) < 0.6, "S", "U"), strict=True))
    wrong = {pk for pk, flip in zip(ids, rng.random(40) < 0.125, strict=True) if flip}
    sampled = [a.pk for a in sampled_answers(run)]
    for answer_id, value in truth.items():
        claim = Claim.objects.get(answer_id=answer_id, index=1)
        verdict = value if answer_id not in wrong else ("U" if value == "S" else "S")
        judge_label(claim, judge, "SUPPORTED" if verdict == "S" else "UNSUPPORTED")
        if answer_id in sampled:
            human(claim, alice, "SUPPORTED" if value == "S" else "UNSUPPORTED")

    support = score_json(run)["estimates"]["support"]

    def judged(answer_id):
        return float(Label.objects.get(claim__answer_id=answer_id, reviewer=judge).value == "SUPPORTED")

    y = np.array([float(truth[a] == "S") for a in sampled])
    yhat = np.array([judged(a) for a in sampled])
    rest = np.array([judged(a) for a in truth if a not in sampled])
    (low,), (high,) = ppi_mean_ci(y, yhat, rest, alpha=0.05)
    assert 0 < low < high < 1 and wrong
    assert support["ci95"] == pytest.approx([low, high], abs=1e-9)
    assert (support["n_human_units"], support["n_judge_units"]) == (20, 20)


def _verdict(expert: str | None, index: int) -> str:
    """The test judge: the experts' label (SUPPORTED where they gave none), flipped on
    every third claim of an answer."""
    value = "UNSUPPORTED" if expert == "UNSUPPORTED" else "SUPPORTED"
    if index % 3 == 0:
        value = "SUPPORTED" if value == "UNSUPPORTED" else "UNSUPPORTED"
    return value


def _expertqa_expected(run_name: str, sampled_keys: list[str]):
    """The support estimate recomputed from fixtures/expertqa_dev.jsonl itself: the
    experts' labels as the humans', the judge of :func:`_verdict`."""
    per_answer = {}
    for line in EXPERTQA_PATH.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["run"] != run_name:
            continue
        cited = [(i, c) for i, c in enumerate(row["claims"], start=1) if c["citations"]]
        per_answer[row["question_id"]] = (
            sum(c["label"] == "SUPPORTED" for _i, c in cited),
            sum(_verdict(c["label"], i) == "SUPPORTED" for i, c in cited),
            len(cited),
            any(c["label"] not in ("SUPPORTED", "UNSUPPORTED") for _i, c in cited),
        )
    labeled = [k for k in sampled_keys if not per_answer[k][3]]
    rest = [k for k in per_answer if k not in labeled]
    return ppi_mean([per_answer[k][0] for k in labeled], [per_answer[k][1] for k in labeled],
                    [per_answer[k][2] for k in labeled], [per_answer[k][1] for k in rest],
                    [per_answer[k][2] for k in rest]), len(labeled)


def test_real_expertqa_answers_give_the_estimate_recomputed_from_the_file(expertqa_project):
    """Run post_hoc_sphere_gpt4 (30 answers, 180 cited claims, experts' support 92/171 = 0.538);
    a sample of 12 (seed 2024); a judge that gives the experts' label but for every
    third claim of an answer. The estimate is the one recomputed from the answers file."""
    run = Run.objects.get(project=expertqa_project, name="post_hoc_sphere_gpt4")
    judge = ReviewerFactory(username="flip-judge", kind=ReviewerKind.MODEL)
    expert = dict(Label.objects.filter(claim__answer__run=run, is_current=True).values_list("claim_id", "value"))
    for claim in Claim.objects.filter(answer__run=run, citations__isnull=False).distinct():
        judge_label(claim, judge, _verdict(expert.get(claim.pk), claim.index))
    sample_draw(run=run, answers=12, seed=2024)
    keys = [a.question_key for a in sampled_answers(run)]

    support = score_json(run)["estimates"]["support"]

    expected, labeled = _expertqa_expected("post_hoc_sphere_gpt4", keys)
    assert support["n_human_answers"] == labeled == expected.n_human_answers
    assert support["n_human_units"] + support["n_judge_units"] == 180
    assert support["estimate"] == pytest.approx(expected.estimate, rel=1e-12)
    assert support["ci95"] == pytest.approx([expected.low, expected.high], rel=1e-12)
    assert support["lambda"] == pytest.approx(expected.lam, rel=1e-12)
    assert 0.2 < support["lambda"] < 1 and expected.n_human_answers >= 8
    low, high = support["ci95"]
    assert low < 92 / 171 < high  # the experts' figure on every labeled claim of the run
    human_low, human_high = support["human_only"]["ci95"]
    assert high - low < human_high - human_low


# -- which judge --------------------------------------------------------------------------------

def test_judge_is_the_promoted_one_else_the_only_one_else_named(small):
    second = ReviewerFactory(username="k", kind=ReviewerKind.MODEL)
    assert pick_judge(small).username == "j"
    judge_label(Claim.objects.filter(answer__run=small).first(), second, "SUPPORTED")

    with pytest.raises(CommandError, match=r"run 'r' has 2 judges \(j, k\) and none is promoted: name the one"):
        score_json(small)
    assert score_json(small, "--judge", "k")["estimates"]["support"]["judge"] == "k"
    small.promoted_judge = second
    small.save()
    assert score_json(small)["estimates"]["support"]["judge"] == "k"
    assert score_json(small, "--judge", "j")["estimates"]["supported_rate"]["judge"] == "j"
    with pytest.raises(CommandError, match=r"'alice' is not a judge with labels on run 'r' \(its judges: j, k\)"):
        score_json(small, "--judge", "alice")


def test_promoted_judge_labels_never_count_as_the_humans_in_the_estimate(small):
    """Promoting j makes its labels count in ``claims`` (coverage, support), never as Y."""
    small.promoted_judge = ReviewerFactory(username="j")
    small.save()
    data = score_json(small)
    assert data["claims"]["labeled_cited"] == 7  # the humans' 4 and the judge's on O1, O2
    assert data["estimates"]["support"]["n_human_units"] == 4
    assert data["estimates"]["support"]["estimate"] == pytest.approx(12 / 19, rel=1e-12)


def test_no_sample_no_judge_or_one_reviewer_give_no_estimates(db):
    run = make_run(answers=3)
    judge = ReviewerFactory(username="j", kind=ReviewerKind.MODEL)
    judge_label(Claim.objects.filter(answer__run=run).first(), judge, "SUPPORTED")
    assert "estimates" not in score_json(run)
    with pytest.raises(CommandError, match=r"^--judge: run 'r' has no probability sample"):
        score_json(run, "--judge", "j")
    sample_draw(run=run, answers=2, seed=1)
    assert "estimates" in score_json(run)
    assert "estimates" not in score_json(run, "--reviewer", "j")
    with pytest.raises(CommandError, match=r"^--judge: the estimates use the humans' agreed labels"):
        score_json(run, "--reviewer", "j", "--judge", "j")
    Label.objects.filter(reviewer=judge).delete()
    assert "estimates" not in score_json(run)


def test_nothing_fully_labeled_is_an_estimate_of_nothing(db):
    run = make_run(answers=3)
    judge = ReviewerFactory(username="j", kind=ReviewerKind.MODEL)
    for claim in Claim.objects.filter(answer__run=run, index__lte=2):
        judge_label(claim, judge, "SUPPORTED")
    sample_draw(run=run, answers=2, seed=1)
    support = score_json(run)["estimates"]["support"]
    assert (support["estimate"], support["ci95"], support["n_human_answers"], support["n_judge_units"]) == (
        None, None, 0, 6)
    assert support["judge_only"] == 1.0


def test_table_format_prints_the_estimates_in_the_run_pages_words(small):
    out = io.StringIO()
    call_command("score", "--run", "r", stdout=out)
    text = out.getvalue()
    assert "estimates (PPI++, judge j; sample 2 answers: 2 fully labeled, seed 42)" in text
    assert "support 0.63 (" in text and "— 2 answers by humans + judge on 4; humans alone 0.75 (" in text
    assert "judge alone 0.57; λ̂ 0.32" in text


# -- the run page -------------------------------------------------------------------------------

@pytest.fixture
def lead_client(client, small):
    lead = ReviewerFactory(username="lead")
    Membership.objects.create(project=small.project, reviewer=lead, role=Role.LEAD)
    client.force_login(lead)
    return client


def test_run_page_headline_is_the_estimate_in_the_issues_words(lead_client, small):
    body = lead_client.get(reverse("run_sample", args=["sampling", "r"]), **HX).content.decode()
    support = score_json(small)["estimates"]["support"]
    low, high = support["ci95"]
    human_low, human_high = support["human_only"]["ci95"]
    assert (f"support <strong class=\"metric\" data-value=\"{support['estimate']!r}\">0.63</strong>") in body
    assert f'data-low="{low!r}" data-high="{high!r}">({low:.2f}–{high:.2f})</span>' in body
    text = " ".join(body.split())
    assert (f"— 2 answers by humans + judge on 4; humans alone 0.75 ({human_low:.2f}–{human_high:.2f}); "
            "judge alone 0.57") in text
    assert "λ̂ = 0.32: the humans' 4 labels with judge <strong>j</strong>'s on 4 other cited claims weigh" in text
    assert "sample 2 answers: 2 fully labeled" in text


def test_run_page_says_plainly_when_the_judge_does_not_help(lead_client, small):
    """Judge labels changed so that on S1 and S2 it says SUPPORTED everywhere (the humans:
    S, S and S, U): b = 0, C = 0, λ̂ = 0, the estimate is the humans' 3/4."""
    s2 = sampled_answers(small)[1]
    Label.objects.filter(claim=s2.claims.get(index=2), reviewer__username="j").update(value=LabelValue.SUPPORTED)
    body = " ".join(lead_client.get(reverse("run_sample", args=["sampling", "r"])).content.decode().split())
    assert "Judge j does not help here</strong> (λ̂ = 0.00, near 0): the estimate is the humans' alone" in body
    assert score_json(small)["estimates"]["support"]["estimate"] == 0.75


def test_several_judges_without_a_promoted_one_let_the_lead_pick(lead_client, small):
    judge_label(Claim.objects.filter(answer__run=small).first(), ReviewerFactory(username="k", kind="model"),
                "SUPPORTED")
    url = reverse("run_sample", args=["sampling", "r"])
    body = " ".join(lead_client.get(url).content.decode().split())
    assert "has 2 judges (j, k) and none is promoted" in body and f'href="{url}?judge=k"' in body
    assert "humans alone on 2 fully labeled sampled answers" in body
    picked = " ".join(lead_client.get(url, {"judge": "k"}).content.decode().split())
    assert "judge <strong>k</strong>" in picked or "Judge k does not help here" in picked


# -- the label budget and the target ------------------------------------------------------------

def test_run_page_gives_the_label_budget_of_both_estimates(lead_client, small):
    """With the sample's target ±0.2 first, then ±0.05, ±0.03, ±0.02: the answers to
    label for PPI++ (``ppi_answers_needed``) beside the humans' alone
    (``answers_needed``), neither beyond the run's 4 answers."""
    from labeling.scores.samples import sample_target_set
    from scoring.budgets import answers_needed
    from scoring.ppi import ppi_answers_needed

    sample_target_set(run=small, half_width=0.2)
    estimate = ppi_mean([2, 1], [2, 1], [2, 2], [1, 0.5], [2, 2])
    widths = [0.2, 0.05, 0.03, 0.02]
    ppi = ppi_answers_needed(estimate, available=4, half_widths=widths)
    human = answers_needed(estimate.human_only, available=4, half_widths=widths)
    body = " ".join(lead_client.get(reverse("run_sample", args=["sampling", "r"])).content.decode().split())

    def ppi_words(p):
        if p.needed is None:
            return "not reachable: the judge's own sampling error is wider"
        if not p.reachable:
            return f"not reachable: about {p.needed:,} answers needed, the run has 4"
        return f"label about {p.more} more sampled answer{'s' if p.more != 1 else ''}" if p.more else "reached"

    def human_words(h):
        return f"about {h.needed:,} answers needed" if not h.reachable else f"about {h.more} more"

    for p, h in zip(ppi, human, strict=True):
        assert f"For ±{p.half_width}: {ppi_words(p)} <span class=\"muted\">(humans alone: {human_words(h)})" in body
    assert "For ±0.2: label about 2 more sampled answers" in body
    assert not human[0].reachable  # the humans alone would need more than the run's 4 answers
    assert "target ±0.2: not yet" in body


def test_budget_on_a_larger_sample_says_how_many_more_answers(client, db):
    """One-claim answers, 40 in the run, 20 sampled and labeled: ±0.05 cannot be reached
    whatever the sample (the 20 judge-only claims alone are too few), ±0.2 already is."""
    from scoring.ppi import ppi_answers_needed

    run = make_run(answers=40, claims=1, slug="budget", name="big")
    lead = ReviewerFactory(username="lead")
    Membership.objects.create(project=run.project, reviewer=lead, role=Role.LEAD)
    client.force_login(lead)
    alice = ReviewerFactory(username="alice")
    judge = ReviewerFactory(username="j", kind=ReviewerKind.MODEL)
    sample_draw(run=run, answers=20, seed=5)
    sampled = {a.pk for a in sampled_answers(run)}
    for i, claim in enumerate(Claim.objects.filter(answer__run=run, index=1).order_by("answer__question_key")):
        value = "SUPPORTED" if i % 3 else "UNSUPPORTED"
        judge_label(claim, judge, value if i % 7 else "SUPPORTED")
        if claim.answer_id in sampled:
            human(claim, alice, value)
    support = score_json(run)["estimates"]["support"]
    from labeling.scores.estimates import run_estimates
    est = run_estimates(run, judge=judge)
    assert est.support.estimate == pytest.approx(support["estimate"], rel=1e-12)
    (budget,) = ppi_answers_needed(est.support, available=40, half_widths=(0.05,))
    body = " ".join(client.get(reverse("run_sample", args=["budget", "big"])).content.decode().split())
    # 20 judge-only answers: the judge's own sampling error, z·√V_imputed, is wider than ±0.05.
    assert 1.96 * est.support.variance_imputed ** 0.5 > 0.05
    assert (budget.needed, budget.reachable, budget.more) == (None, False, 20)
    assert "For ±0.05: not reachable: the judge's own sampling error is wider" in body
    (wide,) = ppi_answers_needed(est.support, available=40, half_widths=(0.2,))
    assert wide.reachable and wide.needed <= 20 and wide.more == 0


def test_queue_says_target_reached_when_the_interval_is_that_narrow(client, small):
    """The review page of a sampled answer names its place in the sample and, with a
    target, whether the support interval is as narrow."""
    from labeling.scores.samples import sample_target_set

    alice = ReviewerFactory(username="alice")
    Membership.objects.create(project=small.project, reviewer=alice, role=Role.REVIEWER)
    client.force_login(alice)
    s1 = sampled_answers(small)[0]
    url = reverse("answer_review", args=["sampling", "r", s1.pk])
    page = " ".join(client.get(url).content.decode().split())
    assert "sampled answer 1 of 2" in page and "sample-target" not in page
    half_width = (lambda e: (e[1] - e[0]) / 2)(score_json(small)["estimates"]["support"]["ci95"])

    sample_target_set(run=small, half_width=round(half_width - 0.01, 3))
    below = " ".join(client.get(url).content.decode().split())
    assert f"target ±{round(half_width - 0.01, 3)}: not reached yet" in below
    sample_target_set(run=small, half_width=round(half_width + 0.01, 3))
    reached = " ".join(client.get(url, **HX).content.decode().split())
    assert '<strong class="badge SUPPORTED">target reached</strong>' in reached
    other = Answer.objects.filter(run=small).exclude(pk__in=[a.pk for a in sampled_answers(small)]).first()
    outside = client.get(reverse("answer_review", args=["sampling", "r", other.pk])).content.decode()
    assert "sampled answer" not in outside


# -- runs compared and gated on their estimates (SPEC §4.6) ----------------------------------

@pytest.fixture
def pair(small):
    """Run ``b`` answering the same 4 questions: a sample of 2 labeled S, U and U, U;
    judge j agrees there and says U, U and S, U on the other two answers."""
    run = make_run(answers=4, name="b")
    alice = ReviewerFactory(username="alice")
    judge = ReviewerFactory(username="j")
    sample_draw(run=run, answers=2, seed=42)
    s1, s2 = sampled_answers(run)
    o1, o2 = Answer.objects.filter(run=run).exclude(pk__in=[s1.pk, s2.pk]).order_by("question_key")
    for answer, humans, verdicts in ((s1, "SU", "SU"), (s2, "UU", "UU"), (o1, "", "UU"), (o2, "", "SU")):
        for index, value in enumerate(humans, start=1):
            human(answer.claims.get(index=index), alice, "SUPPORTED" if value == "S" else "UNSUPPORTED")
        for index, value in enumerate(verdicts, start=1):
            judge_label(answer.claims.get(index=index), judge, "SUPPORTED" if value == "S" else "UNSUPPORTED")
    return small, run


def _expected_difference():
    """B − A from the per-answer sums of the two fixtures (support)."""
    from scoring.ppi import independent_difference

    a = ppi_mean([2, 1], [2, 1], [2, 2], [1, 0.5], [2, 2])
    b = ppi_mean([1, 0], [1, 0], [2, 2], [0, 1], [2, 2])
    return a, b, independent_difference(a, b)


def gate(*args: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("score", "--project", "sampling", "--run", "b", "--baseline", "r", *args, stdout=out, stderr=err)
    except CommandError as exc:
        return exc.returncode, str(exc)
    return 0, err.getvalue()


def test_gate_on_estimates_adds_the_variances_of_independent_samples(pair):
    """B − A = b − a with the interval Δ ± z·√(V_A + V_B); non-inferiority passes when its
    lower bound is at or above −max_drop (a bound just beyond it) and fails just inside it."""
    a, b, difference = _expected_difference()
    assert difference.delta == pytest.approx(b.estimate - a.estimate)
    assert difference.high - difference.delta == pytest.approx(1.959963984540054 * (a.variance + b.variance) ** 0.5)
    passing, failing = -difference.low + 0.01, -difference.low - 0.01
    assert failing > -difference.delta  # the point rule alone would pass it

    code, text = gate("--max-drop", f"support={passing:.4f}", "--confidence", "0.95", "--estimate", "ppi")
    assert code == 0 and "CI gate passed: b vs baseline r on the runs' PPI++ estimates (judges j and j;" in text

    code, text = gate("--max-drop", f"support={failing:.4f}", "--confidence", "0.95", "--estimate", "ppi")
    assert code == 1
    # Deltas read as everywhere else (scoring.deltas.format_delta): typographic minus, half away from zero.
    assert (f"support: b vs baseline r: B − A {format_delta(difference.delta, 4)} (95% interval "
            f"{format_delta(difference.low, 4)} to {format_delta(difference.high, 4)}; PPI++ estimates on 2 and 2 "
            "sampled answers): the interval reaches below "
            f"−{float(f'{failing:.4f}'):g}; about ") in text
    assert "more sampled answer(s) labeled in each run (at the current variance) would settle it" in text

    # Without --confidence the point rule: B − A against −max_drop.
    assert gate("--max-drop", f"support={failing:.4f}", "--estimate", "ppi")[0] == 0
    code, text = gate("--max-drop", f"support={-difference.delta - 0.01:.4f}", "--estimate", "ppi")
    assert code == 1 and f"dropped {format_value(-difference.delta, 4)} > allowed" in text


def test_gate_json_and_table_name_the_estimate_differences(pair):
    a, b, difference = _expected_difference()
    out = io.StringIO()
    call_command("score", "--project", "sampling", "--run", "b", "--baseline", "r", "--max-drop", "support=0.9",
                 "--estimate", "ppi", "--format", "json", stdout=out, stderr=io.StringIO())
    data = json.loads(out.getvalue())
    support = data["estimate_differences"]["support"]
    assert support["method"] == "ppi++-independent" and support["delta"] == pytest.approx(difference.delta)
    assert support["ci95"] == pytest.approx([difference.low, difference.high])
    assert data["estimates"]["support"]["estimate"] == pytest.approx(b.estimate)

    out = io.StringIO()
    call_command("compare", "--run", "r", "--run", "b", "--estimate", "ppi", stdout=out)
    text = out.getvalue()
    assert "estimates (PPI++; judges j and j; independent samples: variances add)" in text
    assert (f"support         A {format_value(a.estimate, 4)}  B {format_value(b.estimate, 4)}  B − A "
            f"{format_delta(difference.delta, 4)} (95% interval {format_delta(difference.low, 4)} to "
            f"{format_delta(difference.high, 4)}; PPI++ estimates on 2 and 2 sampled answers)") in text
    out = io.StringIO()
    call_command("compare", "--run", "r", "--run", "b", "--estimate", "ppi", "--format", "json", stdout=out)
    assert json.loads(out.getvalue())["estimate_differences"]["support"]["delta"] == pytest.approx(difference.delta)


@pytest.mark.parametrize(("args", "message"), [
    (["--max-drop", "coverage=0.05", "--estimate", "ppi"], "--max-drop coverage with --estimate ppi: the estimates "
                                                           "cover support and supported_rate only"),
    (["--max-drop", "support=0.05", "--estimate", "ppi", "--reviewer", "alice"], "--estimate ppi: the estimates "
                                                                                 "use the humans' agreed labels"),
])
def test_gate_on_estimates_refuses_what_it_cannot_gate(pair, args, message):
    code, text = gate(*args)
    assert code == 1 and message in text


def test_gate_on_estimates_needs_both_runs_estimated(small):
    make_run(answers=4, name="b")
    code, text = gate("--max-drop", "support=0.05", "--estimate", "ppi")
    assert "--estimate ppi: run 'b' has no estimate: it needs a probability sample" in text
    with pytest.raises(CommandError, match="--estimate ppi gates on the runs' estimates: give --baseline"):
        call_command("score", "--project", "sampling", "--run", "b", "--estimate", "ppi")
    with pytest.raises(CommandError, match="--judge picks the judge of the estimates: give --estimate ppi too"):
        call_command("compare", "--run", "r", "--run", "b", "--judge", "j")


def test_the_claims_score_holds_give_the_same_estimates(small, expertqa_project):
    """``score`` hands its claims frame to the estimates (one read of the claims fewer):
    every figure is the one read from the database alone, on both fixtures."""
    from labeling.exports.frames import claims_frame
    from labeling.scores.estimates import run_estimates

    expert_run = Run.objects.get(project=expertqa_project, name="rr_sphere_gpt4")
    judge = ReviewerFactory(username="flip-judge", kind=ReviewerKind.MODEL)
    expert = dict(Label.objects.filter(claim__answer__run=expert_run, is_current=True)
                  .values_list("claim_id", "value"))
    for claim in Claim.objects.filter(answer__run=expert_run, citations__isnull=False).distinct():
        if claim.index != 2:  # the judge leaves every second claim unlabeled: predictions of 0.5
            judge_label(claim, judge, _verdict(expert.get(claim.pk), claim.index))
    sample_draw(run=expert_run, answers=15, seed=9)
    for run in (small, expert_run):
        chosen = pick_judge(run)
        alone, given = (run_estimates(run, judge=chosen, claims=frame)
                        for frame in (None, claims_frame(run)))
        assert given == alone
        assert alone.support.n_human_answers >= 2 and alone.support.defined


@pytest.mark.django_db
def test_estimate_reads_query_counts(django_assert_num_queries):
    """tests/counted_run.py's run: the judge labeled all six cited claims; sampled whole, two of its
    three answers are fully labeled (q02's claim 2 is disputed)."""
    world = counted_run()
    with django_assert_num_queries(1):
        assert run_judges(world.run) == [world.judge]
    # The per-answer sums, then the unanswerable questions' answers.
    with django_assert_num_queries(2):
        per_answer = _per_answer(world.run, world.judge)
    assert per_answer["support_units"].tolist() == [2, 2, 2]
    # Without a sample: the judge, the sample.
    with django_assert_num_queries(2):
        assert target_reached(world.run) is None
    sample_draw(run=world.run, answers=3, seed=7)
    # The sample, the per-answer sums and the unanswerable answers, the answer count, the
    # members, their human labels.
    with django_assert_num_queries(6):
        estimates = run_estimates(world.run, judge=world.judge)
    assert (estimates.judge, estimates.sample.size, estimates.sample.fully_labeled) == ("judge", 3, 2)
    # From a claims frame: the judge's sums and the sampled unanswerable answers instead.
    claims = claims_frame(world.run)
    with django_assert_num_queries(6):
        run_estimates(world.run, judge=world.judge, claims=claims)
    # pick_judge's one, then run_estimates' six.
    with django_assert_num_queries(7):
        target_reached(world.run)

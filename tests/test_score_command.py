"""``manage.py score`` on the seeds' fixtures and the real ExpertQA labels,
plus the CI gate."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from labeling.importers.load import run_import
from labeling.models import Claim, Label, Run
from tests.conftest import FIXTURES_DIR
from tests.factories import LabelFactory, ProjectFactory, ReviewerFactory


def score_json(*args: str, capsys) -> dict:
    call_command("score", *args, "--format", "json")
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def seeds(db):
    project = ProjectFactory(slug="demo")
    for name in ("seed_coverage_support.jsonl", "seed_citation_ids.jsonl", "seed_gold_references.jsonl"):
        run_import(project=project, source=FIXTURES_DIR / name)
    return project


def test_seed_coverage_support_example_gives_coverage_one_and_support_three_fifths(seeds, capsys):
    """Seed 'Measure Citation Coverage and Support': 5 claims, all cited, 3 SUPPORTED
    → coverage 5/5 = 1.0 exactly, support 3/5 = 0.6, gap 0.4."""
    result = score_json("--run", "seed-coverage-support", capsys=capsys)
    claims = result["claims"]
    assert (claims["claims"], claims["cited"], claims["labeled_cited"], claims["supported"]) == (5, 5, 5, 3)
    assert claims["coverage"] == 1.0 and claims["support"] == 0.6
    assert claims["gap"] == 0.4  # exact: 5/5 − 3/5 on fractions
    assert result["per_answer"][0]["question_id"] == "seed-support-1"


def test_seed_citation_ids_example_gives_precision_three_quarters_recall_three_fifths(seeds, capsys):
    """Seed 'Citation Precision and Recall': tp = 1+1+1+0 = 3, fp = 0+1+0+0 = 1,
    fn = 0+0+1+1 = 2 → precision 3/4, recall 3/5. The fifth answer is to an
    unanswerable question and cites nothing: abstention 1/1, its claim is not counted."""
    result = score_json("--run", "seed-citation-ids", capsys=capsys)
    ids = result["citation_ids"]
    assert (ids["tp"], ids["fp"], ids["fn"]) == (3, 1, 2)
    assert ids["precision"] == 0.75 and ids["recall"] == 0.6
    assert (ids["fabricated"], ids["fabricated_rate"]) == (0, 0.0)
    assert result["abstention"] == {"unanswerable": 1, "abstained": 1, "rate": 1.0}
    assert (result["claims"]["claims"], result["claims"]["cited"]) == (5, 4)


@pytest.mark.parametrize(
    ("run", "answers", "claims", "cited", "labeled_cited", "supported", "coverage", "support", "mean_cov", "mean_sup"),
    [
        ("post_hoc_gs_gpt4", 30, 181, 177, 175, 133, 0.9779, 0.7600, 0.9830, 0.7519),
        ("post_hoc_sphere_gpt4", 30, 180, 180, 171, 92, 1.0000, 0.5380, 1.0000, 0.4968),
        ("rr_gs_gpt4", 29, 162, 123, 123, 110, 0.7593, 0.8943, 0.7787, 0.8092),
        ("rr_sphere_gpt4", 29, 212, 159, 150, 113, 0.7500, 0.7533, 0.7737, 0.7172),
    ],
)
def test_expertqa_scores_match_the_published_per_run_figures(
    expertqa_project, capsys, run, answers, claims, cited, labeled_cited, supported, coverage, support, mean_cov,
    mean_sup,
):
    """The table of fixtures/README.md, computed from the experts' labels."""
    result = score_json("--run", run, "--project", "expertqa", capsys=capsys)
    c = result["claims"]
    assert result["answers"] == answers
    assert (c["claims"], c["cited"], c["labeled_cited"], c["supported"]) == (claims, cited, labeled_cited, supported)
    assert c["pending"] == cited - labeled_cited
    assert round(c["coverage"], 4) == coverage and round(c["support"], 4) == support
    assert round(c["mean_coverage"], 4) == mean_cov and round(c["mean_support"], 4) == mean_sup
    assert len(result["per_answer"]) == answers


def test_table_format_shows_fractions_beside_ratios(seeds, capsys):
    call_command("score", "--run", "seed-coverage-support", "--project", "demo")
    out = capsys.readouterr().out
    assert "5/5 = 1.00" in out and "3/5 = 0.60" in out


def test_disagreeing_reviewers_leave_the_claim_pending_unless_one_reviewer_is_chosen(seeds, capsys):
    """Claim 1 of the seed run: seed-reviewer says SUPPORTED; bob says UNSUPPORTED.
    Agreed labels: 2 supported of 4 labeled, 1 pending. Bob only: 1 labeled cited (0 supported)."""
    claim = Claim.objects.get(answer__run__name="seed-coverage-support", index=1)
    LabelFactory(claim=claim, reviewer=ReviewerFactory(username="bob"), value="UNSUPPORTED", justification="no")
    agreed = score_json("--run", "seed-coverage-support", capsys=capsys)
    assert (agreed["claims"]["supported"], agreed["claims"]["labeled_cited"], agreed["claims"]["pending"]) == (2, 4, 1)
    assert agreed["disagreements"] == 1
    bob = score_json("--run", "seed-coverage-support", "--reviewer", "bob", capsys=capsys)
    assert (bob["claims"]["labeled_cited"], bob["claims"]["supported"], bob["claims"]["pending"]) == (1, 0, 4)


def test_json_has_the_documented_keys(seeds, capsys):
    result = score_json("--run", "seed-citation-ids", capsys=capsys)
    assert {"run", "answers", "claims", "citation_ids", "abstention", "per_answer"} <= set(result)
    assert {"claims", "cited", "labeled_cited", "supported", "unsupported", "pending", "coverage", "support", "gap",
            "mean_coverage", "mean_support"} <= set(result["claims"])
    assert {"tp", "fp", "fn", "precision", "recall", "fabricated", "fabricated_rate"} <= set(result["citation_ids"])
    assert {"question_id", "claims", "cited", "supported", "coverage", "support"} <= set(result["per_answer"][0])


def test_unknown_run_lists_the_project_runs(seeds):
    with pytest.raises(CommandError, match="has no run 'nope'.*seed-coverage-support"):
        call_command("score", "--run", "nope")


def _copy_run(project, source_run: str, new_name: str) -> Run:
    run_import(project=project, source=FIXTURES_DIR / "seed_coverage_support.jsonl", run_name=new_name)
    return Run.objects.get(project=project, name=new_name)


def test_ci_gate_fails_naming_metric_and_numbers_when_support_drops(seeds, capsys):
    """Baseline support 3/5 = 0.6; candidate relabels one SUPPORTED claim → 2/5 = 0.4.
    Drop 0.2 > 0.05 → exit 1; coverage unchanged (1.0 → 1.0) passes."""
    candidate = _copy_run(seeds, "seed-coverage-support", "prompt-v2")
    label = Label.objects.get(claim__answer__run=candidate, claim__index=1)
    label.is_current = False
    label.save()
    LabelFactory(claim=label.claim, reviewer=label.reviewer, value="UNSUPPORTED", justification="weaker")
    with pytest.raises(CommandError) as failure:
        call_command("score", "--run", "prompt-v2", "--baseline", "seed-coverage-support",
                     "--max-drop", "support=0.05", "--max-drop", "coverage=0.05")
    assert failure.value.returncode == 1
    message = str(failure.value)
    expected = "support: prompt-v2 0.4000 vs baseline seed-coverage-support 0.6000: dropped 0.2000 > allowed 0.0500"
    verdict, failures = message.split(":\n", 1)
    assert verdict.endswith("(support may drop ≤ 0.05, coverage may drop ≤ 0.05)")
    assert failures == expected


def test_ci_gate_passes_when_within_the_allowed_drop(seeds, capsys):
    _copy_run(seeds, "seed-coverage-support", "prompt-v2")
    call_command("score", "--run", "prompt-v2", "--baseline", "seed-coverage-support",
                 "--max-drop", "support=0.05", "--max-drop", "coverage=0")
    assert "CI gate passed" in capsys.readouterr().err


def test_ci_gate_without_a_bound_is_refused_even_when_coverage_fell(seeds, capsys):
    """The candidate loses the citations of one of the five claims: coverage
    5/5 → 4/5, a drop of 0.2. Without --max-drop the gate used to print "CI
    gate passed"; now it refuses to run, naming the flag it needs."""
    candidate = _copy_run(seeds, "seed-coverage-support", "prompt-v2")
    Claim.objects.get(answer__run=candidate, index=1).citations.all().delete()
    assert score_json("--run", "prompt-v2", capsys=capsys)["claims"]["coverage"] == 0.8
    with pytest.raises(CommandError, match=r"--baseline needs at least one --max-drop METRIC=X") as failure:
        call_command("score", "--run", "prompt-v2", "--baseline", "seed-coverage-support")
    assert failure.value.returncode == 1
    assert "CI gate passed" not in capsys.readouterr().err


def test_ci_gate_verdict_names_the_bounds_it_applied(seeds, capsys):
    _copy_run(seeds, "seed-coverage-support", "prompt-v2")
    call_command("score", "--run", "prompt-v2", "--baseline", "seed-coverage-support",
                 "--max-drop", "support=0.05", "--max-drop", "coverage=0")
    assert ("CI gate passed: prompt-v2 vs baseline seed-coverage-support on the 1 question(s) both runs answered "
            "(support may drop ≤ 0.05, coverage may drop ≤ 0)") in capsys.readouterr().err


def test_ci_gate_rejects_unknown_metric(seeds):
    with pytest.raises(CommandError, match="--max-drop 'accuracy=0.1'"):
        call_command("score", "--run", "seed-coverage-support", "--baseline", "seed-citation-ids",
                     "--max-drop", "accuracy=0.1")


@pytest.mark.parametrize("method", ["substring", "ngram"])
def test_seed_gold_cases_give_the_seed_figures_per_answer_and_pooled(seeds, capsys, method):
    """Seed 'RAG Citation Quality', rebuilt: (a) right source and passage → 1/1 everywhere;
    (b) right source, wrong passage → context 0/1, source 1/1; (c) three citations, three
    references, one passage match, two of three sources → context 1/3, source 2/3.
    Pooled: context (1+0+1)/(1+1+3) = 2/5, source (1+1+2)/(1+1+3) = 4/5."""
    result = score_json("--run", "seed-gold-references", "--match-method", method, capsys=capsys)
    per_answer = {r["question_id"]: r for r in result["per_answer"]}
    a, b, c = per_answer["gold-a"], per_answer["gold-b"], per_answer["gold-c"]
    assert (a["context_precision"], a["context_recall"], a["source_precision"], a["source_recall"]) == (1.0,) * 4
    assert (b["context_precision"], b["context_recall"], b["source_precision"], b["source_recall"]) == (
        0.0, 0.0, 1.0, 1.0)
    assert (c["context_precision"], c["context_recall"]) == (1 / 3, 1 / 3)
    assert (c["source_precision"], c["source_recall"]) == (2 / 3, 2 / 3)
    context, source = result["context"], result["source"]
    assert (context["matched_citations"], context["citations"], context["precision"]) == (2, 5, 0.4)
    assert (context["matched_references"], context["references"], context["recall"]) == (2, 5, 0.4)
    assert (source["matched_cited_sources"], source["cited_sources"], source["precision"]) == (4, 5, 0.8)
    assert context["mean_precision"] == pytest.approx((1 + 0 + 1 / 3) / 3)


def test_unknown_match_method_is_a_clear_error(seeds):
    with pytest.raises(CommandError, match="unknown match method 'fuzzy'"):
        call_command("score", "--run", "seed-gold-references", "--match-method", "fuzzy")


def test_runs_without_gold_have_no_context_or_source_keys(seeds, capsys):
    result = score_json("--run", "seed-coverage-support", capsys=capsys)
    assert "context" not in result and "source" not in result


@pytest.mark.parametrize(("args", "message"), [
    (["--max-drop", "support=nan"], "must be a finite number"),
    (["--max-drop", "support=-0.1"], "cannot be negative"),
    (["--match-threshold", "-3"], "must be between 0 and 1"),
])
def test_gate_and_threshold_reject_values_that_would_pass_silently(seeds, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("score", "--run", "seed-coverage-support", "--baseline", "seed-citation-ids", *args)


def test_gate_against_the_run_itself_is_refused(seeds):
    with pytest.raises(CommandError, match="names the run itself"):
        call_command("score", "--run", "seed-coverage-support", "--baseline", "seed-coverage-support",
                     "--max-drop", "support=0")


def test_ci_gate_needs_shared_questions(seeds):
    with pytest.raises(CommandError, match="answer no question in common"):
        call_command("score", "--run", "seed-coverage-support", "--baseline", "seed-citation-ids",
                     "--max-drop", "support=0.05")


def test_ci_gate_compares_only_the_questions_both_runs_answered(seeds, capsys):
    """v2 answers the seed question (3/5 supported, as the baseline) and one extra question
    whose only claim is UNSUPPORTED: over all its answers v2's support is 3/6 = 0.5, a drop
    of 0.1; on the shared question it is 3/5, no drop, so the gate passes."""
    import io

    _copy_run(seeds, "seed-coverage-support", "v2")
    extra = {"question_id": "extra-q", "question": "Extra?", "run": "v2", "answer": "Made up [P1].",
             "passages": [{"id": "P1", "source": "m.md", "text": "Something else."}],
             "claims": [{"text": "Made up [P1].", "citations": [{"passage_id": "P1"}], "label": "UNSUPPORTED",
                         "justification": "P1 says something else", "reviewer": "seed-reviewer"}]}
    run_import(project=seeds, source=io.BytesIO((json.dumps(extra) + "\n").encode()))
    assert score_json("--run", "v2", capsys=capsys)["claims"]["support"] == 0.5
    call_command("score", "--run", "v2", "--baseline", "seed-coverage-support", "--max-drop", "support=0.05")
    assert "CI gate passed: v2 vs baseline seed-coverage-support on the 1 question(s) both runs answered" in (
        capsys.readouterr().err)


def test_table_says_how_many_pending_claims_are_disputed(seeds, capsys):
    claim = Claim.objects.get(answer__run__name="seed-coverage-support", index=1)
    LabelFactory(claim=claim, reviewer=ReviewerFactory(username="bob"), value="UNSUPPORTED", justification="no")
    call_command("score", "--run", "seed-coverage-support")
    assert "support is provisional: 1 cited claim(s) pending (0 unlabeled, 1 disputed)" in capsys.readouterr().out

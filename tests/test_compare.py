"""Run comparison through Django (SPEC §5): the ``compare`` command, the page
and its xlsx download, on the real ExpertQA answers imported twice.

The 118 answers of ``fixtures/expertqa_dev.jsonl`` are imported as run
``v1`` and again as ``v2``; then v2 is changed in five places picked from the
file (first match in file order, each in a different answer):

- X, the first SUPPORTED claim: its label becomes UNSUPPORTED (a flip);
- Y, the first UNSUPPORTED claim: its citations are deleted (cited → uncited);
- Z, the first UNCITED claim: it cites its answer's first passage and its
  label is removed (uncited → cited, now pending);
- W, the next SUPPORTED claim: deleted (removed), and a new uncited claim
  ``=HYPERLINK(...)`` is added to that answer (added);
- E, the next claim longer than 80 characters containing " the ": its first
  " the " becomes " this " (aligned by similarity, no change named).

Whole-file figures (``fixtures/README.md``, summing the four runs): 735
claims, 639 cited, 619 labeled cited, 448 SUPPORTED. So v1 has coverage
639/735 and support 448/619, and v2 has claims 735 − 1 (W) + 1 (new) = 735,
cited 639 − 1 (Y) + 1 (Z) − 1 (W) = 638, labeled cited 619 − 1 (Y) − 1 (W) =
617, SUPPORTED 448 − 1 (X) − 1 (W) = 446.
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass
from fractions import Fraction

import openpyxl
import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils.html import escape

from labeling.importers.load import project_for_import, run_import
from labeling.models import Answer, Citation, Claim, Label, LabelValue, Passage, Project, Question, Run
from labeling.tables.comparison import run_comparison, run_frames
from tests.counted_run import counted_run
from tests.factories import (
    AnswerFactory,
    CitationFactory,
    ClaimFactory,
    LabelFactory,
    ProjectFactory,
    ReviewerFactory,
    RunFactory,
)

NEW_CLAIM = '=HYPERLINK("http://evil.example","x") is a claim only v2 makes.'


@dataclass
class Picked:
    question_id: str
    index: int
    text: str
    sources: tuple[str, ...] = ()


@dataclass
class TwoRuns:
    project: Project
    v1: Run
    v2: Run
    x: Picked
    y: Picked
    z: Picked
    w: Picked
    e: Picked
    z_source: str


def _pick(lines: list[dict], used: set[str], test) -> Picked:
    for line in lines:
        if line["question_id"] in used:
            continue
        for index, claim in enumerate(line["claims"], start=1):
            if test(claim):
                used.add(line["question_id"])
                by_id = {p["id"]: p["source"] for p in line["passages"]}
                sources = tuple(sorted({by_id[c["passage_id"]] for c in claim["citations"]}))
                return Picked(line["question_id"], index, claim["text"], sources)
    raise AssertionError("no claim in the file passes the test")


def _claim(run: Run, picked: Picked) -> Claim:
    return Claim.objects.get(answer__run=run, answer__question__question_id=picked.question_id, index=picked.index)


@pytest.fixture
def two_runs(db, expertqa_path, reviewer) -> TwoRuns:
    project = project_for_import(slug="expertqa-compare")
    project.members.add(reviewer)
    run_import(project=project, source=expertqa_path, run_name="v1")
    run_import(project=project, source=expertqa_path, run_name="v2")
    lines = [json.loads(line) for line in expertqa_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    used: set[str] = set()
    x = _pick(lines, used, lambda c: c["label"] == "SUPPORTED")
    y = _pick(lines, used, lambda c: c["label"] == "UNSUPPORTED")
    z = _pick(lines, used, lambda c: c["label"] == "UNCITED")
    w = _pick(lines, used, lambda c: c["label"] == "SUPPORTED")
    e = _pick(lines, used, lambda c: len(c["text"]) > 80 and " the " in c["text"])
    v1, v2 = Run.objects.get(project=project, name="v1"), Run.objects.get(project=project, name="v2")

    Label.objects.filter(claim=_claim(v2, x), is_current=True).update(value=LabelValue.UNSUPPORTED)
    _claim(v2, y).citations.all().delete()
    z_claim = _claim(v2, z)
    passage = Passage.objects.filter(answer=z_claim.answer).order_by("position").first()
    Citation.objects.create(claim=z_claim, passage=passage, position=0, cited_id=passage.passage_id)
    z_claim.labels.all().delete()
    w_claim = _claim(v2, w)
    answer = w_claim.answer
    w_claim.delete()
    Claim.objects.create(answer=answer, index=99, text=NEW_CLAIM)
    e_claim = _claim(v2, e)
    e_claim.text = e_claim.text.replace(" the ", " this ", 1)
    e_claim.save()
    return TwoRuns(project, v1, v2, x, y, z, w, e, passage.source)


def test_comparison_of_real_runs_names_each_change(two_runs):
    result = run_comparison(run_a=two_runs.v1, run_b=two_runs.v2).result
    flips = result.label_flips
    named = list(zip(flips["question_id"], flips["claim_a"], flips["label_a"], flips["label_b"], strict=True))
    assert named == sorted([
        (two_runs.x.question_id, two_runs.x.text, "SUPPORTED", "UNSUPPORTED"),
        (two_runs.y.question_id, two_runs.y.text, "UNSUPPORTED", "UNCITED"),
    ])
    changes = result.citation_changes.set_index("question_id")
    assert changes.loc[two_runs.y.question_id, "change"] == "lost"
    assert changes.loc[two_runs.y.question_id, "sources_lost"] == two_runs.y.sources
    assert changes.loc[two_runs.z.question_id, "change"] == "gained"
    assert changes.loc[two_runs.z.question_id, "sources_gained"] == (two_runs.z_source,)
    assert len(changes) == 2
    assert result.removed[["question_id", "claim_index_a", "claim_a"]].values.tolist() == [
        [two_runs.w.question_id, two_runs.w.index, two_runs.w.text]
    ]
    assert result.added[["question_id", "claim_index_b", "claim_b"]].values.tolist() == [
        [two_runs.w.question_id, 99, NEW_CLAIM]
    ]
    fuzzy = result.alignment[result.alignment["match"] == "fuzzy"]
    assert fuzzy[["question_id", "claim_a"]].values.tolist() == [[two_runs.e.question_id, two_runs.e.text]]
    assert result.counts() == {
        "aligned": 734, "exact": 733, "fuzzy": 1, "label_flips": 2, "citation_changes": 2, "added": 1, "removed": 1,
    }


def test_comparison_of_real_runs_has_exact_deltas(two_runs):
    """Coverage 639/735 → 638/735: delta −1/735. Support 448/619 → 446/617:
    delta (446·619 − 448·617) / (617·619) = (276074 − 276416) / 381923 = −342/381923."""
    result = run_comparison(run_a=two_runs.v1, run_b=two_runs.v2).result
    coverage, support = result.metric("coverage"), result.metric("support")
    assert (coverage.a_text, coverage.b_text) == ("639/735 = 0.87", "638/735 = 0.87")
    assert coverage.delta == -1 / 735
    # 639 − 619 = 20 cited claims pending in v1; 638 − 617 = 21 in v2 (Z lost its label)
    assert (support.a_text, support.b_text) == ("448/619 = 0.72 (20 pending)", "446/617 = 0.72 (21 pending)")
    assert support.delta == float(Fraction(-342, 381923))
    gap = result.metric("gap")
    assert gap.delta == float(Fraction(638, 735) - Fraction(446, 617) - Fraction(639, 735) + Fraction(448, 619))
    assert len(result.shared_questions) == 118 and result.only_a == [] and result.only_b == []
    per_question = result.per_question.set_index("question_id")
    assert per_question.loc[two_runs.x.question_id, "label_flips"] == 1
    assert per_question.loc[two_runs.w.question_id, ["added", "removed"]].tolist() == [1, 1]


def test_only_questions_both_runs_answered_count(two_runs):
    """Deleting v2's answer to Y's question leaves that question out of both
    sides: Y's flip and lost citation disappear, and v1's coverage loses that
    answer's claims."""
    Answer.objects.filter(run=two_runs.v2, question__question_id=two_runs.y.question_id).delete()
    dropped = Claim.objects.filter(answer__run=two_runs.v1, answer__question__question_id=two_runs.y.question_id)
    dropped_cited = dropped.filter(citations__isnull=False).distinct().count()
    result = run_comparison(run_a=two_runs.v1, run_b=two_runs.v2).result
    assert result.only_a == [two_runs.y.question_id]
    assert len(result.shared_questions) == 117
    assert result.metric("coverage").a_text.startswith(f"{639 - dropped_cited}/{735 - dropped.count()} = ")
    assert result.label_flips["claim_a"].tolist() == [two_runs.x.text]
    assert result.citation_changes["change"].tolist() == ["gained"]


def test_compare_command_json(two_runs):
    out = io.StringIO()
    call_command("compare", "--run", "v1", "--run", "v2", "--format", "json", stdout=out)
    data = json.loads(out.getvalue())
    assert set(data) == {"project", "run_a", "run_b", "threshold", "questions", "has_gold", "summary", "claims",
                         "per_question", "label_flips", "citation_changes", "added", "removed"}
    assert (data["project"], data["run_a"], data["run_b"], data["threshold"]) == ("expertqa-compare", "v1", "v2", 0.85)
    assert data["summary"]["coverage"]["delta"] == -1 / 735
    assert set(data["summary"]) == {"coverage", "support", "gap", "supported_rate", "mean_coverage", "mean_support"}
    assert data["claims"]["label_flips"] == 2
    assert len(data["per_question"]) == 118
    assert [row["claim_b"] for row in data["added"]] == [NEW_CLAIM]
    assert {row["change"] for row in data["citation_changes"]} == {"lost", "gained"}


def test_compare_command_table_names_claims(two_runs):
    out = io.StringIO()
    call_command("compare", "--run", "v1", "--run", "v2", "--project", "expertqa-compare", stdout=out)
    text = out.getvalue()
    assert "shared questions 118 (only A: 0, only B: 0)" in text
    assert f"SUPPORTED -> UNSUPPORTED: {two_runs.x.text}" in text
    assert f"lost: {two_runs.y.text}" in text
    assert f"#99 {NEW_CLAIM}" in text
    assert f"#{two_runs.w.index} {two_runs.w.text}" in text
    assert "Coverage" in text and "639/735 = 0.87" in text and "−0.001" in text


def test_compare_command_threshold_changes_alignment(two_runs):
    """E's edit keeps its similarity below 1: at threshold 1 it no longer aligns
    and shows as one claim removed and one added."""
    out = io.StringIO()
    call_command("compare", "--run", "v1", "--run", "v2", "--format", "json", "--threshold", "1", stdout=out)
    claims = json.loads(out.getvalue())["claims"]
    assert (claims["fuzzy"], claims["added"], claims["removed"]) == (0, 2, 2)


def test_compare_command_xlsx_writes_text_not_formulas(two_runs, tmp_path):
    path = tmp_path / "cmp.xlsx"
    call_command("compare", "--run", "v1", "--run", "v2", "--format", "xlsx", "-o", str(path), stdout=io.StringIO(),
                 stderr=io.StringIO())
    workbook = openpyxl.load_workbook(path)
    assert workbook.sheetnames == ["Summary", "Per question", "Label flips", "Citation changes", "Added claims",
                                   "Removed claims"]
    summary = workbook["Summary"]
    assert [cell.value for cell in summary[1]][:4] == ["metric", "A: v1", "B: v2", "delta (B − A)"]
    # xlsx keeps numbers to about 16 significant digits (Excel shows 15)
    assert [cell.value for cell in summary[2]] == ["Coverage", pytest.approx(639 / 735, rel=1e-15),
                                                   pytest.approx(638 / 735, rel=1e-15),
                                                   pytest.approx(-1 / 735, rel=1e-15), "639/735 = 0.87",
                                                   "638/735 = 0.87"]
    added = workbook["Added claims"]
    assert [cell.value for cell in added[1]] == ["question_id", "claim_index_b", "claim_b", "label_b", "n_citations_b"]
    cell = added["C2"]
    assert (cell.value, cell.data_type) == (NEW_CLAIM, "s")
    assert workbook["Per question"].max_row == 1 + 118
    assert workbook["Label flips"].max_row == 1 + 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--run", "v1"], "exactly two runs"),
        (["--run", "v1", "--run", "nope"], "no run 'nope'"),
        (["--run", "v1", "--run", "v1"], "two different runs"),
        (["--run", "v1", "--run", "v2", "--format", "xlsx"], "needs -o"),
        (["--run", "v1", "--run", "v2", "--threshold", "0"], "threshold"),
        (["--run", "v1", "--run", "v2", "--project", "nope"], "no project 'nope'"),
    ],
)
def test_compare_command_rejects_bad_input(two_runs, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("compare", *args, stdout=io.StringIO())


def test_compare_command_asks_for_project_when_names_repeat(two_runs):
    other = ProjectFactory(slug="other")
    RunFactory(project=other, name="v1")
    RunFactory(project=other, name="v2")
    with pytest.raises(CommandError, match="several projects"):
        call_command("compare", "--run", "v1", "--run", "v2", stdout=io.StringIO())


def _login(client, reviewer):
    client.force_login(reviewer)


def test_comparison_page_names_flips_changes_and_claims_with_links(client, two_runs, reviewer):
    _login(client, reviewer)
    url = reverse("run_compare", kwargs={"project_slug": "expertqa-compare"})
    response = client.get(url, {"a": "v1", "b": "v2", "threshold": "0.85"})
    assert response.status_code == 200
    html = response.content.decode()
    assert "<html" in html
    for picked in (two_runs.x, two_runs.y, two_runs.w):
        assert escape(picked.text) in html
    assert escape(NEW_CLAIM) in html
    x_answer = Claim.objects.get(answer__run=two_runs.v2, answer__question__question_id=two_runs.x.question_id,
                                 index=two_runs.x.index).answer_id
    review = reverse("answer_review", kwargs={"project_slug": "expertqa-compare", "run_name": "v2",
                                              "answer_id": x_answer})
    assert f'href="{review}"' in html
    assert "639/735 = 0.87" in html and "−0.001" in html
    assert "cited → uncited" in html and "uncited → cited" in html
    # both scatters, with the seed's four quadrants
    assert html.count('class="chart scatter"') == 2
    assert html.count("cites everything, verifies nothing") == 2
    assert f'{reverse("run_compare_xlsx", kwargs={"project_slug": "expertqa-compare"})}?a=v1' in html


def test_comparison_page_escapes_answer_text(client, db, reviewer):
    project = ProjectFactory(slug="esc")
    project.members.add(reviewer)
    question = Question.objects.create(project=project, question_id="<q>", text="?")
    for name, text in (("a", "<script>alert(1)</script>"), ("b", "<img src=x onerror=alert(2)>")):
        run = RunFactory(project=project, name=name)
        answer = Answer.objects.create(run=run, question=question, question_key=question.question_id,
                                       text=text, content_hash=name * 64)
        Claim.objects.create(answer=answer, index=1, text=text)
    _login(client, reviewer)
    html = client.get(reverse("run_compare", kwargs={"project_slug": "esc"}), {"a": "a", "b": "b",
                                                                               "threshold": "0.85"}).content.decode()
    assert "<script>alert(1)" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(2)&gt;" in html


def test_comparison_page_htmx_returns_the_fragment(client, two_runs, reviewer):
    _login(client, reviewer)
    response = client.get(reverse("run_compare", kwargs={"project_slug": "expertqa-compare"}),
                          {"a": "v1", "b": "v2", "threshold": "0.85"}, headers={"HX-Request": "true"})
    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in html
    assert html.lstrip().startswith('<div id="comparison-results"')
    assert escape(two_runs.x.text) in html


def test_comparison_page_preselects_runs_and_rejects_the_same_run(client, two_runs, reviewer):
    _login(client, reviewer)
    url = reverse("run_compare", kwargs={"project_slug": "expertqa-compare"})
    html = client.get(url).content.decode()
    assert '<option value="v1" selected>v1</option>' in html
    assert '<option value="v2" selected>v2</option>' in html
    assert "Choose run A and run B, then Compare." in html
    # the run page's Compare button names B; A is the run before it (or the next one for the oldest)
    html = client.get(url, {"b": "v1"}).content.decode()
    assert html.index('<option value="v2" selected>') < html.index('<option value="v1" selected>')
    html = client.get(url, {"a": "v2", "b": "v2", "threshold": "0.85"}).content.decode()
    assert "Choose two different runs." in html
    assert 'class="summary-deltas"' not in html


def test_comparison_page_is_404_for_non_members(client, two_runs):
    _login(client, ReviewerFactory(username="mallory"))
    url = reverse("run_compare", kwargs={"project_slug": "expertqa-compare"})
    assert client.get(url, {"a": "v1", "b": "v2"}).status_code == 404
    assert client.get(reverse("run_compare_xlsx", kwargs={"project_slug": "expertqa-compare"}),
                      {"a": "v1", "b": "v2", "threshold": "0.85"}).status_code == 404


def test_comparison_xlsx_download(client, two_runs, reviewer):
    _login(client, reviewer)
    response = client.get(reverse("run_compare_xlsx", kwargs={"project_slug": "expertqa-compare"}),
                          {"a": "v1", "b": "v2", "threshold": "0.85"})
    assert response.status_code == 200
    assert response["Content-Type"] == "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    assert response["Content-Disposition"] == 'attachment; filename="expertqa-compare-v1-vs-v2.xlsx"'
    workbook = openpyxl.load_workbook(io.BytesIO(response.content))
    flips = workbook["Label flips"]
    assert sorted((row[3].value, row[6].value) for row in flips.iter_rows(min_row=2)) == [
        ("SUPPORTED", "UNSUPPORTED"), ("UNSUPPORTED", "UNCITED"),
    ]
    assert workbook["Added claims"]["C2"].data_type == "s"


def _project_with_answers(n: int) -> Project:
    """Two runs answering the same ``n`` questions, each answer with 3 claims: one
    cited and SUPPORTED, one cited and pending, one uncited. Run b rewords
    claim 2 and flips claim 1 to UNSUPPORTED."""
    project = ProjectFactory(slug=f"budget-{n}")
    author = ReviewerFactory(username=f"author-{n}")
    questions = Question.objects.bulk_create(
        Question(project=project, question_id=f"q{i:04d}", text=f"Question {i}?") for i in range(n)
    )
    for name in ("a", "b"):
        run = RunFactory(project=project, name=name)
        answers = Answer.objects.bulk_create(
            Answer(run=run, question=q, question_key=q.question_id, text="An answer.",
                   content_hash=f"{name}{q.question_id}".ljust(64, "0"))
            for q in questions
        )
        passages = Passage.objects.bulk_create(
            Passage(answer=a, passage_id="P1", position=0, source=f"doc-{a.question_id}.pdf", text="Text.")
            for a in answers
        )
        claims = Claim.objects.bulk_create(
            Claim(answer=a, index=index, text=text)
            for a in answers
            for index, text in ((1, "Cited and supported [P1]."),
                                (2, "Cited and pending [P1]." if name == "a" else "Cited and still pending [P1]."),
                                (3, "Uncited."))
        )
        by_answer_passage = {p.answer_id: p for p in passages}
        Citation.objects.bulk_create(
            Citation(claim=c, passage=by_answer_passage[c.answer_id], position=0, cited_id="P1")
            for c in claims if c.index in (1, 2)
        )
        Label.objects.bulk_create(
            Label(claim=c, reviewer=author, value="SUPPORTED" if name == "a" else "UNSUPPORTED", claim_revision=1)
            for c in claims if c.index == 1
        )
    return project


@pytest.mark.parametrize("n", [5, 500])
def test_comparison_page_query_budget_does_not_grow_with_answers(client, reviewer, django_assert_max_num_queries, n):
    project = _project_with_answers(n)
    project.members.add(reviewer)
    _login(client, reviewer)
    # 1 session, 1 user, 1 project, 1 runs for the form, then 13 per run (claims version,
    # claims, their texts and factual marks, answers for abstention, questions with gold, the label state,
    # labels and their reviewers, adjudications, citations, questions again, gold ids, citation judgments)
    # = 30, with 5 answers per run as with 500.
    with django_assert_max_num_queries(30):
        response = client.get(reverse("run_compare", kwargs={"project_slug": project.slug}),
                              {"a": "a", "b": "b", "threshold": "0.85"})
    assert response.status_code == 200
    assert response.context["counts"] == {
        "aligned": 3 * n, "exact": 2 * n, "fuzzy": n, "label_flips": n, "citation_changes": 0, "added": 0,
        "removed": 0,
    }
    # the page lists at most 200 flips; the rest are in the xlsx
    assert len(response.context["label_flips"]) == min(n, 200)


def _runs_with_questions(slug: str, questions_a: list[str], questions_b: list[str]) -> Project:
    """Runs ``a`` and ``b`` of project ``slug``, one answer per listed question, each
    answer with one cited SUPPORTED claim."""
    project = ProjectFactory(slug=slug)
    author = ReviewerFactory(username=f"author-{slug}")
    questions = {qid: Question.objects.create(project=project, question_id=qid, text=f"{qid}?")
                 for qid in dict.fromkeys(questions_a + questions_b)}
    for name, qids in (("a", questions_a), ("b", questions_b)):
        run = RunFactory(project=project, name=name)
        for qid in qids:
            answer = AnswerFactory(run=run, question=questions[qid])
            claim = ClaimFactory(answer=answer, index=1, text=f"{qid} is cited.")
            CitationFactory(claim=claim)
            LabelFactory(claim=claim, reviewer=author)
    return project


def test_comparison_page_says_there_is_nothing_to_compare_without_a_shared_question(client, db, reviewer):
    """A answered q1, B answered q2 and q3: no question in common. One message, no
    empty tables that would read as "nothing changed", no empty scatters."""
    project = _runs_with_questions("disjoint", ["q1"], ["q2", "q3"])
    project.members.add(reviewer)
    _login(client, reviewer)
    query = {"a": "a", "b": "b", "threshold": "0.85"}

    html = client.get(reverse("run_compare", kwargs={"project_slug": "disjoint"}), query).content.decode()

    message = ("Runs A and B answer no question in common: nothing to compare (runs are compared on the "
               "questions both answered). A (a) answered 1 question, B (b) 2 questions.")
    assert html.count(message) == 1
    for absent in ("Every claim of A has a partner in B", "No claim of B is new", 'class="summary-deltas"',
                   'class="chart scatter"', "<svg", "Fix the choices above", 'class="form-errors"'):
        assert absent not in html
    fragment = client.get(reverse("run_compare", kwargs={"project_slug": "disjoint"}), query,
                          headers={"HX-Request": "true"}).content.decode()
    assert "<html" not in fragment and message in fragment
    download = client.get(reverse("run_compare_xlsx", kwargs={"project_slug": "disjoint"}), query)
    assert download.status_code == 400
    assert message in download.content.decode()


def test_compare_command_fails_when_runs_share_no_question(db):
    _runs_with_questions("disjoint", ["q1"], ["q2", "q3"])

    with pytest.raises(CommandError, match=r"^Runs A and B answer no question in common: nothing to compare "
                                           r"\(runs are compared on the questions both answered\)\. "
                                           r"A \(a\) answered 1 question, B \(b\) 2 questions\.$"):
        call_command("compare", "--run", "a", "--run", "b", stdout=io.StringIO())


def test_comparison_page_writes_every_negative_number_with_one_minus_sign(client, db, reviewer):
    """q1 in A: one cited SUPPORTED claim and one uncited claim, so coverage 1/2,
    support 1/1, gap 0.5 − 1 = −0.50. In B both claims are cited, one SUPPORTED and
    one UNSUPPORTED: coverage 2/2, support 1/2, gap +0.50; deltas +0.50, −0.50, +1.00.
    The page shows "−" (U+2212) for all of them; the JSON keeps "-" and numbers."""
    project = ProjectFactory(slug="signs")
    project.members.add(reviewer)
    author = ReviewerFactory(username="author-signs")
    question = Question.objects.create(project=project, question_id="q1", text="q1?")
    for name in ("a", "b"):
        answer = AnswerFactory(run=RunFactory(project=project, name=name), question=question)
        supported = ClaimFactory(answer=answer, index=1, text="Supported claim.")
        CitationFactory(claim=supported)
        LabelFactory(claim=supported, reviewer=author)
        other = ClaimFactory(answer=answer, index=2, text="Other claim.")
        if name == "b":
            CitationFactory(claim=other)
            LabelFactory(claim=other, reviewer=author, value=LabelValue.UNSUPPORTED, justification="Not there.")
    _login(client, reviewer)

    html = client.get(reverse("run_compare", kwargs={"project_slug": "signs"}),
                      {"a": "a", "b": "b", "threshold": "0.85"}).content.decode()

    assert '<th scope="row">Gap (coverage − support)</th><td class="num">−0.50</td><td class="num">0.50</td>' in html
    assert '<td class="num">−0.50</td><td class="num">0.50</td><td class="num delta changed">+1.00</td>' in html
    assert '<td class="num delta worse">−0.50</td>' in html
    assert not re.search(r">-\d", html)
    out = io.StringIO()
    call_command("compare", "--run", "a", "--run", "b", "--project", "signs", "--format", "json", stdout=out)
    gap = json.loads(out.getvalue())["summary"]["gap"]
    assert (gap["a"], gap["a_text"], gap["delta"]) == (-0.5, "-0.50", 1.0)


def test_compare_link_without_threshold_uses_the_default(client, db):
    """?a=…&b=… alone (a hand-written link) compares at the default threshold, no form error."""
    from labeling.views.compare import DEFAULT_THRESHOLD
    from tests.conftest import FIXTURES_DIR
    from tests.factories import ReviewerFactory

    project = project_for_import(slug="link")
    run_import(project=project, source=FIXTURES_DIR / "seed_coverage_support.jsonl")
    run_import(project=project, source=FIXTURES_DIR / "seed_coverage_support_v2.jsonl")
    viewer = ReviewerFactory(username="viewer")
    project.members.add(viewer)
    client.force_login(viewer)
    response = client.get(reverse("run_compare", kwargs={"project_slug": "link"}),
                          {"a": "seed-coverage-support", "b": "seed-coverage-support-v2"})
    assert response.context["form"].errors == {}
    assert response.context["form"].cleaned_data["threshold"] == DEFAULT_THRESHOLD
    # The v2 fixture turns claim 5 (UNSUPPORTED) into an uncited claim: one label flip.
    assert len(response.context["label_flips"]) == 1


def test_comparison_xlsx_keeps_control_characters_long_text_and_formulas_as_safe_text(client, reviewer):
    """Run b rewords claim 2 of q0000 (so it is added on b and removed on a):
    with a vertical tab it used to end the download in openpyxl's
    IllegalCharacterError (a 500). The same text function as the label table
    workbook now writes every cell: the vertical tab is dropped, a
    40,000-character claim is cut to 32,767 characters ending in "…", and a
    claim starting with "-" is a text cell."""
    project = _project_with_answers(1)
    project.members.add(reviewer)
    b = Run.objects.get(project=project, name="b")
    Claim.objects.filter(answer__run=b, index=2).update(text="line one\x0bline two [P1] " + "x" * 40_000)
    Claim.objects.filter(answer__run=b, index=3).update(text="-1 is negative\x07.")
    _login(client, reviewer)
    response = client.get(reverse("run_compare_xlsx", kwargs={"project_slug": project.slug}),
                          {"a": "a", "b": "b", "threshold": "0.85"})
    assert response.status_code == 200
    added = openpyxl.load_workbook(io.BytesIO(response.content))["Added claims"]
    texts = {row[2].value: row[2].data_type for row in added.iter_rows(min_row=2)}
    long_text = next(text for text in texts if text.startswith("line one"))
    assert long_text.startswith("line oneline two [P1] xxx")
    assert len(long_text) == 32_767 and long_text.endswith("x…")
    assert texts["-1 is negative."] == "s"


@pytest.mark.django_db
def test_comparison_query_counts(django_assert_num_queries):
    """tests/counted_run.py's run against a run answering the same three questions with one
    cited claim each."""
    world = counted_run()
    other = RunFactory(project=world.project, name="r2")
    for answer in Answer.objects.filter(run=world.run).select_related("question"):
        copy = AnswerFactory(run=other, question=answer.question, text="One.")
        claim = ClaimFactory(answer=copy, index=1, text="One.")
        CitationFactory(claim=claim, passage=Passage.objects.create(answer=copy, passage_id="P1", position=0,
                                                                   text="One."), position=0, cited_id="P1")
    # resolved_claims_frame's nine (claims version, claims, their texts and factual marks, answers,
    # questions with gold, the label state, labels and their reviewers, adjudications), the citations, the
    # questions again (answers_frame: the answers cached), the judgments, the gold ids.
    with django_assert_num_queries(13):
        frames = run_frames(world.run)
    assert (len(frames.claims), len(frames.citations), len(frames.gold_ids)) == (9, 6, 1)
    # run_frames of each run: r1's claims and answers cached (labeling.exports.structure), r2's not;
    # r2 has no label, so no reviewer to read (each run's label state is one query more).
    with django_assert_num_queries(11 + 11):
        comparison = run_comparison(run_a=world.run, run_b=other)
    assert comparison.result.shared_questions == ["q01", "q02", "q03"]

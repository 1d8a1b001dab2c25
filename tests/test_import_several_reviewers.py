"""Several reviewers per claim in one file (SPEC §6): answers files
(JSON Lines ``labels`` lists; CSV/XLSX one row per claim and reviewer) and
label tables imported with ``--keep-reviewers`` (one row per claim and
reviewer). Imported reviewers are kind ``external``; a reviewer named twice
for one claim is an error naming line (row) and field; nothing is written
then."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime

import krippendorff
import numpy as np
import pytest
from openpyxl import Workbook

from labeling.importers.label_table import read_label_table
from labeling.importers.load import project_for_import, run_import
from labeling.importers.records import ImportFailed
from labeling.models import CitationJudgment, Claim, Label, Reviewer, ReviewerKind, Run
from labeling.tables.label_import import LabelImportError, label_table_import_apply
from labeling.team.agreement import run_agreement
from tests.factories import ReviewerFactory
from tests.tables import row_counts

pytestmark = pytest.mark.django_db

PASSAGES = [{"id": "P1", "source": "manual.md", "text": "The client retries five times."},
            {"id": "P2", "source": "manual.md", "text": "Runs are logged locally."}]


def jsonl(*rows) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def answer(question_id: str, claims: list[dict]) -> dict:
    return {"question_id": question_id, "question": f"Question {question_id}?", "run": "r1",
            "answer": " ".join(claim["text"] for claim in claims), "passages": PASSAGES, "claims": claims}


def claim(text: str, *labels: tuple[str, str], cited: bool = True, **extra) -> dict:
    return {"text": text, "citations": [{"passage_id": "P1"}] if cited else [],
            "labels": [{"reviewer": who, "label": value, "justification": "" if value == "SUPPORTED" else "weak"}
                       for who, value in labels], **extra}


def issues_of(failure: pytest.ExceptionInfo) -> list[tuple[int, str, str]]:
    return [(issue.line, issue.field, issue.reason) for issue in failure.value.issues]


def current_labels(run: Run) -> list[tuple[str, int, str, str]]:
    return sorted(Label.objects.filter(claim__answer__run=run, is_current=True).values_list(
        "claim__answer__question_key", "claim__index", "reviewer__username", "value"))


# --------------------------------------------------------------- JSON Lines


def test_a_labels_list_gives_each_reviewer_their_own_label():
    """Claim 1: ann-a, ann-b, ann-c; claim 2: ann-a only → 4 labels under 3 external reviewers."""
    project = project_for_import(slug="multi")
    data = jsonl(answer("q1", [
        claim("It retries five times.", ("ann-a", "SUPPORTED"), ("ann-b", "SUPPORTED"), ("ann-c", "UNSUPPORTED")),
        claim("It logs runs.", ("ann-a", "UNSUPPORTED")),
    ]))
    report = run_import(project=project, source=data)
    run = Run.objects.get(project=project, name="r1")
    assert report.labels_created == 4
    assert current_labels(run) == [("q1", 1, "ann-a", "SUPPORTED"), ("q1", 1, "ann-b", "SUPPORTED"),
                                   ("q1", 1, "ann-c", "UNSUPPORTED"), ("q1", 2, "ann-a", "UNSUPPORTED")]
    assert set(Reviewer.objects.filter(username__startswith="ann-").values_list("username", "kind")) == {
        ("ann-a", ReviewerKind.EXTERNAL), ("ann-b", ReviewerKind.EXTERNAL), ("ann-c", ReviewerKind.EXTERNAL)}
    assert not any(r.has_usable_password() for r in Reviewer.objects.filter(username__startswith="ann-"))


def test_labeled_at_becomes_the_time_of_the_label():
    project = project_for_import(slug="multi")
    line = answer("q1", [claim("It retries five times.", ("ann-a", "SUPPORTED"), ("ann-b", "SUPPORTED"))])
    line["claims"][0]["labels"][0]["labeled_at"] = "2023-05-01T10:30:00Z"
    line["claims"][0]["labels"][1]["labeled_at"] = "2023-05-02T08:00:00"  # no offset: UTC, as exports write
    run_import(project=project, source=jsonl(line))
    times = dict(Label.objects.values_list("reviewer__username", "created_at"))
    assert times["ann-a"] == datetime(2023, 5, 1, 10, 30, tzinfo=UTC)
    assert times["ann-b"] == datetime(2023, 5, 2, 8, 0, tzinfo=UTC)


def test_alpha_over_imported_annotators_matches_krippendorff():
    """Three annotators on four cited claims (S = SUPPORTED, U = UNSUPPORTED):
    c1 S S S, c2 S S U, c3 U U U, c4 S U (ann-c gave none). The run's alpha is
    the krippendorff package's on the same reliability matrix."""
    project = project_for_import(slug="multi")
    patterns = [("S", "S", "S"), ("S", "S", "U"), ("U", "U", "U"), ("S", "U", None)]
    names = {"S": "SUPPORTED", "U": "UNSUPPORTED"}
    claims = [claim(f"Claim {k}.", *[(f"ann-{who}", names[v]) for who, v in zip("abc", pattern, strict=True) if v])
              for k, pattern in enumerate(patterns)]
    run_import(project=project, source=jsonl(answer("q1", claims)))
    result = run_agreement(run=Run.objects.get(project=project, name="r1"))
    matrix = np.array([[{"S": 1.0, "U": 2.0, None: np.nan}[p[k]] for p in patterns] for k in range(3)])
    assert result.overall.alpha.value == pytest.approx(krippendorff.alpha(matrix, level_of_measurement="nominal"),
                                                       abs=1e-12)
    assert result.overall.alpha.n == 4


def test_each_reviewer_judges_the_citation_in_a_judgments_list():
    project = project_for_import(slug="multi")
    line = answer("q1", [claim("It retries five times.", ("ann-a", "SUPPORTED"), ("ann-b", "UNSUPPORTED"))])
    line["claims"][0]["citations"][0]["judgments"] = [
        {"reviewer": "ann-a", "judgment": "FULL", "evidence": "retries five times"},
        {"reviewer": "ann-b", "judgment": "partial"}]
    report = run_import(project=project, source=jsonl(line))
    assert report.judgments_created == 2
    assert sorted(CitationJudgment.objects.values_list("reviewer__username", "judgment", "evidence")) == [
        ("ann-a", "FULL", "retries five times"), ("ann-b", "PARTIAL", "")]


def test_reimporting_several_reviewers_changes_nothing():
    project = project_for_import(slug="multi")
    data = jsonl(answer("q1", [claim("It retries five times.", ("ann-a", "SUPPORTED"), ("ann-b", "SUPPORTED"))]))
    run_import(project=project, source=data)
    before = row_counts()
    report = run_import(project=project, source=data)
    assert (report.answers_unchanged, report.labels_created) == (1, 0)
    assert row_counts() | {"labeling.AuditEvent": 0} == before | {"labeling.AuditEvent": 0}


def test_one_reviewer_twice_on_a_claim_is_refused_and_nothing_is_written():
    project = project_for_import(slug="multi")
    before = row_counts()
    data = jsonl(
        answer("q1", [claim("It retries five times.", ("ann-a", "SUPPORTED"), ("ann-b", "SUPPORTED"))]),
        answer("q2", [claim("It logs runs.", ("ann-a", "SUPPORTED"), ("ann-a", "UNSUPPORTED"))]),
    )
    with pytest.raises(ImportFailed) as failure:
        run_import(project=project, source=data)
    assert issues_of(failure) == [(2, "claims[0].labels[1].reviewer",
                                   "'ann-a' already labels this claim in labels[0]: one label per reviewer and claim")]
    assert row_counts() == before


@pytest.mark.parametrize(("change", "expected"), [
    ({"label": "SUPPORTED"}, ("claims[0].labels", "give the claim's labels either as label (one reviewer) or as "
                                                  "labels (a list, one entry per reviewer), not both")),
    ({"labels": {"reviewer": "x"}}, ("claims[0].labels",
                                     "must be a list of {reviewer, label, justification, labeled_at}")),
    ({"labels": [{"reviewer": "x", "label": "MAYBE"}]},
     ("claims[0].labels[0].label", "unknown label 'MAYBE' (expected one of SUPPORTED, UNSUPPORTED, UNCITED or "
                                   "null)")),
    ({"labels": [{"reviewer": "x"}]}, ("claims[0].labels[0].label",
                                       "missing (an entry of labels is one reviewer's label)")),
    ({"labels": [{"reviewer": "x", "label": "SUPPORTED", "labeled_at": "yesterday"}]},
     ("claims[0].labels[0].labeled_at", "expected a time like 2025-01-31T09:15:00Z, got 'yesterday'")),
    ({"labels": [{"reviewer": "", "label": "SUPPORTED"}]},
     ("claims[0].labels[0].reviewer", "must be a non-empty string or null")),
])
def test_bad_labels_lists_name_the_field(change, expected):
    project = project_for_import(slug="multi")
    line = answer("q1", [{"text": "It retries five times.", "citations": [{"passage_id": "P1"}], **change}])
    if "label" in change:
        line["claims"][0]["labels"] = [{"reviewer": "x", "label": "SUPPORTED"}]
    before = row_counts()
    with pytest.raises(ImportFailed) as failure:
        run_import(project=project, source=jsonl(line))
    assert issues_of(failure) == [(1, *expected)]
    assert row_counts() == before


def test_a_single_judgment_on_a_claim_of_several_reviewers_is_refused():
    """Whose is it? SPEC §6 credits it to "the claim's reviewer", and this claim has two."""
    project = project_for_import(slug="multi")
    line = answer("q1", [claim("It retries five times.", ("ann-a", "SUPPORTED"), ("ann-b", "SUPPORTED"))])
    line["claims"][0]["citations"][0]["judgment"] = "FULL"
    with pytest.raises(ImportFailed) as failure:
        run_import(project=project, source=jsonl(line))
    assert issues_of(failure) == [(1, "claims[0].citations[0].judgment", (
        "the claim has several reviewers' labels: give this citation's judgments as judgments: [{reviewer, "
        "judgment, evidence}]"))]


# ------------------------------------------------------------------ CSV/XLSX

HEADER = ["question_id", "question", "run", "answer", "passages", "claim_index", "claim", "citations", "label",
          "justification", "reviewer", "labeled_at", "judgments"]


def table_rows() -> list[list[str]]:
    """q1: claim 1 labeled by ann-a and ann-b (two rows, same claim_index; the second
    row leaves the claim's cells blank), claim 2 by ann-a alone."""
    passages = json.dumps(PASSAGES)
    return [
        ["q1", "Q?", "r1", "It retries. It logs.", passages, "1", "It retries.", "P1", "SUPPORTED", "", "ann-a",
         "2023-05-01T10:30:00Z", "FULL"],
        ["q1", "", "r1", "", "", "1", "", "", "UNSUPPORTED", "weaker", "ann-b", "", "PARTIAL"],
        ["q1", "", "r1", "", "", "2", "It logs.", "P2", "SUPPORTED", "", "ann-a", "", ""],
    ]


def csv_bytes(rows: list[list[str]]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(HEADER)
    writer.writerows(rows)
    return out.getvalue().encode()


def xlsx_bytes(rows: list[list[str]]) -> bytes:
    workbook = Workbook()
    sheet = workbook.active
    sheet.append(HEADER)
    for row in rows:
        sheet.append(row)
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


@pytest.mark.parametrize(("fmt", "build"), [("csv", csv_bytes), ("xlsx", xlsx_bytes)])
def test_rows_sharing_a_claim_index_are_one_claim_with_a_label_per_reviewer(fmt, build):
    project = project_for_import(slug="multi")
    report = run_import(project=project, source=build(table_rows()), format=fmt)
    run = Run.objects.get(project=project, name="r1")
    assert (report.claims_created, report.labels_created, report.judgments_created) == (2, 3, 2)
    assert list(Claim.objects.filter(answer__run=run).values_list("index", "text")) == [(1, "It retries."),
                                                                                         (2, "It logs.")]
    assert current_labels(run) == [("q1", 1, "ann-a", "SUPPORTED"), ("q1", 1, "ann-b", "UNSUPPORTED"),
                                   ("q1", 2, "ann-a", "SUPPORTED")]
    assert Label.objects.get(reviewer__username="ann-a", claim__index=1).created_at == datetime(
        2023, 5, 1, 10, 30, tzinfo=UTC)
    assert sorted(CitationJudgment.objects.values_list("reviewer__username", "judgment")) == [
        ("ann-a", "FULL"), ("ann-b", "PARTIAL")]


@pytest.mark.parametrize(("fmt", "build"), [("csv", csv_bytes), ("xlsx", xlsx_bytes)])
def test_one_reviewer_on_two_rows_of_a_claim_is_refused_by_row(fmt, build):
    rows = table_rows()
    rows[1][10] = "ann-a"
    project = project_for_import(slug="multi")
    before = row_counts()
    with pytest.raises(ImportFailed) as failure:
        run_import(project=project, source=build(rows), format=fmt)
    assert issues_of(failure) == [
        (3, "judgments", "'ann-a' already judges this citation in judgments[0]"),
        (3, "reviewer", "'ann-a' already labels this claim in labels[0]: one label per reviewer and claim")]
    assert row_counts() == before


def test_rows_of_one_claim_that_differ_in_its_text_are_refused():
    rows = table_rows()
    rows[1][6] = "It retries twice."
    with pytest.raises(ImportFailed) as failure:
        run_import(project=project_for_import(slug="multi"), source=csv_bytes(rows), format="csv")
    assert issues_of(failure) == [(3, "claim", "differs from row 2, which gives the same claim_index: rows of one "
                                               "claim (one per reviewer) share its claim, citations, span and "
                                               "factual cells")]


# ---------------------------------------------------- label table, --keep-reviewers


@pytest.fixture
def lead_and_run():
    project = project_for_import(slug="multi")
    run_import(project=project, source=jsonl(answer("q1", [claim("It retries five times.", ("ann-a", "SUPPORTED")),
                                                            claim("It logs runs.", ("ann-a", "SUPPORTED"))])))
    lead = ReviewerFactory(username="lead")
    project.members.add(lead)
    return lead, Run.objects.get(project=project, name="r1")


def label_table(rows: list[tuple[int, str, str, str]]) -> bytes:
    """Rows (claim_index, reviewer, label, justification) of question q1."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["question_id", "claim_index", "reviewer", "label", "justification"])
    writer.writerows([("q1", *row) for row in rows])
    return out.getvalue().encode()


def test_keep_reviewers_takes_several_rows_per_claim(lead_and_run):
    """Claim 1: ann-b and ann-c (new reviewers); claim 2: ann-b. ann-a's labels stay."""
    lead, run = lead_and_run
    data = label_table([(1, "ann-b", "SUPPORTED", ""), (1, "ann-c", "UNSUPPORTED", "partly"),
                        (2, "ann-b", "UNSUPPORTED", "no")])
    preview = label_table_import_apply(run=run, reviewer=lead, table_file=read_label_table(data, format="csv"),
                                       keep_reviewers=True)
    assert len(preview.changes) == 3
    assert current_labels(run) == [("q1", 1, "ann-a", "SUPPORTED"), ("q1", 1, "ann-b", "SUPPORTED"),
                                   ("q1", 1, "ann-c", "UNSUPPORTED"), ("q1", 2, "ann-a", "SUPPORTED"),
                                   ("q1", 2, "ann-b", "UNSUPPORTED")]
    assert Reviewer.objects.get(username="ann-c").kind == ReviewerKind.EXTERNAL


def test_two_rows_for_one_claim_and_one_reviewer_stay_an_error(lead_and_run):
    lead, run = lead_and_run
    claim_1 = Claim.objects.get(answer__run=run, index=1).pk
    data = label_table([(1, "ann-b", "SUPPORTED", ""), (1, "ann-b", "UNSUPPORTED", "changed my mind")])
    before = row_counts()
    with pytest.raises(LabelImportError) as failure:
        label_table_import_apply(run=run, reviewer=lead, table_file=read_label_table(data, format="csv"),
                                 keep_reviewers=True)
    assert issues_of(failure) == [(3, "claim_id", f"claim {claim_1} for reviewer ann-b is also on row 2")]
    assert row_counts() == before


def test_without_keep_reviewers_a_claim_still_takes_one_row(lead_and_run):
    lead, run = lead_and_run
    claim_1 = Claim.objects.get(answer__run=run, index=1).pk
    data = label_table([(1, "lead", "SUPPORTED", ""), (1, "lead", "SUPPORTED", "")])
    with pytest.raises(LabelImportError) as failure:
        label_table_import_apply(run=run, reviewer=lead, table_file=read_label_table(data, format="csv"))
    assert issues_of(failure) == [(3, "claim_id", f"claim {claim_1} is also on row 2")]

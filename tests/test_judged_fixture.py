"""Per-citation judgments in answers files (SPEC §6), and the figures of
``fixtures/expertqa_judged.jsonl``: 20 cited ExpertQA claims whose 23 citations a
Citelab engineer judged by reading the passages (see ``fixtures/README.md``)."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from openpyxl import load_workbook

from labeling.importers.load import run_import
from labeling.importers.records import ImportFailed
from labeling.models import Answer, CitationJudgment, Claim
from tests.conftest import FIXTURES_DIR
from tests.factories import ProjectFactory

JUDGED = FIXTURES_DIR / "expertqa_judged.jsonl"


@pytest.fixture
def judged(db):
    project = ProjectFactory(slug="demo-judged", judge_citations=True)
    report = run_import(project=project, source=JUDGED)
    return project, report


def score(run: str, rule: str, capsys) -> dict:
    call_command("score", "--project", "demo-judged", "--run", run, "--format", "json",
                 "--citation-precision-rule", rule)
    return json.loads(capsys.readouterr().out)


def test_fixture_imports_judgments_under_the_claims_reviewer(judged):
    """6 answers, 21 claims (one, a hedge, marked not factual), 23 citations, each judged once
    by citelab-engineer: FULL 13, PARTIAL 8, NONE 2."""
    _project, report = judged

    assert (report.answers_created, report.claims_created, report.citations_created) == (6, 21, 23)
    assert report.judgments_created == 23
    assert Claim.objects.filter(factual=False).count() == 1
    judgments = CitationJudgment.objects.filter(is_current=True)
    assert set(judgments.values_list("reviewer__username", flat=True)) == {"citelab-engineer"}
    assert {value: judgments.filter(judgment=value).count() for value in ("FULL", "PARTIAL", "NONE",
                                                                           "UNJUDGEABLE")} == \
        {"FULL": 13, "PARTIAL": 8, "NONE": 2, "UNJUDGEABLE": 0}


def test_fixture_figures_rr_sphere_gpt4(judged, capsys):
    """rr_sphere_gpt4: answers 2d72… (2 claims, 4 citations FULL; 1 hedge not factual), 3438…
    (5 claims: PARTIAL, NONE, PARTIAL, PARTIAL, PARTIAL+NONE, all UNSUPPORTED), 8c0f… (3 claims,
    each PARTIAL, UNSUPPORTED). Citations 13: FULL 4, PARTIAL 7, NONE 2.
    strict 4/13, union 4/13 (no PARTIAL sits on a SUPPORTED claim), lenient 11/13.
    Per answer (union): 4/4, 0/6, 0/3 -> mean 1/3. Factual claims 10, SUPPORTED 2:
    supported rate 2/10; coverage 10/10, support 2/10; non_factual 1."""
    union = score("rr_sphere_gpt4", "union", capsys)
    judgments = union["citation_judgments"]
    assert judgments["counts"] == {"FULL": 4, "PARTIAL": 7, "NONE": 2, "UNJUDGEABLE": 0}
    assert judgments["precision_fraction"] == "4/13"
    assert judgments["mean_precision"] == pytest.approx(1 / 3)
    assert score("rr_sphere_gpt4", "strict", capsys)["citation_judgments"]["precision_fraction"] == "4/13"
    assert score("rr_sphere_gpt4", "lenient", capsys)["citation_judgments"]["precision_fraction"] == "11/13"
    claims = union["claims"]
    assert (claims["claims"], claims["cited"], claims["supported"], claims["non_factual"]) == (10, 10, 2, 1)
    assert claims["supported_rate"] == 0.2


def test_fixture_figures_rr_gs_gpt4(judged, capsys):
    """rr_gs_gpt4: answers 17d4… (3 claims, FULL each), af36… (2 claims, FULL each), da92…
    (5 claims: FULL, FULL, FULL, PARTIAL -> UNSUPPORTED, FULL). Citations 10: FULL 9, PARTIAL 1.
    strict 9/10, union 9/10, lenient 10/10. Per answer (union): 3/3, 2/2, 4/5 -> mean
    (1 + 1 + 0.8)/3 = 14/15. Claims 10, SUPPORTED 9: supported rate 9/10."""
    union = score("rr_gs_gpt4", "union", capsys)
    judgments = union["citation_judgments"]
    assert judgments["precision_fraction"] == "9/10"
    assert judgments["mean_precision"] == pytest.approx(14 / 15)
    assert score("rr_gs_gpt4", "strict", capsys)["citation_judgments"]["precision_fraction"] == "9/10"
    assert score("rr_gs_gpt4", "lenient", capsys)["citation_judgments"]["precision_fraction"] == "10/10"
    assert (union["claims"]["claims"], union["claims"]["supported"]) == (10, 9)
    assert union["claims"]["supported_rate"] == 0.9


def answers_line(**claim_fields) -> str:
    claim = {"text": "Paris is in France.", "citations": [{"passage_id": "P1"}], **claim_fields}
    return json.dumps({"question_id": "q1", "question": "Where is Paris?", "run": "r1",
                       "answer": "Paris is in France [P1].",
                       "passages": [{"id": "P1", "source": "a.md", "text": "Paris is the capital of France."}],
                       "claims": [claim]})


def test_bad_judgment_factual_and_evidence_are_refused_with_line_and_field(db, tmp_path):
    """Line 2 gives an unknown judgment, line 3 a string for factual, line 4 evidence without
    a judgment: three problems, nothing imported."""
    good = answers_line()
    bad_judgment = answers_line(citations=[{"passage_id": "P1", "judgment": "MOSTLY"}]).replace('"q1"', '"q2"')
    bad_factual = answers_line(factual="no").replace('"q1"', '"q3"')
    bad_evidence = answers_line(citations=[{"passage_id": "P1", "evidence": "capital"}]).replace('"q1"', '"q4"')
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([good, bad_judgment, bad_factual, bad_evidence]) + "\n")

    with pytest.raises(ImportFailed) as failure:
        run_import(project=ProjectFactory(slug="bad"), source=path)

    text = str(failure.value)
    assert "line 2" in text and "claims[0].citations[0].judgment" in text and "MOSTLY" in text
    assert "line 3" in text and "claims[0].factual" in text
    assert "line 4" in text and "claims[0].citations[0].evidence" in text
    assert Answer.objects.count() == 0


def test_judgment_is_case_forgiven_and_credited_to_the_claims_reviewer(db, tmp_path):
    path = tmp_path / "ok.jsonl"
    path.write_text(answers_line(label="SUPPORTED", reviewer="ann", citations=[
        {"passage_id": "P1", "judgment": " full ", "evidence": "capital of France"}]) + "\n")

    run_import(project=ProjectFactory(slug="ok"), source=path)

    judgment = CitationJudgment.objects.get()
    assert (judgment.judgment, judgment.evidence, judgment.reviewer.username) == ("FULL", "capital of France", "ann")


def test_all_runs_summary_of_the_fixture(judged, capsys, tmp_path):
    """rr_gs_gpt4: 3 answers, 10 claims, coverage 10/10, support 9/10, supported rate 9/10,
    precision (union) 9/10, gap 1 − 9/10 = 0.1. rr_sphere_gpt4: 3 answers, 10 claims,
    coverage 10/10, support 2/10, supported rate 2/10, precision 4/13, gap 0.8.
    Mean of the 2 runs: supported rate (0.9 + 0.2)/2 = 0.55, precision (9/10 + 4/13)/2 = 157/260,
    gap 0.45."""
    call_command("score", "--project", "demo-judged", "--all-runs", "--format", "json")
    result = json.loads(capsys.readouterr().out)

    assert result["citation_precision_rule"] == "union"
    gs, sphere, mean = result["runs"]
    assert (gs["run"], gs["answers"], gs["claims"]) == ("rr_gs_gpt4", 3, 10)
    assert (gs["coverage_fraction"], gs["support_fraction"], gs["supported_rate_fraction"],
            gs["citation_precision_fraction"]) == ("10/10", "9/10", "9/10", "9/10")
    assert gs["gap"] == pytest.approx(0.1)
    assert (sphere["run"], sphere["support_fraction"], sphere["citation_precision_fraction"]) == \
        ("rr_sphere_gpt4", "2/10", "4/13")
    assert mean["run"] == "mean of 2 runs"
    assert mean["supported_rate"] == pytest.approx(0.55)
    assert mean["citation_precision"] == pytest.approx(157 / 260)
    assert mean["gap"] == pytest.approx(0.45)

    call_command("score", "--project", "demo-judged", "--all-runs")
    table = capsys.readouterr().out
    assert "rr_sphere_gpt4" in table and "4/13 = 0.31" in table and "mean of 2 runs" in table

    path = tmp_path / "runs.xlsx"
    call_command("score", "--project", "demo-judged", "--all-runs", "--format", "xlsx", "-o", str(path))
    sheet = load_workbook(path)["Runs"]
    rows = list(sheet.iter_rows(values_only=True))
    assert rows[0][:4] == ("run", "answers", "claims", "pending")
    assert rows[2][0] == "rr_sphere_gpt4" and rows[2][10] == pytest.approx(4 / 13) and rows[2][11] == "4/13"
    assert rows[3][0] == "mean of 2 runs" and rows[3][10] == pytest.approx(157 / 260)


def test_summary_page_and_run_page_show_the_fixture_figures(judged, client, reviewer):
    """The summary page: both runs with their fractions and the mean (0.60 = 157/260 rounded);
    the run page of rr_gs_gpt4: supported rate 9/10 and citation precision 9/10 with its counts."""
    project, _report = judged
    project.members.add(reviewer)
    client.force_login(reviewer)

    page = client.get(reverse("project_summary", kwargs={"project_slug": "demo-judged"})).content.decode()
    assert "4/13 = 0.31" in page and "9/10 = 0.90" in page and "mean of 2 runs" in page and "0.60" in page
    strict = client.get(reverse("project_summary", kwargs={"project_slug": "demo-judged"}) + "?rule=lenient")
    assert "11/13 = 0.85" in strict.content.decode()

    run_page = client.get(reverse("run_detail", kwargs={"project_slug": "demo-judged",
                                                        "run_name": "rr_gs_gpt4"})).content.decode()
    assert "Claims supported by their citations" in run_page
    assert "Citation precision" in run_page and "FULL 9 · PARTIAL 1 · NONE 0 · UNJUDGEABLE 0" in run_page
    assert run_page.count("9/10 = 0.90") >= 2


def test_label_table_carries_judgments_and_round_trips_them(judged, tmp_path, capsys):
    """Export rr_sphere_gpt4 (citelab-engineer's labels) as JSONL: the tax answer's first claim
    shows "[3] FULL\\n[5] FULL" with its evidence; the hedge is factual false, status non_factual.
    Change [5] to PARTIAL with new evidence (and none for [3]) and mark the hedge factual, import: the old FULL
    stays in history, the new judgment is current, the hedge counts again, and a fresh export
    reads back exactly what was imported."""
    path = tmp_path / "labels.jsonl"
    args = ["--project", "demo-judged", "--run", "rr_sphere_gpt4"]
    call_command("export_labels", *args, "--reviewer", "citelab-engineer", "-o", str(path))
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    tax = [row for row in rows if row["question_id"] == "expertqa:2d724079e11f"]
    assert tax[0]["judgments"] == "[3] FULL\n[5] FULL"
    assert tax[0]["evidence"].startswith("[3] The current rates will remain in effect")
    assert (tax[2]["factual"], tax[2]["status"], tax[2]["judgments"]) == (False, "non_factual", "")
    assert all(row["factual"] for row in rows if row is not tax[2])

    tax[0]["judgments"] = "[3] FULL\n[5] partial"
    tax[0]["evidence"] = "[5] for the next two years"
    tax[2]["factual"] = "true"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    call_command("import_labels", str(path), *args, "--reviewer", "citelab-engineer", "--apply")
    capsys.readouterr()

    claim = Claim.objects.get(answer__question__question_id="expertqa:2d724079e11f", index=1)
    fifth = CitationJudgment.objects.filter(citation__claim=claim, citation__cited_id="5").order_by("pk")
    assert [(j.judgment, j.is_current) for j in fifth] == [("FULL", False), ("PARTIAL", True)]
    assert fifth.last().evidence == "for the next two years"
    assert Claim.objects.get(answer__question__question_id="expertqa:2d724079e11f", index=3).factual
    again = tmp_path / "again.jsonl"
    call_command("export_labels", *args, "--reviewer", "citelab-engineer", "-o", str(again))
    first = json.loads(again.read_text().splitlines()[0])
    # The evidence cell is the whole evidence: [3]'s, left out of it, is now blank.
    assert (first["judgments"], first["evidence"]) == ("[3] FULL\n[5] PARTIAL", "[5] for the next two years")


def test_bad_judgment_cells_are_refused_with_row_and_column(judged, tmp_path, capsys):
    path = tmp_path / "labels.jsonl"
    args = ["--project", "demo-judged", "--run", "rr_sphere_gpt4"]
    call_command("export_labels", *args, "--reviewer", "citelab-engineer", "-o", str(path))
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[0]["judgments"] = "[3] MOSTLY\n[5] FULL"
    rows[1]["judgments"], rows[1]["evidence"] = "[9] FULL", ""
    rows[2]["factual"] = "perhaps"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))

    with pytest.raises(CommandError) as failure:
        call_command("import_labels", str(path), *args, "--reviewer", "citelab-engineer", "--apply")

    captured = capsys.readouterr()
    text = str(failure.value) + captured.out + captured.err
    assert "MOSTLY" in text and "does not cite 9" in text and "'perhaps' is not true or false" in text
    assert CitationJudgment.objects.filter(judgment="PARTIAL").count() == 8  # nothing written


def test_csv_answers_file_carries_judgments_factual_and_evidence(db, tmp_path):
    """One answer, two claims in CSV: claim 1 cites 1 and 2, judged "[1] FULL / [2] NONE" with
    evidence for [1]; claim 2 is factual "no". A second file's bad judgment names row and column."""
    passages = json.dumps([{"id": "1", "source": "a", "text": "Paris is the capital of France."},
                           {"id": "2", "source": "b", "text": "Lyon is a city."}])
    header = "question_id,question,run,answer,passages,claim,citations,label,reviewer,judgments,evidence,factual\n"

    def row(claim, cites, label, judgments, evidence, factual):
        cells = ["q1", "Where is Paris?", "r1", "Paris is in France [1][2]. Hello!", passages, claim, cites,
                 label, "ann", judgments, evidence, factual]
        return ",".join('"' + cell.replace('"', '""') + '"' for cell in cells) + "\n"

    good = tmp_path / "good.csv"
    good.write_text(header + row("Paris is in France [1][2].", "1, 2", "SUPPORTED", "[1] FULL\n[2] none",
                                 "[1] capital of France", "")
                    + row("Hello!", "", "UNCITED", "", "", "no"))
    run_import(project=ProjectFactory(slug="csv"), source=good)

    judged = {j.citation.cited_id: (j.judgment, j.evidence, j.reviewer.username)
              for j in CitationJudgment.objects.select_related("citation", "reviewer")}
    assert judged == {"1": ("FULL", "capital of France", "ann"), "2": ("NONE", "", "ann")}
    assert list(Claim.objects.order_by("index").values_list("factual", flat=True)) == [True, False]

    bad = tmp_path / "bad.csv"
    bad.write_text(header.replace("q1", "q2") + row("Paris is in France [1][2].", "1, 2", "SUPPORTED",
                                                    "[1] MAYBE\n[2] NONE", "", "").replace('"q1"', '"q2"'))
    with pytest.raises(ImportFailed) as failure:
        run_import(project=ProjectFactory(slug="csv-bad"), source=bad)
    assert "line 2" in str(failure.value) and "judgments" in str(failure.value) and "MAYBE" in str(failure.value)

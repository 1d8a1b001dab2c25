"""``import_dataset --format expertqa`` (SPEC §6) on the shipped sample
``fixtures/datasets/expertqa_r2_sample.jsonl``: 14 real lines of ExpertQA's
own format (MIT; fixtures/README.md says which), 58 claims.

Paper figures: ExpertQA (Malaviya et al., NAACL 2024) prints attribution
figures (the share of claims with complete support per system) over all
2,177 judged answers of ``data/r2_compiled_anon.jsonl``. That file is over
4 MiB and not in the repository snapshot this project can fetch (nor may a
test reach the network), and 14 answers are not the paper's population, so
no test reproduces the paper's numbers. What the tests check instead: on
the sample, Citelab's coverage and support equal the counts taken by hand
from the raw JSON (below), and the 12 sample answers that
``fixtures/expertqa_dev.jsonl`` also holds (converted independently, before
this importer existed) come out with the same claims, citations and labels.
"""

from __future__ import annotations

import hashlib
import io
import json

import pytest
from django.core.management import call_command

from labeling.importers.datasets.load import dataset_import
from labeling.models import Claim, Label, Project, Provenance, Reviewer, ReviewerKind, Run
from labeling.scores.metrics import run_scores
from tests.conftest import EXPERTQA_PATH, FIXTURES_DIR
from tests.tables import row_counts

pytestmark = pytest.mark.django_db

SAMPLE = FIXTURES_DIR / "datasets" / "expertqa_r2_sample.jsonl"


@pytest.fixture
def project():
    project = Project.objects.create(slug="eq", name="ExpertQA")
    dataset_import(project=project, format="expertqa", files=[SAMPLE])
    return project


def claims_of(run: Run) -> dict[str, list[tuple[str, list[str], str | None]]]:
    """question id → [(claim text, cited ids, label of the ExpertQA expert)] in claim order."""
    out: dict[str, list] = {}
    labels = dict(Label.objects.filter(claim__answer__run=run).values_list("claim_id", "value"))
    for claim in Claim.objects.filter(answer__run=run).prefetch_related("citations").order_by("answer_id", "index"):
        out.setdefault(claim.answer.question_key, []).append(
            (claim.text, [c.cited_id for c in claim.citations.all()], labels.get(claim.pk)))
    return out


def test_the_sample_gives_one_run_per_system_with_its_provenance(project):
    runs = sorted(Run.objects.filter(project=project).values_list("name", flat=True))
    assert runs == ["bing_chat", "gpt4", "post_hoc_gs_gpt4", "post_hoc_sphere_gpt4", "rr_gs_gpt4", "rr_sphere_gpt4"]
    provenance = Provenance.objects.get(run__project=project, run__name="rr_gs_gpt4")
    assert (provenance.format, provenance.source, provenance.url, provenance.commit, provenance.licence) == (
        "expertqa", "ExpertQA (Malaviya et al., NAACL 2024)", "https://github.com/chaitanyamalaviya/ExpertQA",
        "1aa7ba81bd4c083c12ef1aa2fee338f6cb60fa87", "MIT")
    assert provenance.files == [{"name": "expertqa_r2_sample.jsonl",
                                 "sha256": hashlib.sha256(SAMPLE.read_bytes()).hexdigest()}]


def test_every_expert_is_a_reviewer_of_their_own():
    """The 14 answers were judged by 13 experts (two answers share one): 13 external reviewers."""
    project = Project.objects.create(slug="eq", name="ExpertQA")
    dataset_import(project=project, format="expertqa", files=[SAMPLE])
    annotators = {answer["annotator_id"] for line in SAMPLE.read_text().splitlines()
                  for answer in json.loads(line)["answers"].values()}
    assert len(annotators) == 13
    assert set(Reviewer.objects.filter(labels__isnull=False).values_list("username", "kind").distinct()) == {
        (f"expertqa-{a}", ReviewerKind.EXTERNAL) for a in annotators}


def test_coverage_and_support_are_the_counts_of_the_raw_json(project):
    """Counted by hand from the sample (claims; with evidence = cited; Complete /
    cited with Complete, Partial, Incomplete or Missing = support; N/A pending):

    run                   claims  cited  labeled cited  Complete  coverage  support
    bing_chat                  5      4              2         0      4/5      0/2
    gpt4                       5      5              4         2      5/5      2/4
    post_hoc_gs_gpt4          11     11             11         7    11/11     7/11
    post_hoc_sphere_gpt4      11     11              9         5    11/11     5/9
    rr_gs_gpt4                10      7              7         6     7/10     6/7
    rr_sphere_gpt4            16     10             10         3    10/16     3/10
    """
    expected = {"bing_chat": (5, 4, 2, 0), "gpt4": (5, 5, 4, 2), "post_hoc_gs_gpt4": (11, 11, 11, 7),
                "post_hoc_sphere_gpt4": (11, 11, 9, 5), "rr_gs_gpt4": (10, 7, 7, 6), "rr_sphere_gpt4": (16, 10, 10, 3)}
    for name, (claims, cited, labeled, supported) in expected.items():
        metrics = run_scores(Run.objects.get(project=project, name=name), with_gold=False).claims
        assert (metrics.claims, metrics.cited, metrics.labeled_cited, metrics.supported) == (
            claims, cited, labeled, supported), name


def test_the_answers_also_in_expertqa_dev_match_it_claim_for_claim(project):
    """fixtures/expertqa_dev.jsonl was converted from the same files by other code: the 12
    RAG answers of the sample that it holds agree with this importer on every claim's
    text, cited ids and label."""
    dev = {}
    for line in EXPERTQA_PATH.read_text().splitlines():
        row = json.loads(line)
        dev[(row["run"], row["question_id"])] = [
            (c["text"], [str(x["passage_id"]) for x in c["citations"]], c.get("label")) for c in row["claims"]]
    compared = 0
    for run in Run.objects.filter(project=project):
        for question_id, claims in claims_of(run).items():
            if (run.name, question_id) in dev:
                assert claims == dev[(run.name, question_id)], (run.name, question_id)
                compared += 1
    assert compared == 12


def test_the_experts_graded_label_is_kept_in_the_justification(project):
    def said(start: str) -> tuple[str, str]:
        label = Label.objects.get(claim__answer__run__name="rr_sphere_gpt4", claim__text__startswith=start)
        return label.value, label.justification

    assert said("Rejoining the EU could allow") == ("UNSUPPORTED", "ExpertQA support: Incomplete; worthiness: Yes")
    assert said("British companies could then") == (
        "UNSUPPORTED", "ExpertQA support: Partial; worthiness: Yes. it does not fully explain the claim.")
    assert Label.objects.filter(value="UNCITED", justification__startswith="ExpertQA support: Missing").count() == 10


def test_reimporting_the_sample_changes_nothing(project):
    before = row_counts()
    out = io.StringIO()
    call_command("import_dataset", "--format", "expertqa", str(SAMPLE), "--project", "eq", stdout=out)
    assert "0 answers imported, 14 already present" in out.getvalue()
    assert {k: v for k, v in row_counts().items() if k != "labeling.AuditEvent"} == {
        k: v for k, v in before.items() if k != "labeling.AuditEvent"}


def test_run_names_one_system_or_a_prefix_for_several(tmp_path):
    """--run NAME: the run's name when the files hold one system, else NAME-<system>."""
    project = Project.objects.create(slug="eq", name="ExpertQA")
    lines = SAMPLE.read_text().splitlines()
    one = tmp_path / "one.jsonl"
    one.write_text(lines[0] + "\n")
    dataset_import(project=project, format="expertqa", files=[one], run_name="experts")
    dataset_import(project=project, format="expertqa", files=[SAMPLE], run_name="eq")
    names = set(Run.objects.filter(project=project).values_list("name", flat=True))
    assert names == {"experts", "eq-bing_chat", "eq-gpt4", "eq-post_hoc_gs_gpt4", "eq-post_hoc_sphere_gpt4",
                     "eq-rr_gs_gpt4", "eq-rr_sphere_gpt4"}


def test_a_backup_keeps_the_provenance(project, tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    before = list(Provenance.objects.filter(run__project=project).order_by("run__name").values(
        "run__name", "format", "source", "url", "commit", "licence", "files", "note", "imported_at"))
    archive = tmp_path / "eq.zip"
    call_command("export_project", "eq", str(archive))
    project.delete()
    assert not Provenance.objects.exists()
    call_command("import_project", str(archive))
    after = list(Provenance.objects.filter(run__project__slug="eq").order_by("run__name").values(
        "run__name", "format", "source", "url", "commit", "licence", "files", "note", "imported_at"))
    assert len(after) == 6
    assert after == before


def test_the_admin_shows_a_runs_provenance(project, admin_client):
    run = Run.objects.get(project=project, name="rr_gs_gpt4")
    page = admin_client.get(f"/admin/labeling/run/{run.pk}/change/").content.decode()
    assert "ExpertQA (Malaviya et al., NAACL 2024)" in page
    assert "1aa7ba81bd4c083c12ef1aa2fee338f6cb60fa87" in page

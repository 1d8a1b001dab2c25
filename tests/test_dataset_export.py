"""Datasets out (SPEC §6): ``export_labels --format parquet`` and
``export_dataset --run NAME [--version N] -o DIR``, which
``datasets.load_dataset("parquet", data_dir=DIR)`` reads, with its card."""

from __future__ import annotations

import hashlib
import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.management import CommandError, call_command

from labeling.exports.label_table import canonical_bytes, label_table_frame
from labeling.importers.datasets.load import dataset_import
from labeling.importers.load import project_for_import, run_import
from labeling.models import Label, LabelValue, Project, Run
from labeling.tables.versions import label_table_snapshot
from labeling.team.agreement import run_agreement
from tests.conftest import FIXTURES_DIR

pytestmark = pytest.mark.django_db

PASSAGES = [{"id": "P1", "source": "manual.md", "text": "The client retries five times."},
            {"id": "P2", "source": "manual.md", "text": "Runs are logged locally."}]


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def team_run(db, media):
    """One answer, three claims: c1 cited P1 (ann-a SUPPORTED 2023-05-01 10:30, ann-b SUPPORTED),
    c2 cited P2 (ann-a SUPPORTED, ann-b UNSUPPORTED: disputed), c3 uncited."""
    claims = [
        {"text": "It retries five times.", "citations": [{"passage_id": "P1"}],
         "labels": [{"reviewer": "ann-a", "label": "SUPPORTED", "labeled_at": "2023-05-01T10:30:00Z"},
                    {"reviewer": "ann-b", "label": "SUPPORTED"}]},
        {"text": "It logs runs remotely.", "citations": [{"passage_id": "P2"}],
         "labels": [{"reviewer": "ann-a", "label": "SUPPORTED"},
                    {"reviewer": "ann-b", "label": "UNSUPPORTED", "justification": "locally, not remotely"}]},
        {"text": "It is fast.", "citations": []},
    ]
    line = {"question_id": "q1", "question": "How does sync work?", "run": "team",
            "answer": " ".join(c["text"] for c in claims), "passages": PASSAGES, "claims": claims}
    project = project_for_import(slug="team")
    run_import(project=project, source=(json.dumps(line) + "\n").encode())
    return Run.objects.get(project=project, name="team")


def export(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


# ------------------------------------------------------------ export_labels parquet

def test_parquet_label_table_is_typed_and_keeps_every_reviewer(team_run, tmp_path):
    path = tmp_path / "labels.parquet"
    export("export_labels", "--run", "team", "--project", "team", "-o", str(path))
    table = pq.read_table(path)
    assert table.schema.field("claim_index").type == pa.int64()
    assert table.schema.field("factual").type == pa.bool_()
    assert table.schema.field("labeled_at").type == pa.timestamp("ms", tz="UTC")
    rows = table.to_pylist()
    assert [(r["claim_index"], r["label"], r["status"], r["citations"]) for r in rows] == [
        (1, "SUPPORTED", "labeled", "P1"), (2, None, "disagreement", "P2"), (3, "UNCITED", "uncited", "")]
    assert [(item["reviewer"], item["label"], item["justification"]) for item in rows[1]["reviewer_labels"]] == [
        ("ann-a", "SUPPORTED", ""), ("ann-b", "UNSUPPORTED", "locally, not remotely")]
    first = {item["reviewer"]: item["labeled_at"] for item in rows[0]["reviewer_labels"]}
    assert first["ann-a"].isoformat() == "2023-05-01T10:30:00+00:00"
    # The agreed row of claim 1 shows the later of its two labels' times, as the CSV does.
    assert rows[0]["labeled_at"] == max(first.values())
    assert rows[2]["reviewer_labels"] == []


def test_parquet_holds_what_the_jsonl_export_holds(team_run, tmp_path):
    export("export_labels", "--run", "team", "--project", "team", "--format", "jsonl", "-o", str(tmp_path / "t.jsonl"))
    export("export_labels", "--run", "team", "--project", "team", "--format", "parquet",
           "-o", str(tmp_path / "t.parquet"))
    lines = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    rows = pq.read_table(tmp_path / "t.parquet").to_pylist()
    for line, row in zip(lines, rows, strict=True):
        for key, value in line.items():
            shown = row[key].strftime("%Y-%m-%dT%H:%M:%SZ") if key == "labeled_at" and row[key] else row[key]
            assert shown == value, key


def test_a_parquet_format_that_contradicts_the_suffix_is_refused(team_run, tmp_path):
    with pytest.raises(CommandError, match="--format parquet but -o .* ends in .csv"):
        export("export_labels", "--run", "team", "--project", "team", "--format", "parquet",
               "-o", str(tmp_path / "labels.csv"))


def test_without_pyarrow_the_export_names_the_extra(team_run, tmp_path, monkeypatch):
    monkeypatch.setattr("labeling.tables.export.parquet_available", lambda: False)
    with pytest.raises(CommandError, match=r"the parquet format needs pyarrow: pip install -e '\.\[parquet\]'"):
        export("export_labels", "--run", "team", "--project", "team", "-o", str(tmp_path / "labels.parquet"))
    assert not (tmp_path / "labels.parquet").exists()


# ------------------------------------------------------------------ export_dataset

def load(directory, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    import datasets

    return datasets.load_dataset("parquet", data_dir=str(directory), cache_dir=str(tmp_path / "hf-cache"))


def test_the_dataset_folder_loads_with_datasets(team_run, tmp_path, monkeypatch):
    directory = tmp_path / "team-dataset"
    out = export("export_dataset", "--run", "team", "--project", "team", "-o", str(directory))
    assert "3 rows" in out
    loaded = load(directory, tmp_path, monkeypatch)
    assert list(loaded) == ["train"]
    train = loaded["train"]
    assert train.num_rows == 3
    assert train["claim"] == ["It retries five times.", "It logs runs remotely.", "It is fast."]
    assert train["passage"][0] == "[P1] The client retries five times."
    assert [r["reviewer"] for r in train[1]["reviewer_labels"]] == ["ann-a", "ann-b"]


def test_the_card_gives_counts_reviewers_agreement_and_the_sha256(team_run, tmp_path):
    """Counts: 1 answer, 3 claims, 2 cited, 1 labeled cited (claim 2 is disputed), 1 SUPPORTED, 1 UNCITED.
    Agreement: the run's own figures (2 claims, ann-a vs ann-b)."""
    directory = tmp_path / "team-dataset"
    export("export_dataset", "--run", "team", "--project", "team", "-o", str(directory))
    card = (directory / "README.md").read_text()
    digest = hashlib.sha256(canonical_bytes(label_table_frame(team_run, with_passages=False))).hexdigest()
    assert f"SHA-256 of the table's canonical form: `{digest}` (what a version saved now would record)." in card
    # A version saved now records that very hash.
    assert label_table_snapshot(run=team_run, note="after export").sha256 == digest
    assert "| 1 | 3 | 2 | 1 | 1 | 0 | 1 | 0 | 1 | 0 |" in card
    assert "| ann-a | external | 2 |" in card and "| ann-b | external | 2 |" in card
    alpha = run_agreement(run=team_run).overall.alpha
    assert f"| Krippendorff's alpha (nominal) | {alpha.value:.3f} |" in card
    assert "| 2 claims |" in card
    assert card.startswith("---\nlicense: other\n")
    assert "no dataset licence is recorded for this run" in card


def test_a_version_exports_as_it_was_saved(team_run, tmp_path, monkeypatch):
    """Version 1 is saved with claim 1 SUPPORTED by both; then ann-b turns it UNSUPPORTED. The
    dataset of version 1 still shows SUPPORTED, and its card the version's own SHA-256."""
    version = label_table_snapshot(run=team_run, note="first pass")
    label = Label.objects.get(claim__index=1, reviewer__username="ann-b", is_current=True)
    Label.objects.filter(pk=label.pk).update(is_current=False)
    Label.objects.create(claim=label.claim, reviewer=label.reviewer, value=LabelValue.UNSUPPORTED,
                         justification="too strong", claim_revision=label.claim_revision)
    directory = tmp_path / "v1"
    export("export_dataset", "--run", "team", "--project", "team", "--version", "1", "-o", str(directory))
    card = (directory / "README.md").read_text()
    assert f"`{version.sha256}` (version 1, as Citelab recorded it)." in card
    assert "note: first pass" in card
    train = load(directory, tmp_path, monkeypatch)["train"]
    assert train["label"][0] == "SUPPORTED"
    assert train["passage"][0] == "[P1] The client retries five times."


def test_an_imported_datasets_card_carries_its_licence_and_source(db, media, tmp_path):
    project = Project.objects.create(slug="eq", name="ExpertQA")
    dataset_import(project=project, format="expertqa", files=[FIXTURES_DIR / "datasets" / "expertqa_r2_sample.jsonl"])
    directory = tmp_path / "eq"
    export("export_dataset", "--run", "rr_gs_gpt4", "--project", "eq", "-o", str(directory))
    card = (directory / "README.md").read_text()
    assert card.startswith("---\nlicense: mit\n")
    assert "- Source: ExpertQA (Malaviya et al., NAACL 2024), https://github.com/chaitanyamalaviya/ExpertQA" in card
    assert "- Commit: `1aa7ba81bd4c083c12ef1aa2fee338f6cb60fa87`" in card
    assert "| coverage (cited / claims) | 7/10 = 0.700 |" in card


@pytest.mark.parametrize("case", ["not empty", "no parent"])
def test_a_folder_that_is_not_new_is_refused_and_nothing_is_written(team_run, tmp_path, case):
    if case == "not empty":
        directory = tmp_path / "taken"
        directory.mkdir()
        (directory / "keep.txt").write_text("mine")
        expected = "already exists and is not an empty folder"
    else:
        directory = tmp_path / "missing" / "dataset"
        expected = "does not exist; create it first"
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(CommandError, match=expected):
        export("export_dataset", "--run", "team", "--project", "team", "-o", str(directory))
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    if case == "not empty":
        assert [p.name for p in directory.iterdir()] == ["keep.txt"]

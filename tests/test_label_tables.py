"""Label table versions: snapshot, canonical file, hash verification, scores,
row-by-row diff, pages and the snapshot command."""

from __future__ import annotations

import hashlib
import json
from urllib.parse import quote

import pytest
from django.core.exceptions import ValidationError
from django.core.files.storage import default_storage
from django.core.management import CommandError, call_command
from django.urls import reverse

from labeling.exports.label_table import (
    CANONICAL_COLUMNS,
    canonical_bytes,
    label_table_frame,
    table_claim_metrics,
    table_from_canonical,
)
from labeling.models import Claim, Label, LabelTableVersion, LabelValue, Run
from labeling.tables.diff import diff_label_tables
from labeling.tables.versions import (
    SNAPSHOT_UNCHANGED,
    VersionIntegrityError,
    label_table_snapshot,
    version_diff,
    version_read,
    version_scores,
    version_table,
)
from tests.conftest import FIXTURES_DIR
from tests.factories import (
    AnswerFactory,
    CitationFactory,
    ClaimFactory,
    LabelFactory,
    ReviewerFactory,
    RunFactory,
)

SEED = FIXTURES_DIR / "seed_coverage_support.jsonl"


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def seed_run(db):
    """The seed's worked example: one answer, 5 cited claims, claims 1, 2, 4
    SUPPORTED and 3, 5 UNSUPPORTED by ``seed-reviewer``."""
    from labeling.importers.load import project_for_import, run_import

    project = project_for_import(slug="seed")
    run_import(project=project, source=SEED)
    return Run.objects.select_related("project").get(project=project, name="seed-coverage-support")


def relabel(claim: Claim, reviewer_name: str, value: str, justification: str) -> Label:
    """A reviewer's new current label on ``claim``, the previous one kept as history."""
    reviewer = ReviewerFactory(username=reviewer_name)
    Label.objects.filter(claim=claim, reviewer=reviewer, is_current=True).update(is_current=False)
    return Label.objects.create(claim=claim, reviewer=reviewer, value=value, justification=justification,
                                claim_revision=claim.revision)


def test_snapshot_numbers_versions_per_run_and_stores_the_hashed_canonical_file(seed_run):
    other = RunFactory(project=seed_run.project, name="other")
    assert LabelTableVersion.objects.count() == 0

    first = label_table_snapshot(run=seed_run, note="first pass")
    relabel(Claim.objects.get(answer__run=seed_run, index=1), "seed-reviewer", LabelValue.SUPPORTED, "checked")
    second = label_table_snapshot(run=seed_run, note="second pass")
    other_first = label_table_snapshot(run=other, note="empty run")

    assert [first.number, second.number, other_first.number] == [1, 2, 1]
    # 5 claims, each with the seed reviewer's label.
    assert (first.row_count, first.label_count) == (5, 5)
    assert (other_first.row_count, other_first.label_count) == (0, 0)
    stored = default_storage.open(first.file.name, "rb").read()
    assert hashlib.sha256(stored).hexdigest() == first.sha256
    assert default_storage.open(second.file.name, "rb").read() == canonical_bytes(label_table_frame(seed_run))
    assert second.sha256 != first.sha256
    assert first.note == "first pass" and first.author is None


def test_canonical_file_is_sorted_json_lines_without_passage_text(seed_run):
    version = label_table_snapshot(run=seed_run, note="")
    lines = version_read(version).decode("utf-8").split("\n")

    assert lines[-1] == ""  # every line ends in \n
    rows = [json.loads(line) for line in lines[:-1]]
    assert [row["claim_index"] for row in rows] == [1, 2, 3, 4, 5]
    assert all(list(row) == sorted(CANONICAL_COLUMNS) for row in rows)
    assert lines[0].startswith('{"adjudicated_at":null,') and ", " not in lines[0].split('"claim":')[0]
    first = rows[0]
    assert first["label"] == "SUPPORTED"
    assert first["citations"] == "P1"
    assert first["reviewer"] == "seed-reviewer"
    assert first["status"] == "labeled"
    assert first["labeled_at"].endswith("Z")
    assert "passage" not in first


def test_snapshot_relabel_snapshot_diff_shows_exactly_the_changed_rows(seed_run):
    claims = {c.index: c for c in Claim.objects.filter(answer__run=seed_run)}
    v1 = label_table_snapshot(run=seed_run, note="before")
    # Claim 2 flips SUPPORTED → UNSUPPORTED; claim 3 keeps UNSUPPORTED with a new
    # justification; claim 5 is removed; a new claim 6 (uncited) is added.
    relabel(claims[2], "seed-reviewer", LabelValue.UNSUPPORTED, "P1 says twice as long, not doubling.")
    relabel(claims[3], "seed-reviewer", LabelValue.UNSUPPORTED, "P2 is about expired tokens only.")
    claims[5].delete()
    added = ClaimFactory(answer=claims[1].answer, index=6, text="Backups are encrypted.")
    v2 = label_table_snapshot(run=seed_run, note="after")

    diff = version_diff(old=v1, new=v2)

    assert (diff.old_rows, diff.new_rows) == (5, 5)
    assert [(row.kind, row.claim_index) for row in diff.rows] == [
        ("changed", 2), ("changed", 3), ("removed", 5), ("added", 6)]
    assert diff.unchanged == 2  # claims 1 and 4
    flip = diff.rows[0]
    assert flip.changed_fields == ["label", "justification", "reviewer_labels"]
    assert flip.reviewer_changes == ["seed-reviewer: SUPPORTED → UNSUPPORTED"]
    assert (flip.old_label, flip.new_label) == ("SUPPORTED", "UNSUPPORTED")
    assert flip.justification_change.new == "P1 says twice as long, not doubling."
    assert diff.rows[1].changed_fields == ["justification", "reviewer_labels"]
    assert diff.rows[1].reviewer_changes == ["seed-reviewer: justification edited"]
    assert diff.rows[3].claim_id == added.pk and diff.rows[3].new_label == "UNCITED"
    assert diff.label_flips == [("SUPPORTED", "UNSUPPORTED", 1)]


def test_diff_reports_claim_text_and_citation_changes():
    """Pure function on two frames: the text of claim 1 and the citations of
    claim 2 changed; claim 3 is identical."""
    import pandas as pd

    base = {"claim_id": [1, 2, 3], "question_id": ["q"] * 3, "claim_index": [1, 2, 3],
            "claim": ["A.", "B.", "C."], "citations": ["1", "2", ""], "cited_span": ["", "", ""],
            "label": ["SUPPORTED", "SUPPORTED", "UNCITED"], "justification": ["", "", ""],
            "reviewer": ["ann", "ann", ""]}
    old = pd.DataFrame(base)
    new = pd.DataFrame(base | {"claim": ["A, reworded.", "B.", "C."], "citations": ["1", "2, 3", ""]})

    diff = diff_label_tables(old, new)

    assert [(r.claim_id, r.changed_fields) for r in diff.rows] == [(1, ["claim"]), (2, ["citations"])]
    assert diff.rows[0].claim_change.old == "A." and diff.rows[1].other_changes == ["citations 2 → 2, 3"]
    assert diff.unchanged == 1


def test_tampered_version_file_is_detected(seed_run):
    version = label_table_snapshot(run=seed_run, note="")
    path = default_storage.path(version.file.name)
    content = open(path, "rb").read()
    assert version_read(version) == content

    with open(path, "wb") as handle:
        handle.write(content.replace(b'"label":"UNSUPPORTED"', b'"label":"SUPPORTED"', 1))

    with pytest.raises(VersionIntegrityError, match="the file was changed after the snapshot"):
        version_read(version)
    with pytest.raises(VersionIntegrityError):
        version_scores(version)


def test_missing_version_file_is_detected(seed_run):
    version = label_table_snapshot(run=seed_run, note="")
    default_storage.delete(version.file.name)

    with pytest.raises(VersionIntegrityError, match="cannot be read"):
        version_table(version)


def test_version_scores_are_those_of_the_frozen_table(seed_run):
    """Seed: 5/5 cited, 3 SUPPORTED of 5 labeled → coverage 1.0, support 0.6.
    Relabeling after the snapshot changes the current table, not v1."""
    version = label_table_snapshot(run=seed_run, note="")
    relabel(Claim.objects.get(answer__run=seed_run, index=3), "seed-reviewer", LabelValue.SUPPORTED, "")

    metrics = version_scores(version)

    assert str(metrics.coverage) == "5/5 = 1.00" and metrics.coverage.value == 1.0
    assert str(metrics.support) == "3/5 = 0.60"
    assert str(version_scores(label_table_snapshot(run=seed_run, note=""))) != str(metrics)
    assert str(version_scores(LabelTableVersion.objects.get(run=seed_run, number=2)).support) == "4/5 = 0.80"


def test_version_scores_match_the_expertqa_figures(expertqa_project):
    """fixtures/README.md: rr_gs_gpt4 has 162 claims, 123 cited, 110 of
    123 labeled cited SUPPORTED; per-answer means 0.7787 and 0.8092."""
    run = expertqa_project.runs.get(name="rr_gs_gpt4")

    metrics = version_scores(label_table_snapshot(run=run, note="human labels"))

    assert str(metrics.coverage) == "123/162 = 0.76"
    assert str(metrics.support) == "110/123 = 0.89"
    assert round(metrics.mean_coverage, 4) == 0.7787
    assert round(metrics.mean_support, 4) == 0.8092


def test_snapshot_command_records_author_and_note(seed_run, capsys):
    ReviewerFactory(username="carol")

    call_command("snapshot", run=seed_run.name, project="seed", note="adjudicated", author="carol")

    version = LabelTableVersion.objects.get(run=seed_run)
    assert (version.number, version.author.username, version.note) == (1, "carol", "adjudicated")
    out = capsys.readouterr().out
    assert f"version 1: 5 claims, 5 labels, sha256 {version.sha256}" in out


def test_snapshot_command_rejects_unknown_author_and_run(seed_run):
    with pytest.raises(CommandError, match="no reviewer 'nobody'"):
        call_command("snapshot", run=seed_run.name, project="seed", note="x", author="nobody")
    with pytest.raises(CommandError, match="has no run 'missing'"):
        call_command("snapshot", run="missing", project="seed", note="x")
    assert LabelTableVersion.objects.count() == 0


# ------------------------------------------------------------------ pages


@pytest.fixture
def member(seed_run, reviewer):
    seed_run.project.members.add(reviewer)
    return reviewer


def urls(run: Run) -> dict[str, str]:
    kwargs = {"project_slug": run.project.slug, "run_name": run.name}
    return {name: reverse(name, kwargs=kwargs) for name in ("version_list", "version_create", "version_diff")}


def test_save_version_button_creates_a_version_by_the_logged_in_reviewer(client, seed_run, member):
    client.force_login(member)

    response = client.post(urls(seed_run)["version_create"], {"note": "after round 1"})

    assert response.status_code == 302 and response["Location"] == urls(seed_run)["version_list"]
    version = LabelTableVersion.objects.get(run=seed_run)
    assert (version.number, version.author, version.note) == (1, member, "after round 1")
    page = client.get(urls(seed_run)["version_list"]).content.decode()
    assert "Saved version 1: 5 claims, 5 labels" in page
    assert "5/5 = 1.00" in page and "3/5 = 0.60" in page
    assert client.get(urls(seed_run)["version_create"]).status_code == 405


def test_versions_cannot_be_changed_or_deleted_through_the_app(client, seed_run, member, admin_client):
    version = label_table_snapshot(run=seed_run, note="")
    client.force_login(member)
    file_url = reverse("version_file", kwargs={"project_slug": "seed", "run_name": seed_run.name, "number": 1})

    assert client.post(file_url).status_code == 405
    assert client.delete(file_url).status_code == 405
    assert admin_client.get(reverse("admin:labeling_labeltableversion_delete", args=[version.pk])).status_code == 403
    response = admin_client.post(reverse("admin:labeling_labeltableversion_change", args=[version.pk]),
                                 {"note": "rewritten"})
    assert response.status_code == 403
    version.refresh_from_db()
    assert version.note == ""


def test_version_list_shows_altered_files_and_refuses_their_download(client, seed_run, member):
    good = label_table_snapshot(run=seed_run, note="good")
    relabel(Claim.objects.get(answer__run=seed_run, index=1), "seed-reviewer", LabelValue.SUPPORTED, "checked")
    bad = label_table_snapshot(run=seed_run, note="bad")
    with open(default_storage.path(bad.file.name), "ab") as handle:
        handle.write(b"{}\n")
    client.force_login(member)

    page = client.get(urls(seed_run)["version_list"]).content.decode()
    download = client.get(reverse("version_file", kwargs={"project_slug": "seed", "run_name": seed_run.name,
                                                          "number": bad.number}))
    good_download = client.get(reverse("version_file", kwargs={"project_slug": "seed", "run_name": seed_run.name,
                                                               "number": good.number}))

    assert "file altered" in page and "the file was changed after the snapshot" in page
    assert download.status_code == 302
    assert good_download.status_code == 200 and good_download.content == version_read(good)


def test_missing_version_file_error_names_the_storage_file_never_the_server_path(client, seed_run, member,
                                                                                  media_root):
    """The message shows the storage name (label_tables/seed/run-N/v1-….jsonl)
    and why it failed, on the version list, the download and the diff page."""
    first = label_table_snapshot(run=seed_run, note="")
    relabel(Claim.objects.get(answer__run=seed_run, index=1), "seed-reviewer", LabelValue.SUPPORTED, "checked")
    label_table_snapshot(run=seed_run, note="")
    default_storage.delete(first.file.name)
    assert first.file.name.startswith("label_tables/seed/")
    reason = f"its file {first.file.name!r} cannot be read: it is missing from storage"
    client.force_login(member)

    with pytest.raises(VersionIntegrityError) as failure:
        version_read(first)
    page = client.get(urls(seed_run)["version_list"]).content.decode()
    download = client.get(reverse("version_file", kwargs={"project_slug": "seed", "run_name": seed_run.name,
                                                          "number": 1}), follow=True).content.decode()
    diff = client.get(urls(seed_run)["version_diff"]).content.decode()

    assert failure.value.reason == reason
    assert str(failure.value) == f"label table version 1 of run 'seed-coverage-support' failed verification: {reason}"
    for body in (page, download, diff):
        assert first.file.name in body
        assert "cannot be read: it is missing from storage" in body
        assert str(media_root) not in body and "Errno" not in body

def test_version_list_is_hidden_from_non_members(client, seed_run, reviewer):
    client.force_login(reviewer)
    assert client.get(urls(seed_run)["version_list"]).status_code == 404


def test_version_list_htmx_returns_the_table_fragment(client, seed_run, member):
    label_table_snapshot(run=seed_run, note="x")
    client.force_login(member)

    response = client.get(urls(seed_run)["version_list"], headers={"HX-Request": "true"})

    body = response.content.decode()
    assert response.status_code == 200 and "<html" not in body
    assert body.lstrip().startswith('<div id="version-table">') and "v1" in body


@pytest.mark.parametrize("versions", [5, 500])
def test_version_list_query_budget(client, seed_run, member, django_assert_max_num_queries, versions):
    # Versions are written directly: their file is one shared table.
    first = label_table_snapshot(run=seed_run, note="")
    LabelTableVersion.objects.bulk_create([
        LabelTableVersion(run=seed_run, number=n, note=f"v{n}", row_count=5, label_count=5, sha256=first.sha256,
                          file=first.file.name)
        for n in range(2, versions + 1)
    ])
    client.force_login(member)
    # session + user (2), the run with its project, role and label state (1), versions with
    # authors (1); then, once per label state, the current table's figures (the run's summary
    # row, 11: claims version, answers, questions with gold, claims, their texts and factual
    # marks, the label state with the stamps since the kept labels, labels, their reviewers,
    # adjudications, citations, citation judgments) and its claim count (1) = 16, whatever the
    # number of versions; 4 while the run's state stands.
    with django_assert_max_num_queries(16):
        response = client.get(urls(seed_run)["version_list"])
    assert response.content.decode().count('class="num version-number"><strong>v') == versions
    with django_assert_max_num_queries(4):
        again = client.get(urls(seed_run)["version_list"])
    assert (again.context["current_rows"], again.context["current"]) == (5, response.context["current"])


def test_diff_page_lists_changed_rows_and_htmx_returns_fragment(client, seed_run, member):
    label_table_snapshot(run=seed_run, note="before")
    relabel(Claim.objects.get(answer__run=seed_run, index=4), "seed-reviewer", LabelValue.UNSUPPORTED,
            "<b>P3</b> only says logs exist.")
    label_table_snapshot(run=seed_run, note="after")
    client.force_login(member)

    page = client.get(urls(seed_run)["version_diff"]).content.decode()
    fragment = client.get(urls(seed_run)["version_diff"] + "?old=1&new=2", headers={"HX-Request": "true"})

    assert "v1</strong>" in page and "v2</strong>" in page
    assert page.count('class="diff-changed"') == 1
    # Escaped, never rendered as markup.
    assert "&lt;b&gt;P3&lt;/b&gt; only says logs exist." in page and "<b>P3</b>" not in page
    assert "<html" not in fragment.content.decode() and 'class="diff-changed"' in fragment.content.decode()


def test_diff_page_asks_for_two_versions(client, seed_run, member):
    client.force_login(member)
    label_table_snapshot(run=seed_run, note="only one")

    page = client.get(urls(seed_run)["version_diff"]).content.decode()

    assert "Save at least two versions" in page


def test_label_table_rows_show_agreement_disagreement_and_uncited_claims(db):
    """Two reviewers agree on claim 1, disagree on claim 2; claim 3 cites
    nothing; claim 4 is cited and unlabeled."""
    answer = AnswerFactory()
    claims = [ClaimFactory(answer=answer, index=i) for i in (1, 2, 3, 4)]
    for claim in (claims[0], claims[1], claims[3]):
        CitationFactory(claim=claim)
    ann, bob = ReviewerFactory(username="ann"), ReviewerFactory(username="bob")
    LabelFactory(claim=claims[0], reviewer=bob, value="SUPPORTED", justification="clear")
    LabelFactory(claim=claims[0], reviewer=ann, value="SUPPORTED", justification="")
    LabelFactory(claim=claims[1], reviewer=ann, value="SUPPORTED")
    LabelFactory(claim=claims[1], reviewer=bob, value="UNSUPPORTED", justification="weaker")

    table = label_table_frame(answer.run)
    bob_table = label_table_frame(answer.run, reviewer="bob")

    rows = table[["label", "reviewer", "justification", "status"]].values.tolist()
    assert rows == [
        ["SUPPORTED", "ann, bob", "clear", "labeled"],
        [None, "ann, bob", "", "disagreement"],
        ["UNCITED", "", "", "uncited"],
        [None, "", "", "pending"],
    ]
    assert bob_table["label"].tolist() == ["SUPPORTED", "UNSUPPORTED", "UNCITED", None]
    assert bob_table["justification"].tolist() == ["clear", "weaker", "", ""]


def bulk_run(claims: int) -> Run:
    """A run of one answer with ``claims`` cited claims, each SUPPORTED by ann."""
    from labeling.models import Citation, Passage

    answer = AnswerFactory(run__project__slug="bulk")
    passage = Passage.objects.create(answer=answer, passage_id="P1", position=0, source="doc", text="Evidence.")
    made = Claim.objects.bulk_create([Claim(answer=answer, index=i, text=f"Claim {i}.") for i in range(1, claims + 1)])
    Citation.objects.bulk_create([Citation(claim=c, passage=passage, position=0, cited_id="P1") for c in made])
    ann = ReviewerFactory(username="ann")
    Label.objects.bulk_create([Label(claim=c, reviewer=ann, value="SUPPORTED", claim_revision=1) for c in made])
    return Run.objects.select_related("project").get(pk=answer.run_id)


@pytest.mark.parametrize("claims", [5, 500])
def test_diff_page_query_budget(client, reviewer, django_assert_max_num_queries, claims):
    run = bulk_run(claims)
    run.project.members.add(reviewer)
    label_table_snapshot(run=run, note="all supported")
    Label.objects.filter(claim__answer__run=run).update(value="UNSUPPORTED", justification="weaker")
    label_table_snapshot(run=run, note="all unsupported")
    client.force_login(reviewer)
    # session + user (2), run with project (1), membership (1), versions with
    # authors (1) = 5; both tables come from the version files.
    with django_assert_max_num_queries(5):
        response = client.get(urls(run)["version_diff"])
    assert response.content.decode().count('class="diff-changed"') == claims


def test_downloads_name_non_ascii_runs_with_rfc_6266_filename_star(client, seed_run, member):
    """A run named "Prüfung – 日本": the name goes through
    get_valid_filename (spaces → "_", the dash dropped) and then into
    ``filename*=utf-8''…`` percent-encoded UTF-8 (RFC 6266/5987), which
    browsers decode; a bare ``filename="…"`` with those characters came out
    MIME-encoded (garbled) in the header."""
    from labeling.importers.load import run_import

    run_import(project=seed_run.project, source=SEED, run_name="Prüfung – 日本")
    run = Run.objects.get(project=seed_run.project, name="Prüfung – 日本")
    label_table_snapshot(run=run, note="")
    client.force_login(member)
    stem = "seed_Prüfung__日本"
    encoded = "seed_Pr%C3%BCfung__%E6%97%A5%E6%9C%AC"
    assert quote(stem) == encoded

    version = client.get(reverse("version_file", kwargs={"project_slug": "seed", "run_name": run.name, "number": 1}))
    export = client.get(reverse("label_export", kwargs={"project_slug": "seed", "run_name": run.name}),
                        {"format": "csv"})
    compare = client.get(reverse("run_compare_xlsx", kwargs={"project_slug": "seed"}),
                         {"a": seed_run.name, "b": run.name, "threshold": "0.85"})

    assert version["Content-Disposition"] == f"attachment; filename*=utf-8''{encoded}_canonical_v1.jsonl"
    assert export["Content-Disposition"] == f"attachment; filename*=utf-8''{encoded}_labels.csv"
    assert compare["Content-Disposition"] == (
        "attachment; filename*=utf-8''seed-seed-coverage-support-vs-Pr%C3%BCfung__%E6%97%A5%E6%9C%AC.xlsx")
    assert b"".join(export.streaming_content).startswith(b"\xef\xbb\xbfrun,")


def test_snapshot_of_an_unchanged_table_is_refused_and_creates_nothing(seed_run):
    first = label_table_snapshot(run=seed_run, note="first")

    with pytest.raises(ValidationError) as refused:
        label_table_snapshot(run=seed_run, note="again")

    assert refused.value.code == SNAPSHOT_UNCHANGED
    assert refused.value.messages == [
        f"The label table is unchanged since version 1 (SHA-256 {first.sha256[:12]}…): no new version saved."]
    assert list(LabelTableVersion.objects.values_list("number", flat=True)) == [1]
    assert sorted(default_storage.listdir(f"label_tables/seed/run-{seed_run.pk}")[1]) == [
        f"v1-{first.sha256[:12]}.jsonl"]
    relabel(Claim.objects.get(answer__run=seed_run, index=1), "seed-reviewer", LabelValue.SUPPORTED, "checked")
    assert label_table_snapshot(run=seed_run, note="after a change").number == 2


def test_snapshot_command_and_button_say_unchanged_since_version_n(client, seed_run, member):
    label_table_snapshot(run=seed_run, note="first")
    with pytest.raises(CommandError, match=r"unchanged since version 1 \(SHA-256 [0-9a-f]{12}…\): no new version"):
        call_command("snapshot", run=seed_run.name, project="seed", note="again")
    client.force_login(member)

    page = client.post(urls(seed_run)["version_create"], {"note": "again"}, follow=True).content.decode()

    assert "The label table is unchanged since version 1" in page
    assert LabelTableVersion.objects.filter(run=seed_run).count() == 1


def test_diff_shows_a_reviewers_change_that_the_agreed_label_hides(client, seed_run, member):
    """Claim 1: seed-reviewer SUPPORTED, bob UNSUPPORTED, carol SUPPORTED →
    the reviewers disagree, the row is pending. Carol switches to UNSUPPORTED:
    still a disagreement, so label, justification and reviewer columns read
    the same in both versions; the diff still names carol's change."""
    claim = Claim.objects.get(answer__run=seed_run, index=1)
    relabel(claim, "bob", LabelValue.UNSUPPORTED, "P1 is about restores.")
    relabel(claim, "carol", LabelValue.SUPPORTED, "")
    old = label_table_snapshot(run=seed_run, note="before")
    relabel(claim, "carol", LabelValue.UNSUPPORTED, "On second reading, no.")
    new = label_table_snapshot(run=seed_run, note="after")

    diff = version_diff(old=old, new=new)

    assert [(row.kind, row.claim_index, row.changed_fields) for row in diff.rows] == [
        ("changed", 1, ["reviewer_labels"])]
    row = diff.rows[0]
    assert (row.old_label, row.new_label) == (None, None)
    assert row.reviewer_changes == ["carol: SUPPORTED → UNSUPPORTED"]
    assert diff.unchanged == 4
    client.force_login(member)
    page = client.get(urls(seed_run)["version_diff"], {"old": 1, "new": 2}).content.decode()
    assert "carol: SUPPORTED → UNSUPPORTED" in page


def test_versions_saved_without_reviewer_labels_still_read_and_diff(seed_run):
    """A version file written before reviewer_labels was stored reads back
    with reviewer_labels None, and a diff against it compares the agreed
    columns only (no row differs merely for lacking the per-reviewer data)."""
    table = label_table_frame(seed_run, with_passages=False)
    earlier = table_from_canonical(b"".join(
        json.dumps({k: v for k, v in json.loads(line).items() if k != "reviewer_labels"}).encode() + b"\n"
        for line in canonical_bytes(table).splitlines()
    ))

    assert earlier["reviewer_labels"].tolist() == [None] * 5
    diff = diff_label_tables(earlier, table)
    assert (diff.rows, diff.unchanged) == ([], 5)


@pytest.mark.parametrize("name", sorted(path.name for path in FIXTURES_DIR.glob("*.jsonl")))
def test_the_version_list_shows_the_current_tables_own_figures(client, db, name):
    """The page's "current table" comes from the run's cached summary row (SPEC §7), not
    from the table built whole: on every answers file of fixtures/ (abstentions in
    expertqa_dev) and after a claim is marked not factual, its claims, coverage, support
    and pending are those of ``table_claim_metrics(label_table_frame(run))``."""
    from labeling.importers.load import project_for_import, run_import
    from labeling.review.citation_judgments import claim_set_factual

    project = project_for_import(slug="fixture")
    run_import(project=project, source=FIXTURES_DIR / name)
    lead = ReviewerFactory(username="fixture-lead")
    project.memberships.create(reviewer=lead, role="lead")
    client.force_login(lead)
    for run in Run.objects.filter(project=project):
        for step in ("imported", "a claim marked not factual"):
            if step != "imported":
                cited = Claim.objects.filter(answer__run=run, citations__isnull=False).order_by("pk").first()
                claim_set_factual(claim=Claim.objects.select_related("answer__run__project").get(pk=cited.pk),
                                  factual=False)
            table = label_table_frame(run, with_passages=False)
            expected = table_claim_metrics(table)
            context = client.get(urls(run)["version_list"]).context
            shown = context["current"]
            assert (context["current_rows"], shown.coverage, shown.support, shown.pending) == (
                len(table), expected.coverage, expected.support, expected.pending), (name, run.name, step)

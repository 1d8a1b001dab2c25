"""Applying a label table (``label_table_import_apply``): the offline round trip
(export, edit, import) loses nothing, the apply is all or nothing, keeps history,
never re-attributes a label, and asks before turning back a label made in the app
after the file was exported."""

from __future__ import annotations

import io

import pytest
from django.core.exceptions import ValidationError
from openpyxl import load_workbook

from labeling.exports.label_table import LABEL_TABLE_COLUMNS, label_table_frame, table_claim_metrics
from labeling.importers.label_table import read_label_table
from labeling.models import Claim, Label, LabelValue
from labeling.review.claim_edits import claim_edit
from labeling.tables.label_import import NEWER_LABELS, LabelImportError, label_table_import_apply
from tests.label_table_files import (
    EXPORTED_AT,
    claim_ids,
    csv_bytes,
    edit_file,
    export,
    export_then_relabel_claim_2,
    import_seed_run,
    preview_of,
    seed_reviewer,
    sheet_rows,
)


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    """Uploads and version files in the test's own folder."""
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def seed_run(db):
    """The seed run (tests/label_table_files.py): claims 1–5 labeled by seed-reviewer, claim 6 uncited."""
    return import_seed_run()


@pytest.fixture
def alice(seed_run, reviewer):
    """``alice``, a member of the seed run's project, with no label yet (a reviewer, not a client)."""
    seed_run.project.members.add(reviewer)
    return reviewer


HYPERLINK = '=HYPERLINK("http://x","y")'
EDITS = {  # claim index → (label, justification) typed offline
    1: ("UNSUPPORTED", HYPERLINK),
    3: ("SUPPORTED", "naïve — “quoted” ✓\nsecond line"),
    5: ("UNSUPPORTED", "'leading apostrophe"),
}


@pytest.mark.parametrize("fmt", ["xlsx", "csv", "jsonl"])
def test_untouched_export_imports_as_no_change(seed_run, fmt):
    seed_reviewer = Label.objects.filter(claim__answer__run=seed_run).first().reviewer
    preview = preview_of(seed_run, seed_reviewer, export(seed_run, fmt), fmt)

    assert preview.issues == []
    assert (preview.rows, len(preview.changes), preview.unchanged, preview.blank) == (6, 0, 6, 0)


def test_xlsx_export_holds_the_table_cell_for_cell(seed_run):
    """The workbook's Labels sheet is the label table: every value comes back
    (an empty string is an empty cell, read as None)."""
    table = label_table_frame(seed_run)
    expected = [{column: (value if value != "" else None) for column, value in row.items()}
                for row in table[list(LABEL_TABLE_COLUMNS)].to_dict("records")]

    assert sheet_rows(export(seed_run, "xlsx")) == expected


@pytest.mark.parametrize("fmt", ["xlsx", "csv", "jsonl"])
def test_round_trip_export_edit_import_loses_nothing(seed_run, alice, fmt):
    before = label_table_frame(seed_run)
    edited = edit_file(export(seed_run, fmt, reviewer=alice.username), fmt, EDITS)

    preview = label_table_import_apply(run=seed_run, reviewer=alice, table_file=read_label_table(edited, format=fmt))

    assert [(c.claim_index, c.old_label, c.new_label, c.new_justification) for c in preview.changes] == [
        (index, None, label, justification) for index, (label, justification) in EDITS.items()]
    mine = label_table_frame(seed_run, reviewer=alice.username)
    by_index = {row["claim_index"]: row for row in mine.to_dict("records")}
    for index, (label, justification) in EDITS.items():
        assert (by_index[index]["label"], by_index[index]["justification"]) == (label, justification)
        assert by_index[index]["reviewer"] == "alice"
    assert [by_index[i]["label"] for i in (2, 4, 6)] == [None, None, "UNCITED"]
    # Everything but alice's labels is as before: claims, ids, citations, revisions.
    fixed = ["claim_id", "claim_index", "claim", "citations", "cited_span", "claim_revision", "question_id"]
    assert mine[fixed].equals(before[fixed])
    # Exporting alice's table again gives back exactly what was typed.
    again = edit_file(export(seed_run, fmt, reviewer=alice.username), fmt, {})
    assert preview_of(seed_run, alice, again, fmt).changes == []
    assert preview_of(seed_run, alice, edited, fmt).changes == []


def test_reimported_xlsx_keeps_the_formula_text_as_text(seed_run, alice):
    edited = edit_file(export(seed_run, "xlsx", reviewer="alice"), "xlsx", EDITS)
    label_table_import_apply(run=seed_run, reviewer=alice, table_file=read_label_table(edited, format="xlsx"))

    sheet = load_workbook(io.BytesIO(export(seed_run, "xlsx", reviewer="alice")))["Labels"]

    assert sheet["J2"].value == HYPERLINK and sheet["J2"].data_type == "s"


def test_rows_of_another_reviewer_are_refused_never_reattributed(seed_run, alice):
    """The agreed table shows seed-reviewer's labels on the 5 cited claims: imported by alice,
    each of those rows is refused (an import never gives one reviewer's label to another) and
    nothing is written; the uncited claim's row names nobody."""
    edited = edit_file(export(seed_run, "xlsx"), "xlsx", {2: ("UNSUPPORTED", "P1 says twice, not doubling")})

    with pytest.raises(LabelImportError) as failure:
        label_table_import_apply(run=seed_run, reviewer=alice, table_file=read_label_table(edited, format="xlsx"))

    assert [(issue.field, issue.line) for issue in failure.value.issues] == [("reviewer", line) for line in
                                                                            range(2, 7)]
    assert failure.value.issues[0].reason.startswith(
        "the row is seed-reviewer's label, not alice's: an import never gives one reviewer's label to another.")
    assert Label.objects.filter(reviewer=alice).count() == 0


def test_apply_keeps_history_and_moves_the_current_label(seed_run, alice):
    claim = Claim.objects.get(answer__run=seed_run, index=1)
    old = Label.objects.create(claim=claim, reviewer=alice, value="SUPPORTED", justification="first look",
                               claim_revision=1)
    edited = edit_file(export(seed_run, "csv", reviewer="alice"), "csv", {1: ("UNSUPPORTED", "second look")})

    label_table_import_apply(run=seed_run, reviewer=alice, table_file=read_label_table(edited, format="csv"))

    labels = list(Label.objects.filter(claim=claim, reviewer=alice).order_by("id"))
    assert [(label.value, label.justification, label.is_current) for label in labels] == [
        ("SUPPORTED", "first look", False), ("UNSUPPORTED", "second look", True)]
    assert labels[0].pk == old.pk


def test_applying_changes_the_score(seed_run, alice):
    """seed-reviewer alone: support 3/5. Alice agrees on claims 1–5 but says
    claim 3 is SUPPORTED: claim 3 is then disputed (pending) → support 3/4."""
    rows = {i: ("SUPPORTED" if i in (1, 2, 3, 4) else "UNSUPPORTED", "checked") for i in range(1, 6)}
    edited = edit_file(export(seed_run, "jsonl", reviewer="alice"), "jsonl", rows)
    assert str(table_claim_metrics(label_table_frame(seed_run)).support) == "3/5 = 0.60"

    label_table_import_apply(run=seed_run, reviewer=alice, table_file=read_label_table(edited, format="jsonl"))

    metrics = table_claim_metrics(label_table_frame(seed_run))
    assert str(metrics.support) == "3/4 = 0.75" and metrics.pending == 1


def test_apply_is_all_or_nothing(seed_run, alice):
    edited = edit_file(export(seed_run, "csv", reviewer="alice"), "csv",
                       {1: ("UNSUPPORTED", "good row"), 2: ("UNSUPPORTED", "good row"), 4: ("UNCITED", "bad row")})
    before = Label.objects.count()

    with pytest.raises(LabelImportError) as failure:
        label_table_import_apply(run=seed_run, reviewer=alice, table_file=read_label_table(edited, format="csv"))

    assert [(i.line, i.field) for i in failure.value.issues] == [(5, "label")]
    assert Label.objects.count() == before
    assert not Label.objects.filter(reviewer=alice).exists()


def test_reupload_of_an_older_export_marks_each_row_that_would_turn_back_a_newer_label(seed_run):
    """Row 3 (claim 2) still reads SUPPORTED by seed-reviewer at 09:15; the app
    now has seed-reviewer's UNSUPPORTED, made later: a change, and newer.
    Row 5 (claim 4) was edited offline: a change, not newer."""
    exported = export_then_relabel_claim_2(seed_run)
    edited = edit_file(exported, "csv", {4: ("UNSUPPORTED", "only a weaker claim")})

    preview = preview_of(seed_run, seed_reviewer(), edited, "csv")

    assert [(change.line, change.new_label) for change in preview.changes] == [(3, "SUPPORTED"), (5, "UNSUPPORTED")]
    assert [change.line for change in preview.newer] == [3]
    name, value, when = preview.changes[0].newer
    assert (name, value) == ("seed-reviewer", "UNSUPPORTED") and when > EXPORTED_AT
    assert preview.changes[1].newer is None


def test_apply_needs_a_choice_about_newer_labels_then_skips_or_overwrites_them(seed_run):
    seed = seed_reviewer()
    exported = export_then_relabel_claim_2(seed_run)
    table_file = read_label_table(edit_file(exported, "csv", {4: ("UNSUPPORTED", "only a weaker claim")}),
                                  format="csv")

    def current():
        return sorted(Label.objects.filter(reviewer=seed, is_current=True).values_list("claim__index", "value"))

    before = current()
    assert before == [(1, "SUPPORTED"), (2, "UNSUPPORTED"), (3, "UNSUPPORTED"), (4, "SUPPORTED"),
                      (5, "UNSUPPORTED")]
    with pytest.raises(ValidationError) as refused:
        label_table_import_apply(run=seed_run, reviewer=seed, table_file=table_file)
    assert refused.value.code == NEWER_LABELS
    assert refused.value.messages == ["1 row(s) would turn back a label made after this file was exported (rows 3): "
                                      "choose to overwrite those labels or to skip those rows."]
    assert current() == before

    skipped = label_table_import_apply(run=seed_run, reviewer=seed, table_file=table_file, overwrite_newer=False)
    assert [change.line for change in skipped.skipped_newer] == [3]
    assert current() == [(1, "SUPPORTED"), (2, "UNSUPPORTED"), (3, "UNSUPPORTED"), (4, "UNSUPPORTED"),
                         (5, "UNSUPPORTED")]

    label_table_import_apply(run=seed_run, reviewer=seed, table_file=table_file, overwrite_newer=True)
    assert current() == [(1, "SUPPORTED"), (2, "SUPPORTED"), (3, "UNSUPPORTED"), (4, "UNSUPPORTED"),
                         (5, "UNSUPPORTED")]


def test_reviewers_own_label_changed_in_the_app_after_their_import_is_newer(seed_run, alice):
    """alice labels claim 5 offline and imports it; later she relabels it in
    the app. Her old file, uploaded again, would turn that back: line 5 is
    marked newer (her own label, made after the row's blank labeled_at)."""
    mine = edit_file(export(seed_run, "jsonl", reviewer="alice"), "jsonl", {5: ("SUPPORTED", "fine")})
    label_table_import_apply(run=seed_run, reviewer=alice, table_file=read_label_table(mine, format="jsonl"))
    claim = Claim.objects.get(answer__run=seed_run, index=5)
    Label.objects.filter(reviewer=alice).update(is_current=False)
    Label.objects.create(claim=claim, reviewer=alice, value=LabelValue.UNSUPPORTED, justification="no",
                         claim_revision=claim.revision)

    preview = preview_of(seed_run, alice, mine, "jsonl")

    assert [(change.line, change.old_label, change.new_label, change.newer[:2]) for change in preview.changes] == [
        (5, "UNSUPPORTED", "SUPPORTED", ("alice", "UNSUPPORTED"))]


def test_apply_refuses_a_row_whose_claim_was_reworded_after_the_preview_without_a_revision_column(seed_run, alice):
    """A file made by another tool: claim_id, label, justification, no
    claim_revision or claim text to catch a rewording. The preview checked
    claim 3 at revision 1; it is reworded before apply: row 2 is refused."""
    ids = claim_ids(seed_run)
    data = csv_bytes([["claim_id", "label", "justification"], [ids[3], "SUPPORTED", "P2 says so"]])
    preview = preview_of(seed_run, alice, data, "csv")
    assert preview.checked == {2: (ids[3], 1)} and len(preview.changes) == 1
    claim_edit(claim=Claim.objects.get(pk=ids[3]), text="Tokens never expire.")

    with pytest.raises(LabelImportError) as refused:
        label_table_import_apply(run=seed_run, reviewer=alice, table_file=read_label_table(data, format="csv"),
                                 checked=preview.checked)

    assert [str(issue) for issue in refused.value.issues] == [
        "line 2: claim: the claim changed since the preview (revision 1 → 2: its text or citations were edited); "
        "nothing was imported: upload the file again to see it as it is now"]
    assert not Label.objects.filter(reviewer=alice).exists()

"""``manage.py import_labels``: a preview, then ``--apply``; bad rows, an empty
file and newer labels in the app refuse the apply with the rows named."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from labeling.models import Label
from tests.label_table_files import edit_file, export, export_then_relabel_claim_2, import_seed_run, seed_reviewer


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


def test_import_labels_command_previews_then_applies(seed_run, alice, tmp_path, capsys):
    path = tmp_path / "alice.xlsx"
    path.write_bytes(edit_file(export(seed_run, "xlsx", reviewer="alice"), "xlsx", {5: ("SUPPORTED", "fine")}))

    call_command("import_labels", str(path), run=seed_run.name, project="seed", reviewer="alice")
    preview_out = capsys.readouterr().out
    assert not Label.objects.filter(reviewer=alice).exists()
    call_command("import_labels", str(path), run=seed_run.name, project="seed", reviewer="alice", apply=True)

    assert "row 6: seed-support-1 claim 5: none → SUPPORTED (justification changed)" in preview_out
    assert "preview only: 1 label(s) would change" in preview_out
    assert Label.objects.get(reviewer=alice).value == "SUPPORTED"


def test_import_labels_command_fails_on_bad_rows(seed_run, alice, tmp_path, capsys):
    path = tmp_path / "alice.csv"
    path.write_bytes(edit_file(export(seed_run, "csv", reviewer="alice"), "csv", {6: ("SUPPORTED", "x")}))

    with pytest.raises(CommandError, match="1 bad row"):
        call_command("import_labels", str(path), run=seed_run.name, project="seed", reviewer="alice", apply=True)
    assert "row 7: label: SUPPORTED on a claim without citations" in capsys.readouterr().err
    with pytest.raises(CommandError, match="no reviewer 'zed'"):
        call_command("import_labels", str(path), run=seed_run.name, project="seed", reviewer="zed")


def test_import_labels_command_says_the_file_has_no_rows(seed_run, alice, tmp_path):
    path = tmp_path / "empty.csv"
    path.write_bytes(b"claim_id,label,justification\n")

    with pytest.raises(CommandError, match=r"empty\.csv: the file has no rows below the header"):
        call_command("import_labels", str(path), run=seed_run.name, project="seed", reviewer="alice")
    assert not Label.objects.filter(reviewer=alice).exists()


def test_import_labels_command_needs_overwrite_or_skip_for_newer_labels(seed_run, tmp_path, capsys):
    path = tmp_path / "old.csv"
    path.write_bytes(export_then_relabel_claim_2(seed_run))
    seed = seed_reviewer()
    labels = Label.objects.filter(reviewer=seed).count()

    call_command("import_labels", str(path), run=seed_run.name, project="seed", reviewer="seed-reviewer")
    assert ("row 3: seed-support-1 claim 2: UNSUPPORTED → SUPPORTED (justification changed) [newer in the app: "
            "seed-reviewer's UNSUPPORTED of ") in capsys.readouterr().out
    with pytest.raises(CommandError, match="Run again with --overwrite-newer or --skip-newer"):
        call_command("import_labels", str(path), run=seed_run.name, project="seed", reviewer="seed-reviewer",
                     apply=True)
    call_command("import_labels", str(path), run=seed_run.name, project="seed", reviewer="seed-reviewer",
                 apply=True, skip_newer=True)
    assert "0 label(s) of seed-reviewer saved, 1 row(s) with a newer label skipped" in capsys.readouterr().out
    assert Label.objects.filter(reviewer=seed).count() == labels

"""The run's label import pages (labeling.views.label_tables: label_import,
label_import_apply): upload, preview, apply with a single-use token, the stored
upload's lifetime, newer labels and reworded claims between preview and apply,
and the preview's query budget."""

from __future__ import annotations

import os
import re
import time

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from labeling.importers.label_table import read_label_table
from labeling.models import Claim, Label
from labeling.review.claim_edits import claim_edit
from labeling.tables.import_preview import label_table_import_preview
from tests.counted_run import counted_run
from tests.factories import ReviewerFactory
from tests.label_table_files import (
    claim_ids,
    csv_bytes,
    edit_file,
    export,
    export_then_relabel_claim_2,
    import_seed_run,
    import_url,
    preview_of,
    seed_reviewer,
    stored_uploads,
    upload,
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


def test_upload_previews_then_apply_saves(client, seed_run, alice):
    client.force_login(alice)
    edited = edit_file(export(seed_run, "xlsx", reviewer="alice"), "xlsx", {3: ("SUPPORTED", "<script>x</script>")})

    page = client.post(import_url(seed_run), {"file": upload(edited, "mine.xlsx")}).content.decode()

    assert '<strong id="change-count">1</strong>' in page
    assert "&lt;script&gt;x&lt;/script&gt;" in page and "<script>x</script>" not in page
    assert not Label.objects.filter(reviewer=alice).exists()
    token = re.search(r'name="token" value="([^"]+)"', page).group(1)
    response = client.post(import_url(seed_run, "label_import_apply"), {"token": token})
    assert response.status_code == 302
    assert Label.objects.get(reviewer=alice).value == "SUPPORTED"
    after = client.get(response["Location"]).content.decode()
    assert "Imported 1 label as alice from mine.xlsx." in after
    # The token is single-use: its file is gone.
    assert client.post(import_url(seed_run, "label_import_apply"), {"token": token}).status_code == 302
    assert Label.objects.filter(reviewer=alice).count() == 1


def test_upload_with_bad_rows_shows_them_and_offers_no_apply(client, seed_run, alice):
    client.force_login(alice)
    edited = edit_file(export(seed_run, "csv", reviewer="alice"), "csv", {4: ("UNCITED", "")})

    response = client.post(import_url(seed_run), {"file": upload(edited, "mine.csv")},
                           headers={"HX-Request": "true"})

    body = response.content.decode()
    assert "<html" not in body and body.lstrip().startswith('<div id="import-preview"')
    assert ("<td class=\"num\" data-label=\"Row\">5</td><td data-label=\"Column\"><code>label</code></td>"
            "<td>UNCITED on a claim with 1 citation(s)") in body
    assert 'name="token"' not in body


def test_upload_size_limit_and_file_type(client, seed_run, alice, settings):
    client.force_login(alice)
    settings.CITELAB_MAX_UPLOAD_BYTES = 100

    too_big = client.post(import_url(seed_run), {"file": upload(b"x" * 101, "big.csv")}).content.decode()
    settings.CITELAB_MAX_UPLOAD_BYTES = 10_000
    wrong_type = client.post(import_url(seed_run), {"file": upload(b"x", "labels.pdf")}).content.decode()

    assert "big.csv is 101\xa0bytes; the limit is 100\xa0bytes (CITELAB_MAX_UPLOAD_MB)." in too_big
    assert "use a .xlsx, .csv or .jsonl file" in wrong_type


def test_apply_refuses_a_token_of_another_reviewer(client, seed_run, alice):
    client.force_login(alice)
    edited = edit_file(export(seed_run, "csv", reviewer="alice"), "csv", {1: ("UNSUPPORTED", "no")})
    page = client.post(import_url(seed_run), {"file": upload(edited, "mine.csv")}).content.decode()
    token = re.search(r'name="token" value="([^"]+)"', page).group(1)
    bob = ReviewerFactory(username="bob")
    seed_run.project.members.add(bob)
    client.force_login(bob)

    response = client.post(import_url(seed_run, "label_import_apply"), {"token": token}, follow=True)

    assert "That preview expired or is not yours" in response.content.decode()
    assert not Label.objects.filter(reviewer__in=[alice, bob]).exists()


@pytest.mark.parametrize("claims", [5, 500])
def test_import_preview_page_query_budget(client, reviewer, django_assert_max_num_queries, claims):
    from tests.test_label_tables import bulk_run

    run = bulk_run(claims)
    run.project.members.add(reviewer)
    client.force_login(reviewer)
    # The reviewer's own table: rows naming another reviewer would be refused.
    edited = edit_file(export(run, "csv", reviewer=reviewer.username), "csv",
                       {i: ("UNSUPPORTED", "weaker") for i in range(1, claims + 1)})
    # session + user (2), run with project (1), membership (1), claims (1), claims citing only
    # fabricated ids (1), reviewer's labels (1), current label table for the labeled_at check (6) = 13,
    # whatever the rows.
    with django_assert_max_num_queries(13):
        page = client.post(import_url(run), {"file": upload(edited, "all.csv")}).content.decode()
    assert f'<strong id="change-count">{claims}</strong>' in page
    assert page.count('data-label="Your label"') == claims


def test_upload_of_a_header_only_file_shows_that_it_has_no_rows(client, seed_run, alice):
    client.force_login(alice)

    page = client.post(import_url(seed_run), {"file": upload(b"claim_id,label\r\n", "mine.csv")}).content.decode()
    empty = client.post(import_url(seed_run), {"file": upload(b"", "mine.csv")}).content.decode()

    assert '<p class="message error" role="alert">the file has no rows below the header</p>' in page
    assert "Nothing to import" not in page and 'name="token"' not in page
    assert '<p class="message error" role="alert">the file has no rows: it is empty</p>' in empty


def test_applied_upload_is_deleted_from_storage(client, seed_run, alice):
    client.force_login(alice)
    edited = edit_file(export(seed_run, "csv", reviewer="alice"), "csv", {1: ("UNSUPPORTED", "no")})
    assert stored_uploads() == []

    page = client.post(import_url(seed_run), {"file": upload(edited, "mine.csv")}).content.decode()
    # The file and what its preview checked (row → claim, revision).
    assert [name.split(".", 1)[1] for name in stored_uploads()] == ["checked.json", "csv"]
    token = re.search(r'name="token" value="([^"]+)"', page).group(1)
    client.post(import_url(seed_run, "label_import_apply"), {"token": token})

    assert Label.objects.get(reviewer=alice).value == "UNSUPPORTED"
    assert stored_uploads() == []


def test_refused_apply_deletes_the_upload_too(client, seed_run, alice):
    """The database moves between preview and apply (claim 1 is edited), so
    the apply is refused and shows the rows; its stored file has no further use."""
    client.force_login(alice)
    edited = edit_file(export(seed_run, "csv", reviewer="alice"), "csv", {1: ("UNSUPPORTED", "no")})
    page = client.post(import_url(seed_run), {"file": upload(edited, "mine.csv")}).content.decode()
    token = re.search(r'name="token" value="([^"]+)"', page).group(1)
    claim_edit(claim=Claim.objects.get(answer__run=seed_run, index=1), text="Retries back off, slowly.")

    response = client.post(import_url(seed_run, "label_import_apply"), {"token": token})

    assert "the labels or claims changed since the preview" in response.content.decode()
    assert stored_uploads() == []


def test_new_preview_deletes_previews_older_than_a_day(client, seed_run, alice):
    """A 25-hour-old and a 1-hour-old stored preview: uploading a new file
    removes the first only (its token has expired) and stores the new one."""
    old = default_storage.save("label_imports/old.csv", ContentFile(b"x"))
    recent = default_storage.save("label_imports/recent.csv", ContentFile(b"x"))
    now = time.time()
    os.utime(default_storage.path(old), (now - 25 * 3600, now - 25 * 3600))
    os.utime(default_storage.path(recent), (now - 3600, now - 3600))
    client.force_login(alice)
    edited = edit_file(export(seed_run, "csv", reviewer="alice"), "csv", {1: ("UNSUPPORTED", "no")})
    assert stored_uploads() == ["old.csv", "recent.csv"]

    client.post(import_url(seed_run), {"file": upload(edited, "mine.csv")})

    left = stored_uploads()
    assert "old.csv" not in left and "recent.csv" in left and len(left) == 3  # + the new file and its checks


def test_import_page_shows_newer_rows_and_asks_which_way(client, seed_run):
    seed = seed_reviewer()
    seed_run.project.members.add(seed)
    exported = export_then_relabel_claim_2(seed_run)
    edited = edit_file(exported, "csv", {4: ("UNSUPPORTED", "only a weaker claim")})
    client.force_login(seed)

    page = client.post(import_url(seed_run), {"file": upload(edited, "old.csv")}).content.decode()

    assert '<strong id="newer-count">1</strong> newer in the app' in page
    assert "newer in the app: seed-reviewer's UNSUPPORTED of" in page
    assert page.count('type="radio" name="newer"') == 2
    token = re.search(r'name="token" value="([^"]+)"', page).group(1)
    again = client.post(import_url(seed_run, "label_import_apply"), {"token": token}).content.decode()
    assert "1 row(s) would turn back a label made after this file was exported (rows 3)" in again
    assert Label.objects.get(reviewer=seed, is_current=True, claim__index=4).value == "SUPPORTED"
    token = re.search(r'name="token" value="([^"]+)"', again).group(1)
    done = client.post(import_url(seed_run, "label_import_apply"), {"token": token, "newer": "skip"}, follow=True)
    assert ("Imported 1 label as seed-reviewer from old.csv; skipped 1 row with a newer label in the app."
            in done.content.decode())
    assert Label.objects.get(reviewer=seed, is_current=True, claim__index=4).value == "UNSUPPORTED"
    assert Label.objects.get(reviewer=seed, is_current=True, claim__index=2).value == "UNSUPPORTED"


def test_upload_then_reword_then_apply_is_refused_naming_the_row(client, seed_run, alice):
    ids = claim_ids(seed_run)
    data = csv_bytes([["claim_id", "label", "justification"], [ids[3], "SUPPORTED", "P2 says so"]])
    client.force_login(alice)
    page = client.post(import_url(seed_run), {"file": upload(data, "tool.csv")}).content.decode()
    token = re.search(r'name="token" value="([^"]+)"', page).group(1)
    claim_edit(claim=Claim.objects.get(pk=ids[3]), text="Tokens never expire.")

    refused = client.post(import_url(seed_run, "label_import_apply"), {"token": token}).content.decode()

    assert "Nothing was imported" in refused
    assert "the claim changed since the preview (revision 1 → 2" in refused
    assert not Label.objects.filter(reviewer=alice).exists()


def test_a_token_without_the_previews_checks_is_refused_not_applied(client, seed_run, alice):
    """A token signed before previews recorded their checks names only the
    file: apply refuses it (upload again) instead of applying unchecked rows."""
    from django.core import signing

    name = default_storage.save("label_imports/old.csv", ContentFile(edit_file(
        export(seed_run, "csv", reviewer="alice"), "csv", {1: ("UNSUPPORTED", "no")})))
    token = signing.dumps({"name": name, "run": seed_run.pk, "user": alice.pk, "format": "csv",
                           "filename": "old.csv"}, salt="citelab.label-import")
    client.force_login(alice)

    response = client.post(import_url(seed_run, "label_import_apply"), {"token": token}, follow=True)

    assert "That preview expired or is not yours: upload the file again." in response.content.decode()
    assert not Label.objects.filter(reviewer=alice).exists()


def test_import_preview_query_counts(db, django_assert_num_queries):
    """tests/counted_run.py's run: rev1's file keeps their label on q01's claim 1."""
    world = counted_run()
    claim = world.claims["q01"][0]

    def preview(rows, **kwargs):
        table_file = read_label_table(csv_bytes(rows), format="csv")
        return label_table_import_preview(run=world.run, reviewer=kwargs.pop("reviewer", world.rev1),
                                          table_file=table_file, **kwargs)

    header = ["claim_id", "label", "justification"]
    # The claims, the reviewer's current labels.
    with django_assert_num_queries(2):
        assert preview([header, [claim.pk, "SUPPORTED", "Said in P1."]]).issues == []
    # Judging citations: the citations' ids and the current judgments too.
    with django_assert_num_queries(4):
        preview([[*header, "judgments"], [claim.pk, "SUPPORTED", "Said in P1.", "[P1] FULL"]])
    # A row showing an adjudication: the current adjudications too.
    with django_assert_num_queries(3):
        preview([[*header, "adjudicated_by"], [claim.pk, "SUPPORTED", "Said in P1.", "lead"]])
    # A lead keeping the reviewers the file names: their role.
    with django_assert_num_queries(3):
        preview([[*header, "reviewer"], [claim.pk, "SUPPORTED", "Said in P1.", "rev1"]], reviewer=world.lead,
                keep_reviewers=True)
    # The exported table (labeled_at, judgments, an adjudication): 2 + 2 + 1 + the label table's 8 (its
    # claims and answers cached by the export, labeling.exports.structure).
    exported = export(world.run, "csv")
    with django_assert_num_queries(13):
        preview_of(world.run, world.rev1, exported, "csv")

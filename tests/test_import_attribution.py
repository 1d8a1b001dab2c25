"""Imports never re-attribute labels: a row is recorded under the reviewer it
names, or refused; leads may keep the file's reviewers or import adjudications."""

from __future__ import annotations

import csv
import io

import pytest
from django.core.management import CommandError, call_command

from labeling.models import Adjudication, Label, Membership, Reviewer, ReviewerKind
from tests.factories import ReviewerFactory
from tests.label_table_files import export, import_seed_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def seed_run(db):
    """The seed run (tests/label_table_files.py): claims 1–5 labeled by seed-reviewer, claim 6 uncited."""
    return import_seed_run()


@pytest.fixture
def alice(seed_run, reviewer):
    """``alice``, a member of the seed run's project, with no label yet (a reviewer, not a client)."""
    seed_run.project.members.add(reviewer)
    return reviewer


def table(run, tmp_path, rows: dict[int, tuple[str, str, str]], **export_kwargs):
    """The run's exported CSV with ``rows`` (claim_index → label, justification, reviewer) rewritten."""
    reader = csv.DictReader(io.StringIO(export(run, "csv", **export_kwargs).decode("utf-8-sig")))
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=reader.fieldnames)
    writer.writeheader()
    for row in reader:
        if int(row["claim_index"]) in rows:
            row["label"], row["justification"], row["reviewer"] = rows[int(row["claim_index"])]
        writer.writerow(row)
    path = tmp_path / "labels.csv"
    path.write_text(out.getvalue(), encoding="utf-8")
    return str(path)


def _import(path, *args):
    out, err = io.StringIO(), io.StringIO()
    call_command("import_labels", path, "--run", "seed-coverage-support", "--project", "seed", *args,
                 stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_rows_naming_another_reviewer_are_refused_by_name(seed_run, alice, tmp_path):
    path = table(seed_run, tmp_path, {1: ("UNSUPPORTED", "weaker", "bob")}, reviewer=alice.username)
    with pytest.raises(CommandError, match="1 bad row"):
        _import(path, "--reviewer", alice.username, "--apply")
    assert not Label.objects.filter(reviewer=alice).exists()


def test_the_refusal_says_whose_row_it_is_and_what_to_do(seed_run, alice, tmp_path):
    path = table(seed_run, tmp_path, {1: ("UNSUPPORTED", "weaker", "bob")}, reviewer=alice.username)
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("import_labels", path, "--run", "seed-coverage-support", "--project", "seed",
                     "--reviewer", "alice", stderr=err)
    assert ("row 2: reviewer: the row is bob's label, not alice's: an import never gives one reviewer's label "
            "to another. Export your own labels (export_labels --reviewer alice), or a lead imports with "
            "--keep-reviewers") in err.getvalue()


def test_lead_keeps_the_reviewers_a_file_names(seed_run, alice, tmp_path):
    """alice leads. Row 1 names bob (an existing human), row 2 names carol (new: created external)."""
    bob = ReviewerFactory(username="bob")
    path = table(seed_run, tmp_path, {1: ("UNSUPPORTED", "weaker", "bob"), 2: ("SUPPORTED", "", "carol")},
                 reviewer=alice.username)
    out, _err = _import(path, "--reviewer", alice.username, "--keep-reviewers", "--apply")
    assert "2 label(s) of the reviewers the file names saved" in out
    assert list(Label.objects.filter(reviewer=bob, is_current=True).values_list("claim__index", "value")) == [
        (1, "UNSUPPORTED")]
    carol = Reviewer.objects.get(username="carol")
    assert (carol.kind, carol.has_usable_password()) == (ReviewerKind.EXTERNAL, False)
    assert not Label.objects.filter(reviewer=alice).exists()


def test_only_a_lead_keeps_reviewers_or_adjudicates(seed_run, tmp_path):
    rita = ReviewerFactory(username="rita")
    Membership.objects.create(project=seed_run.project, reviewer=rita, role="reviewer")
    path = table(seed_run, tmp_path, {1: ("UNSUPPORTED", "weaker", "bob")}, reviewer="rita")
    for flag in ("--keep-reviewers", "--adjudicate"):
        with pytest.raises(CommandError, match="rita does not lead project seed"):
            _import(path, "--reviewer", "rita", flag)


def test_rows_are_compared_with_the_importers_own_label_not_the_agreed_one(seed_run, alice, tmp_path):
    """seed-reviewer labeled claim 1 SUPPORTED (the agreed label). alice has no label: her row
    saying SUPPORTED is her new label, not "unchanged"."""
    path = table(seed_run, tmp_path, {1: ("SUPPORTED", "", "")}, reviewer=alice.username)
    out, _err = _import(path, "--reviewer", alice.username, "--apply")
    assert "row 2: seed-support-1 claim 1: none → SUPPORTED" in out
    assert list(Label.objects.filter(reviewer=alice).values_list("claim__index", "value")) == [(1, "SUPPORTED")]


def test_lead_imports_adjudications_that_then_count(seed_run, alice, tmp_path):
    """Seed: claims 1, 2, 4 SUPPORTED, 3, 5 UNSUPPORTED → support 3/5. alice adjudicates claim 3
    SUPPORTED (reason given) → 4/5; a row without a reason is refused."""
    path = table(seed_run, tmp_path, {3: ("SUPPORTED", "the span says so", "")}, reviewer=alice.username)
    _import(path, "--reviewer", alice.username, "--adjudicate", "--apply")
    assert list(Adjudication.objects.values_list("claim__index", "value", "reason", "lead__username")) == [
        (3, "SUPPORTED", "the span says so", alice.username)]
    out = io.StringIO()
    call_command("score", "--run", "seed-coverage-support", "--project", "seed", "--format", "json", stdout=out)
    assert '"adjudicated": 1' in out.getvalue()
    assert '"supported": 4' in out.getvalue()
    blank = table(seed_run, tmp_path, {4: ("UNSUPPORTED", "", "")}, reviewer=alice.username)
    with pytest.raises(CommandError, match="1 bad row"):
        _import(blank, "--reviewer", alice.username, "--adjudicate", "--apply")

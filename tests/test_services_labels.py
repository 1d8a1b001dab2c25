"""Label services (SPEC §3): label_save,
label_undo, reviewer_create and the add_reviewer command. Each test shows the
state before and after."""

from __future__ import annotations

import pytest
from django.contrib.auth import authenticate
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from labeling.models import Label, LabelValue, Reviewer
from labeling.review.label_writes import LabelConflict, label_save, label_undo
from labeling.team.reviewers import reviewer_create
from tests.factories import (
    AnswerFactory,
    CitationFactory,
    ClaimFactory,
    LabelFactory,
    ProjectFactory,
    ReviewerFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def cited_claim():
    answer = AnswerFactory(text="Paris is the capital of France.")
    claim = ClaimFactory(answer=answer, index=1, text="Paris is the capital of France.", start=0, end=30)
    CitationFactory(claim=claim)
    return claim


@pytest.fixture
def uncited_claim():
    return ClaimFactory(index=1, text="The sky is blue.")


def save(claim, reviewer, value, justification="", **kwargs):
    current = Label.objects.filter(claim=claim, reviewer=reviewer, is_current=True).first()
    kwargs.setdefault("base_revision", claim.revision)
    kwargs.setdefault("base_label_id", current.pk if current else None)
    return label_save(claim=claim, reviewer=reviewer, value=value, justification=justification, **kwargs)


def current_labels(claim):
    return list(Label.objects.filter(claim=claim, is_current=True).values_list("reviewer__username", "value"))


def test_first_label_is_saved_as_current(cited_claim, reviewer):
    assert current_labels(cited_claim) == []

    label = save(cited_claim, reviewer, "SUPPORTED")

    assert current_labels(cited_claim) == [("alice", "SUPPORTED")]
    assert (label.claim_revision, label.is_current, label.is_stale, label.justification) == (1, True, False, "")


def test_relabel_keeps_the_old_label_in_history(cited_claim, reviewer):
    first = save(cited_claim, reviewer, "SUPPORTED")

    second = save(cited_claim, reviewer, "UNSUPPORTED", "  the passage only says it is a city  ")

    first.refresh_from_db()
    assert (first.is_current, first.is_stale) == (False, False)
    assert (second.value, second.justification, second.is_current) == (
        "UNSUPPORTED", "the passage only says it is a city", True)
    assert Label.objects.filter(claim=cited_claim).count() == 2


def test_saving_the_same_label_twice_creates_nothing(cited_claim, reviewer):
    first = save(cited_claim, reviewer, "SUPPORTED")

    # A double submit from a stale form (base_label_id None) is harmless.
    again = label_save(claim=cited_claim, reviewer=reviewer, value="SUPPORTED", justification="",
                       base_revision=1, base_label_id=None)

    assert again.pk == first.pk
    assert Label.objects.filter(claim=cited_claim).count() == 1


def test_two_reviewers_each_keep_their_own_label(cited_claim, reviewer):
    bob = ReviewerFactory(username="bob")
    save(cited_claim, reviewer, "SUPPORTED")

    save(cited_claim, bob, "UNSUPPORTED", "partial support only")

    assert sorted(current_labels(cited_claim)) == [("alice", "SUPPORTED"), ("bob", "UNSUPPORTED")]


def test_second_tab_cannot_silently_overwrite_the_first(cited_claim, reviewer):
    # Both tabs rendered the form while the reviewer had no label.
    tab_a = tab_b = {"base_revision": 1, "base_label_id": None}
    saved_in_a = label_save(claim=cited_claim, reviewer=reviewer, value="SUPPORTED", justification="", **tab_a)

    with pytest.raises(LabelConflict) as caught:
        label_save(claim=cited_claim, reviewer=reviewer, value="UNSUPPORTED", justification="no", **tab_b)

    assert caught.value.newer.pk == saved_in_a.pk
    assert "another tab" in caught.value.messages[0]
    assert current_labels(cited_claim) == [("alice", "SUPPORTED")]
    assert Label.objects.filter(claim=cited_claim).count() == 1


def test_label_on_an_edited_claim_revision_is_refused(cited_claim, reviewer):
    cited_claim.revision = 2
    cited_claim.save()

    with pytest.raises(LabelConflict, match="was edited"):
        label_save(claim=cited_claim, reviewer=reviewer, value="SUPPORTED", justification="",
                   base_revision=1, base_label_id=None)

    assert Label.objects.count() == 0


def test_conflict_after_undo_in_another_tab(cited_claim, reviewer):
    label = save(cited_claim, reviewer, "SUPPORTED")
    label_undo(claim=cited_claim, reviewer=reviewer)

    with pytest.raises(LabelConflict, match="undone in another tab") as caught:
        label_save(claim=cited_claim, reviewer=reviewer, value="UNSUPPORTED", justification="x",
                   base_revision=1, base_label_id=label.pk)

    assert caught.value.newer is None
    assert current_labels(cited_claim) == []


@pytest.mark.parametrize(
    ("fixture", "value", "justification", "message"),
    [
        ("cited_claim", "UNCITED", "", "a cited claim is SUPPORTED or UNSUPPORTED"),
        ("uncited_claim", "SUPPORTED", "", "UNCITED automatically"),
        ("uncited_claim", "UNSUPPORTED", "no passage", "UNCITED automatically"),
        ("cited_claim", "UNSUPPORTED", "   ", "justification is required"),
        ("cited_claim", "supported", "", "Unknown label value 'supported'"),
        ("cited_claim", "", "", "Unknown label value"),
    ],
)
def test_invalid_label_is_refused_and_nothing_saved(request, reviewer, fixture, value, justification, message):
    claim = request.getfixturevalue(fixture)

    with pytest.raises(ValidationError, match=message):
        save(claim, reviewer, value, justification)

    assert Label.objects.count() == 0


def test_uncited_label_on_uncited_claim_is_accepted(uncited_claim, reviewer):
    label = save(uncited_claim, reviewer, "UNCITED")

    assert label.value == LabelValue.UNCITED


def test_project_can_require_a_justification_for_supported(cited_claim, reviewer):
    project = cited_claim.answer.run.project
    assert save(cited_claim, reviewer, "SUPPORTED").value == "SUPPORTED"  # default: not required
    project.require_justification_for_supported = True
    project.save()
    bob = ReviewerFactory(username="bob")

    with pytest.raises(ValidationError, match="required for SUPPORTED in this project"):
        save(cited_claim, bob, "SUPPORTED", "")
    label = save(cited_claim, bob, "SUPPORTED", "the passage names Paris as capital")

    assert label.justification == "the passage names Paris as capital"


def test_undo_restores_the_previous_label(cited_claim, reviewer):
    first = save(cited_claim, reviewer, "SUPPORTED")
    second = save(cited_claim, reviewer, "UNSUPPORTED", "partial")

    restored = label_undo(claim=cited_claim, reviewer=reviewer)

    assert restored.pk == first.pk
    second.refresh_from_db()
    assert (second.is_current, second.is_stale) == (False, False)
    assert current_labels(cited_claim) == [("alice", "SUPPORTED")]
    assert Label.objects.filter(claim=cited_claim).count() == 2  # nothing deleted


def test_undo_after_save_undo_save_restores_the_first_label_not_the_undone_one(cited_claim, reviewer):
    """j1, j2, undo (j1 current), j3, undo → j1 again: j2 was undone and stays undone."""
    first = save(cited_claim, reviewer, "SUPPORTED", "j1")
    save(cited_claim, reviewer, "UNSUPPORTED", "j2")
    label_undo(claim=cited_claim, reviewer=reviewer)
    save(cited_claim, reviewer, "UNSUPPORTED", "j3")

    restored = label_undo(claim=cited_claim, reviewer=reviewer)

    assert restored.pk == first.pk
    assert current_labels(cited_claim) == [("alice", "SUPPORTED")]


def test_overlong_justification_is_refused_naming_the_limit(cited_claim, reviewer):
    with pytest.raises(ValidationError, match="10,001 characters long; the limit is 10,000"):
        save(cited_claim, reviewer, "UNSUPPORTED", "x" * 10_001)
    assert current_labels(cited_claim) == []


def test_undo_of_the_only_label_puts_the_claim_back_in_the_queue(cited_claim, reviewer):
    save(cited_claim, reviewer, "SUPPORTED")

    assert label_undo(claim=cited_claim, reviewer=reviewer) is None

    assert current_labels(cited_claim) == []
    assert Label.objects.filter(claim=cited_claim).count() == 1


def test_repeated_undo_walks_back_through_history(cited_claim, reviewer):
    first = save(cited_claim, reviewer, "SUPPORTED")
    save(cited_claim, reviewer, "UNSUPPORTED", "a")
    save(cited_claim, reviewer, "UNSUPPORTED", "b")

    assert label_undo(claim=cited_claim, reviewer=reviewer).justification == "a"
    assert label_undo(claim=cited_claim, reviewer=reviewer).pk == first.pk
    assert label_undo(claim=cited_claim, reviewer=reviewer) is None
    with pytest.raises(ValidationError, match="no label on claim 1 to undo"):
        label_undo(claim=cited_claim, reviewer=reviewer)


def test_undo_never_restores_a_stale_label(cited_claim, reviewer):
    LabelFactory(claim=cited_claim, reviewer=reviewer, value="UNSUPPORTED", justification="old",
                 claim_revision=1, is_current=False, is_stale=True)
    cited_claim.revision = 2
    cited_claim.save()
    save(cited_claim, reviewer, "SUPPORTED")

    assert label_undo(claim=cited_claim, reviewer=reviewer) is None
    assert current_labels(cited_claim) == []


def test_undo_leaves_other_reviewers_alone(cited_claim, reviewer):
    bob = ReviewerFactory(username="bob")
    save(cited_claim, bob, "SUPPORTED")
    save(cited_claim, reviewer, "UNSUPPORTED", "x")

    label_undo(claim=cited_claim, reviewer=reviewer)

    assert current_labels(cited_claim) == [("bob", "SUPPORTED")]


def test_reviewer_create_joins_every_project_by_default():
    ProjectFactory(slug="alpha")
    ProjectFactory(slug="beta")

    reviewer, password = reviewer_create(username="carol", password="long-enough-pw")

    assert password == "long-enough-pw"
    assert sorted(reviewer.projects.values_list("slug", flat=True)) == ["alpha", "beta"]
    assert authenticate(username="carol", password="long-enough-pw") == reviewer
    assert reviewer.kind == "human"


def test_reviewer_create_generates_a_password_when_none_is_given():
    reviewer, password = reviewer_create(username="dave")

    assert len(password) >= 12
    assert reviewer.check_password(password)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"username": "bad name!"}, "may contain only"),
        ({"username": ""}, "Give the reviewer a name"),
        ({"username": "erin", "password": "short"}, "too short"),
        ({"username": "erin", "project_slugs": ["alpha", "nope"]}, "Unknown project"),
        ({"username": "alice"}, "already exists"),
    ],
)
def test_reviewer_create_refuses_bad_input(reviewer, kwargs, message):
    ProjectFactory(slug="alpha")
    before = Reviewer.objects.count()

    with pytest.raises(ValidationError, match=message):
        reviewer_create(**kwargs)

    assert Reviewer.objects.count() == before


def test_add_reviewer_command_creates_a_member(capsys):
    ProjectFactory(slug="alpha")
    ProjectFactory(slug="beta")

    call_command("add_reviewer", "frank", "--password", "pw-for-frank-1", "--project", "beta")

    out = capsys.readouterr().out
    assert "Created reviewer frank (member of: beta (reviewer))" in out
    assert "Password:" not in out
    frank = Reviewer.objects.get(username="frank")
    assert list(frank.projects.values_list("slug", flat=True)) == ["beta"]
    assert frank.check_password("pw-for-frank-1")


def test_add_reviewer_command_prints_a_generated_password_once(capsys):
    call_command("add_reviewer", "gina")

    out = capsys.readouterr().out
    password = out.split("Password: ")[1].split()[0]
    assert Reviewer.objects.get(username="gina").check_password(password)


def test_add_reviewer_command_reports_bad_input():
    with pytest.raises(CommandError, match="Unknown project.*nope"):
        call_command("add_reviewer", "hank", "--password", "pw-for-hank-1", "--project", "nope")
    assert not Reviewer.objects.filter(username="hank").exists()

"""Probability samples of a run's answers (SPEC §4.6): drawn from a
seeded permutation, grown keeping their members, served first by the queue,
recorded in the audit log, the backup and the label table exports."""

from __future__ import annotations

import csv
import io
import zipfile

import numpy as np
import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.urls import reverse

from labeling.backup.project import project_export, project_import
from labeling.exports.label_table import label_table_frame
from labeling.models import (
    Adjudication,
    Answer,
    AuditEvent,
    LabelValue,
    Membership,
    Project,
    Question,
    ReviewerKind,
    Role,
    Run,
    Sample,
    SampleMember,
)
from labeling.review import queue
from labeling.review.label_writes import label_save
from labeling.scores.samples import human_claims, pending_answer_ids, permutation, sample_draw, sample_status
from labeling.tables.versions import label_table_snapshot
from tests.counted_run import counted_run
from tests.factories import (
    AnswerFactory,
    CitationFactory,
    ClaimFactory,
    LabelFactory,
    ProjectFactory,
    QuestionFactory,
    ReviewerFactory,
    RunFactory,
)

HX = {"HTTP_HX_REQUEST": "true"}


def make_run(answers: int = 8, *, claims: int = 2, slug: str = "sampling", name: str = "r") -> Run:
    """Run ``name`` of project ``slug``: questions q01…q08 answered, each answer with
    ``claims`` cited claims and one uncited claim (another run of the project answers the
    same questions)."""
    project = ProjectFactory(slug=slug)
    run = RunFactory(project=project, name=name)
    for i in range(1, answers + 1):
        question = (Question.objects.filter(project=project, question_id=f"q{i:02d}").first()
                    or QuestionFactory(project=project, question_id=f"q{i:02d}"))
        answer = AnswerFactory(run=run, question=question)
        for index in range(1, claims + 1):
            CitationFactory(claim=ClaimFactory(answer=answer, index=index, text=f"Claim {index} of q{i:02d}."))
        ClaimFactory(answer=answer, index=claims + 1, text=f"Uncited claim of q{i:02d}.")
    return run


def members(run: Run) -> list[str]:
    return list(SampleMember.objects.filter(sample__run=run).order_by("position")
                .values_list("answer__question_key", flat=True))


def label_answer(answer: Answer, reviewer, value: str = LabelValue.SUPPORTED) -> None:
    for claim in answer.claims.filter(citations__isnull=False).distinct().order_by("index"):
        label_save(claim=claim, reviewer=reviewer, value=value, justification="checked", base_revision=claim.revision,
                   base_label_id=None)


# -- drawing and growing ------------------------------------------------------------------------

@pytest.mark.django_db
def test_sample_is_the_seeded_permutation_of_the_answers_in_question_order():
    """Seed 42: numpy's PCG64 permutation of the 8 answers (q01…q08 order) gives the
    order; a sample of 3 is its first three."""
    run = make_run()
    ordered = list(Answer.objects.filter(run=run).order_by("question_key").values_list("question_key", flat=True))
    expected = [ordered[i] for i in np.random.default_rng(42).permutation(8)]

    result = sample_draw(run=run, answers=3, seed=42)

    assert (result.size, result.added, result.sample.seed) == (3, 3, 42)
    assert members(run) == expected[:3]
    ids = list(Answer.objects.filter(run=run).order_by("question_key").values_list("pk", flat=True))
    assert [Answer.objects.get(pk=pk).question_key for pk in permutation(ids, 42)] == expected


@pytest.mark.django_db
def test_growing_keeps_the_members_and_takes_the_next_of_the_permutation():
    run = make_run()
    sample_draw(run=run, answers=3, seed=7)
    first = members(run)

    grown = sample_draw(run=run, answers=6)

    assert (grown.size, grown.added) == (6, 3)
    assert members(run)[:3] == first
    fresh = make_run(slug="again", name="r")
    sample_draw(run=fresh, answers=6, seed=7)
    assert members(run) == members(fresh)  # the same as drawing 6 at once
    assert list(SampleMember.objects.filter(sample__run=run).values_list("position", flat=True)
                .order_by("position")) == [1, 2, 3, 4, 5, 6]


@pytest.mark.django_db
def test_growing_after_new_answers_keeps_members_and_draws_from_all():
    """Answers imported after the draw join the permutation; the members stay."""
    run = make_run(answers=4)
    sample_draw(run=run, answers=2, seed=3)
    before = members(run)
    AnswerFactory(run=run, question=QuestionFactory(project=run.project, question_id="q99"))

    sample_draw(run=run, answers=5)

    assert members(run)[:2] == before and len(set(members(run))) == 5


@pytest.mark.django_db
@pytest.mark.parametrize(("first", "answers", "seed", "field", "message"), [
    (None, 0, None, "answers", "at least 1 answer"),
    (None, 9, None, "answers", "has 8 answers"),
    (None, 2, -1, "seed", "whole number from 0"),
    (4, 3, None, "answers", "already holds 4 answers: a sample only grows"),
    (4, 6, 8, "seed", "drawn with seed 5"),
])
def test_bad_draws_are_refused_and_change_nothing(first, answers, seed, field, message):
    run = make_run()
    if first:
        sample_draw(run=run, answers=first, seed=5)
    before = (members(run), AuditEvent.objects.count())

    with pytest.raises(ValidationError) as caught:
        sample_draw(run=run, answers=answers, seed=seed)

    assert message in caught.value.message_dict[field][0]
    assert (members(run), AuditEvent.objects.count()) == before


@pytest.mark.django_db
def test_draws_are_in_the_audit_log_and_asking_again_for_the_same_size_is_not():
    run = make_run()
    lead = ReviewerFactory(username="lead")

    sample_draw(run=run, answers=2, seed=11, actor=lead)
    sample_draw(run=run, answers=2)
    sample_draw(run=run, answers=5)

    events = list(AuditEvent.objects.filter(run=run, action="sample").order_by("id"))
    assert [(e.actor_name, e.target, e.detail) for e in events] == [
        ("lead", "sample of 2 answers", {"event": "drew", "seed": 11, "answers": 2, "added": 2}),
        ("", "sample of 5 answers", {"event": "grew", "seed": 11, "answers": 5, "added": 3}),
    ]
    out = io.StringIO()
    call_command("audit", "--run", "r", "--action", "sample", "--format", "json", stdout=out)
    assert '"action": "sample"' in out.getvalue()


@pytest.mark.django_db
def test_sample_command_draws_grows_and_names_the_bad_field():
    run = make_run()
    out = io.StringIO()

    call_command("sample", "--run", "r", "--answers", "3", "--seed", "42", stdout=out)
    call_command("sample", "--run", "r", "--answers", "5", stdout=out)

    lines = out.getvalue().splitlines()
    assert lines[0] == "sampling/r: sample 3 answers (seed 42; 3 drawn now): 0 fully labeled"
    assert lines[1] == "sampling/r: sample 5 answers (seed 42; 2 drawn now): 0 fully labeled"
    ordered = list(Answer.objects.filter(run=run).order_by("question_key").values_list("question_key", flat=True))
    assert members(run) == [ordered[i] for i in np.random.default_rng(42).permutation(8)][:5]
    with pytest.raises(CommandError, match=r"^--answers: the sample of run 'r' already holds 5 answers"):
        call_command("sample", "--run", "r", "--answers", "4")
    with pytest.raises(CommandError, match=r"^--seed: the sample of run 'r' was drawn with seed 42"):
        call_command("sample", "--run", "r", "--answers", "6", "--seed", "1")
    assert len(members(run)) == 5


# -- fully labeled ------------------------------------------------------------------------------

@pytest.mark.django_db
def test_fully_labeled_needs_a_human_label_that_counts_on_every_cited_claim():
    """Sample of 4 (seed 1): answer A labeled on both cited claims by alice; B on one
    of two; C disputed on one claim (alice SUPPORTED, bob UNSUPPORTED); D labeled by a
    judge only. A is fully labeled; C becomes so once a lead adjudicates."""
    run = make_run()
    sample_draw(run=run, answers=4, seed=1)
    a, b, c, d = [m.answer for m in SampleMember.objects.filter(sample__run=run).order_by("position")]
    alice, bob = ReviewerFactory(username="alice"), ReviewerFactory(username="bob")
    judge = ReviewerFactory(username="judge", kind=ReviewerKind.MODEL)
    label_answer(a, alice)
    first_b = b.claims.get(index=1)
    label_save(claim=first_b, reviewer=alice, value="SUPPORTED", justification="", base_revision=1, base_label_id=None)
    label_answer(c, alice)
    disputed = c.claims.get(index=2)
    label_save(claim=disputed, reviewer=bob, value="UNSUPPORTED", justification="only partly",
               base_revision=1, base_label_id=None)
    for claim in d.claims.filter(index__lte=2):
        LabelFactory(claim=claim, reviewer=judge)

    assert sample_status(run).fully_labeled == 1
    assert pending_answer_ids(human_claims([a.pk, b.pk, c.pk, d.pk])) == {b.pk, c.pk, d.pk}

    Adjudication.objects.create(claim=disputed, lead=alice, value="UNSUPPORTED", reason="partial", claim_revision=1)
    status = sample_status(run)
    assert (status.size, status.fully_labeled, status.seed) == (4, 2, 1)
    labels = {(h.answer_id, h.claim_id): h.label for h in human_claims([c.pk])}
    assert sorted(labels.values(), key=str) == ["SUPPORTED", "UNCITED", "UNSUPPORTED"]


# -- the queue ----------------------------------------------------------------------------------

@pytest.mark.django_db
def test_queue_serves_sampled_answers_first_in_sample_order_whole_answers_at_a_time():
    run = make_run()
    alice = ReviewerFactory(username="alice")
    run.project.members.add(alice)
    sample_draw(run=run, answers=3, seed=42)
    order = members(run)

    claim = queue.next_unlabeled_claim(run=run, reviewer=alice)
    assert (claim.answer.question_key, claim.index) == (order[0], 1)
    label_save(claim=claim, reviewer=alice, value="SUPPORTED", justification="", base_revision=1, base_label_id=None)
    claim = queue.next_unlabeled_claim(run=run, reviewer=alice, after=claim)
    assert (claim.answer.question_key, claim.index) == (order[0], 2)  # the rest of the answer first
    label_save(claim=claim, reviewer=alice, value="SUPPORTED", justification="", base_revision=1, base_label_id=None)
    after_first = claim.answer
    assert queue.next_answer_to_label(run=run, reviewer=alice, after=after_first).question_key == order[1]
    # Skipping the second sampled answer (n): the third one comes next, then the second again.
    second = queue.next_unlabeled_claim(run=run, reviewer=alice, after=claim)
    third = queue.next_unlabeled_claim(run=run, reviewer=alice, after=second.answer.claims.get(index=2))
    assert third.answer.question_key == order[2]
    assert queue.next_answer_to_label(run=run, reviewer=alice, after=third.answer).question_key == order[1]
    for key in order[1:]:
        label_answer(Answer.objects.get(run=run, question_key=key), alice)
    # The sample done: the run in question order again.
    rest = sorted(set(Answer.objects.filter(run=run).values_list("question_key", flat=True)) - set(order))
    assert queue.next_unlabeled_claim(run=run, reviewer=alice).answer.question_key == rest[0]
    following = [key for key in rest if key > third.answer.question_key] or rest  # after it, wrapping around
    assert queue.next_answer_to_label(run=run, reviewer=alice, after=third.answer).question_key == following[0]


@pytest.mark.django_db
def test_without_a_sample_the_queue_is_in_question_order(django_assert_num_queries):
    run = make_run()
    alice = ReviewerFactory(username="alice")
    # The sample's walk and the run's share one statement, which reads the answer too.
    with django_assert_num_queries(1):
        answer = queue.next_answer_to_label(run=run, reviewer=alice)
    assert answer.question_key == "q01"


@pytest.mark.django_db
def test_sampled_answers_full_with_overlap_leave_the_queue():
    """Overlap 2: a sampled answer stays first until two humans labeled it."""
    run = make_run()
    run.overlap = 2
    run.save()
    alice, bob, carol = (ReviewerFactory(username=n) for n in ("alice", "bob", "carol"))
    sample_draw(run=run, answers=2, seed=42)
    first = Answer.objects.get(run=run, question_key=members(run)[0])
    label_answer(first, alice)
    assert queue.next_answer_to_label(run=run, reviewer=bob).pk == first.pk
    label_answer(first, bob)
    assert queue.next_answer_to_label(run=run, reviewer=carol).question_key == members(run)[1]


# -- the run's history: exports, versions, backup -----------------------------------------------

@pytest.mark.django_db
def test_label_table_exports_gain_in_sample_and_versions_keep_their_hash(client, tmp_path):
    run = make_run(answers=3, claims=1)
    lead = ReviewerFactory(username="lead")
    Membership.objects.create(project=run.project, reviewer=lead, role=Role.LEAD)
    version = label_table_snapshot(run=run, note="before the sample")
    sample_draw(run=run, answers=1, seed=42)
    sampled = members(run)[0]

    table = label_table_frame(run)
    assert table.loc[table["question_id"] == sampled, "in_sample"].tolist() == [True, True]
    assert table.loc[table["question_id"] != sampled, "in_sample"].tolist() == [False] * 4
    with pytest.raises(ValidationError, match=f"unchanged since version {version.number}"):
        label_table_snapshot(run=run, note="the sample is not a label")
    client.force_login(lead)
    response = client.get(reverse("label_export", args=["sampling", "r"]), {"format": "csv"})
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig")
                                           if response.streaming else response.content.decode("utf-8-sig"))))
    assert {row["question_id"]: row["in_sample"] for row in rows}[sampled] == "True"
    assert sorted({row["in_sample"] for row in rows}) == ["False", "True"]


@pytest.mark.django_db
def test_backup_and_restore_keep_the_sample():
    run = make_run(answers=5)
    sample_draw(run=run, answers=3, seed=99)
    Sample.objects.filter(run=run).update(target_half_width=0.04)
    order = members(run)
    archive = io.BytesIO()
    summary = project_export(project=run.project, out=archive)
    assert summary.rows["labeling.sample"] == 1 and summary.rows["labeling.samplemember"] == 3
    assert "rows/labeling.samplemember.jsonl" in zipfile.ZipFile(io.BytesIO(archive.getvalue())).namelist()
    Project.objects.filter(pk=run.project_id).delete()
    assert not SampleMember.objects.exists()

    project_import(source=io.BytesIO(archive.getvalue()))

    restored = Run.objects.get(project__slug="sampling", name="r")
    sample = Sample.objects.get(run=restored)
    assert (sample.seed, sample.target_half_width, members(restored)) == (99, 0.04, order)


# -- the run page -------------------------------------------------------------------------------

@pytest.fixture
def team(db):
    run = make_run()
    people = {name: ReviewerFactory(username=name) for name in ("lead", "rev", "viewer")}
    for name, role in (("lead", Role.LEAD), ("rev", Role.REVIEWER), ("viewer", Role.VIEWER)):
        Membership.objects.create(project=run.project, reviewer=people[name], role=role)
    return run, people


def panel(name: str) -> str:
    return reverse(name, args=["sampling", "r"])


def test_lead_draws_a_sample_from_the_run_page_and_sees_its_progress(client, team):
    run, people = team
    client.force_login(people["lead"])
    assert 'hx-get="/p/sampling/runs/r/sample/"' in client.get(run.get_absolute_url()).content.decode()
    empty = client.get(panel("run_sample"), **HX).content.decode()
    assert "No probability sample" in empty and "Draw a sample of" in empty and "<html" not in empty

    response = client.post(panel("run_sample_draw"), {"answers": "4", "seed": "42"}, **HX)

    body = response.content.decode()
    assert response.status_code == 200 and "<html" not in body
    assert "sample 4 answers: 0 fully labeled" in body and "seed 42" in body and "Grow the sample to" in body
    label_answer(Answer.objects.get(run=run, question_key=members(run)[0]), people["rev"])
    assert "sample 4 answers: 1 fully labeled" in client.get(panel("run_sample")).content.decode()
    assert AuditEvent.objects.filter(run=run, action="sample", actor_name="lead").count() == 1


@pytest.mark.parametrize(("data", "message"), [
    ({"answers": "many"}, "Answers: &#x27;many&#x27; is not a whole number"),
    ({"answers": "20"}, "Answers: run &#x27;r&#x27; has 8 answers"),
    ({"answers": "2", "seed": "-4"}, "Seed: &#x27;-4&#x27; is not a whole number"),
])
def test_bad_sample_forms_say_which_field_and_draw_nothing(client, team, data, message):
    _run, people = team
    client.force_login(people["lead"])
    body = client.post(panel("run_sample_draw"), data, **HX).content.decode()
    assert message in body and 'role="alert"' in body
    assert not SampleMember.objects.exists()


def test_target_half_width_is_set_and_checked(client, team):
    run, people = team
    client.force_login(people["lead"])
    refused = client.post(panel("run_sample_target"), {"target": "0.03"}, **HX).content.decode()
    assert "Sample: run &#x27;r&#x27; has no sample" in refused
    client.post(panel("run_sample_draw"), {"answers": "3"}, **HX)

    assert "between 0 and 0.5" in client.post(panel("run_sample_target"), {"target": "0.7"}, **HX).content.decode()
    body = client.post(panel("run_sample_target"), {"target": "0.03"}, **HX).content.decode()

    assert Sample.objects.get(run=run).target_half_width == 0.03
    assert "target ±0.03: not yet" in body
    client.post(panel("run_sample_target"), {"target": ""}, **HX)
    assert Sample.objects.get(run=run).target_half_width is None
    assert [e.detail["event"] for e in AuditEvent.objects.filter(run=run, action="sample").order_by("id")] == [
        "drew", "target", "target"]


def test_only_leads_draw_and_blind_reviewers_see_no_panel(client, team):
    run, people = team
    client.force_login(people["viewer"])
    seen = client.get(panel("run_sample"))
    assert seen.status_code == 200 and "A lead of the project draws one" in seen.content.decode()
    assert "Draw a sample of" not in seen.content.decode()
    assert client.post(panel("run_sample_draw"), {"answers": "2"}).status_code == 403
    run.overlap, run.blind = 2, True
    run.save()
    client.force_login(people["rev"])
    assert client.get(panel("run_sample")).status_code == 403
    assert 'hx-get="/p/sampling/runs/r/sample/"' not in client.get(run.get_absolute_url()).content.decode()
    assert not SampleMember.objects.exists()


@pytest.mark.django_db
def test_sample_status_query_count(django_assert_num_queries):
    """tests/counted_run.py's run, all three answers sampled: q02's claim 2 is disputed, so two
    answers are fully labeled."""
    world = counted_run()
    with django_assert_num_queries(1):
        assert sample_status(world.run) is None
    sample_draw(run=world.run, answers=3, seed=7)
    # The sample, its members, their claims with the human label.
    with django_assert_num_queries(3):
        status = sample_status(world.run)
    assert (status.size, status.fully_labeled, status.seed) == (3, 2, 7)

"""The audit log (SPEC §7): every change to a run is recorded with
who, what and when, by the service that made it; leads read and filter it on
the run's audit page; ``manage.py audit --run NAME --format json`` prints it;
the admin shows it read only."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.urls import reverse

from labeling.audit import COMMAND_LINE, run_actors
from labeling.importers.load import project_for_import, run_import
from labeling.models import AuditAction, AuditEvent, Claim, Label, Membership, Run
from labeling.review.label_writes import LabelConflict, label_save
from labeling.runs import run_delete, run_rename
from labeling.scores.samples import sample_draw
from labeling.team.adjudication import adjudication_save
from tests.conftest import FIXTURES_DIR
from tests.counted_run import counted_run
from tests.factories import ProjectFactory, ReviewerFactory, RunFactory

SEED = FIXTURES_DIR / "seed_coverage_support.jsonl"
RUN = "seed-coverage-support"
Q = "seed-support-1"


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def site(db):
    """The seed run (claims 1–5, labeled by the imported seed-reviewer: 1, 2, 4
    SUPPORTED; 3, 5 UNSUPPORTED), its lead lea and reviewer bob."""
    project = project_for_import(slug="seed")
    run_import(project=project, source=SEED)
    lea, bob = ReviewerFactory(username="lea"), ReviewerFactory(username="bob")
    Membership.objects.create(project=project, reviewer=lea, role="lead")
    Membership.objects.create(project=project, reviewer=bob, role="reviewer")
    return Run.objects.select_related("project").get(project=project, name=RUN), lea, bob


def url(name: str, run: Run, **kwargs) -> str:
    return reverse(name, kwargs={"project_slug": run.project.slug, "run_name": run.name, **kwargs})


def claim(run: Run, index: int) -> Claim:
    return Claim.objects.get(answer__run=run, index=index)


def logged(run: Run) -> list[tuple[str, str, str, dict]]:
    """(actor, action, target, detail) of every event of ``run``, oldest first."""
    return [(e.actor_name or COMMAND_LINE, e.action, e.target, e.detail)
            for e in AuditEvent.objects.filter(run=run).order_by("at", "id")]


def label_form(c: Claim, value: str, justification: str = "", base: Label | None = None) -> dict:
    return {"claim": c.pk, "value": value, "justification": justification, "revision": c.revision,
            "base_label": base.pk if base else ""}


# ---------------------------------------------------------------- recording


def test_every_change_to_a_run_is_logged_with_who_what_and_when(client, site):
    """Through the pages, as the reviewer and the lead would do it: label,
    relabel, undo, edit, split, merge, adjudicate, save a version, export,
    download the version file, rename. Each is one event, in order."""
    run, lea, bob = site
    client.force_login(bob)
    first = claim(run, 1)
    client.post(url("claim_label", run, claim_id=first.pk), label_form(first, "SUPPORTED"))
    mine = Label.objects.get(claim=first, reviewer=bob, is_current=True)
    client.post(url("claim_label", run, claim_id=first.pk), label_form(first, "UNSUPPORTED", "too strong", mine))
    client.post(url("label_undo", run), {"claim": first.pk})
    second = claim(run, 2)
    client.post(url("claim_edit", run, claim_id=second.pk), {"text": "The wait doubles.", "revision": 1})
    third = claim(run, 3)
    client.post(url("claim_split", run, claim_id=third.pk),
                {"first": "Token errors are never repeated,", "second": "whatever the settings [P2].",
                 "revision": 1, "first_citations": [c.pk for c in third.citations.all()]})
    # Claims now: 1, 2, 3 (first part), 4 (second part), 5, 6. Merge 5 and 6.
    fourth, fifth = claim(run, 5), claim(run, 6)
    client.post(url("claim_merge", run, claim_id=fourth.pk), {"other": fifth.pk, "revision": 1})
    client.force_login(lea)
    adjudication_save(claim=claim(run, 1), lead=lea, value="SUPPORTED", reason="the passage says three")
    client.post(url("version_create", run), {"note": "first pass"})
    client.get(url("label_export", run) + "?format=csv")
    client.get(url("version_file", run, number=1))
    run_rename(run=run, user=lea, name="seed-renamed")

    events = logged(run)

    version = run.versions.get()
    assert events == [
        (COMMAND_LINE, "import_answers", "seed_coverage_support.jsonl", {
            "summary": "runs seed-coverage-support: 1 answers imported, 0 already present, 1 new questions, "
                       "5 claims, 5 citations (0 fabricated), 5 labels",
            "answers_created": 1, "answers_unchanged": 0, "labels_created": 5}),
        ("bob", "label", f"{Q} · claim 1", {"value": "SUPPORTED", "previous": None}),
        ("bob", "label", f"{Q} · claim 1", {"value": "UNSUPPORTED", "previous": "SUPPORTED"}),
        ("bob", "undo", f"{Q} · claim 1", {"undone": "UNSUPPORTED", "restored": "SUPPORTED"}),
        ("bob", "edit", f"{Q} · claim 2", {"from": "The wait between attempts doubles each time [P1].",
                                           "to": "The wait doubles."}),
        ("bob", "split", f"{Q} · claim 3", {"first": "Token errors are never repeated,",
                                            "second": "whatever the settings [P2].",
                                            "second_claim_id": claim(run, 4).pk}),
        ("bob", "merge", f"{Q} · claims 5 and 6", {
            "merged_claim_id": fifth.pk,
            "text": "Each backup job is logged locally [P3]. Operators can raise the attempt limit in the "
                    "configuration file [P1]."}),
        ("lea", "adjudicate", f"{Q} · claim 1", {"value": "SUPPORTED", "reason": "the passage says three"}),
        ("lea", "snapshot", "version 1", {"sha256": version.sha256, "rows": 5, "labels": version.label_count,
                                          "note": "first pass"}),
        ("lea", "export", "seed_seed-coverage-support_labels.csv",
         {"format": "csv", "version": None, "reviewer": None, "rows": 5}),
        ("lea", "export", "seed_seed-coverage-support_canonical_v1.jsonl",
         {"format": "jsonl", "version": 1, "canonical": True}),
        ("lea", "rename", "seed-coverage-support → seed-renamed", {"from": RUN, "to": "seed-renamed"}),
    ]
    stamps = list(AuditEvent.objects.filter(run=run).order_by("id").values_list("at", flat=True))
    assert stamps == sorted(stamps) and datetime.now(UTC) - stamps[0] < timedelta(minutes=5)


def test_refused_or_unchanged_saves_log_nothing(site):
    """A conflict (stale base label), a bad value and a double submit of the
    same label: the log holds the one label that was saved."""
    run, _lea, bob = site
    c = claim(run, 1)
    c.answer.run = run
    saved = label_save(claim=c, reviewer=bob, value="SUPPORTED", justification="", base_revision=1,
                       base_label_id=None)
    with pytest.raises(LabelConflict):
        label_save(claim=c, reviewer=bob, value="UNSUPPORTED", justification="no", base_revision=1,
                   base_label_id=None)
    with pytest.raises(Exception, match="Unknown label value"):
        label_save(claim=c, reviewer=bob, value="MAYBE", justification="", base_revision=1, base_label_id=saved.pk)
    label_save(claim=c, reviewer=bob, value="SUPPORTED", justification="", base_revision=1, base_label_id=saved.pk)

    assert [event[1] for event in logged(run)] == ["import_answers", "label"]


def test_label_import_and_deleting_the_run_are_logged_and_the_log_outlives_the_run(site, tmp_path):
    run, lea, _bob = site
    path = tmp_path / "mine.csv"
    c = claim(run, 1)
    path.write_text(f"claim_id,label,justification\n{c.pk},UNSUPPORTED,reads more than it says\n")
    call_command("import_labels", str(path), run=RUN, project="seed", reviewer="lea", apply=True,
                 stdout=io.StringIO())
    run_delete(run=run, user=lea)

    events = AuditEvent.objects.filter(project=run.project, run_name=RUN).order_by("id")

    # The command line imported lea's labels (labeling.audit: a command's actor is the command line).
    assert [(e.actor_name, e.action, e.target, e.run_id) for e in events] == [
        ("", "import_answers", "seed_coverage_support.jsonl", None),
        ("", "import_labels", "mine.csv", None),
        ("lea", "delete", RUN, None),
    ]
    assert events[1].detail == {"format": "csv", "rows": 1, "labels": 1, "skipped_newer": 0, "mode": "own",
                                "reviewer": "lea"}
    assert events[2].detail == {"answers": 1, "claims": 5, "labels": 6, "versions": 0}


# ------------------------------------------------------------------ command


def test_audit_command_prints_the_log_as_json(site):
    run, _lea, bob = site
    c = claim(run, 4)
    c.answer.run = run
    label_save(claim=c, reviewer=bob, value="UNSUPPORTED", justification="not said", base_revision=1,
               base_label_id=None)
    out = io.StringIO()

    call_command("audit", run=RUN, project="seed", format="json", stdout=out)

    rows = json.loads(out.getvalue())
    event = AuditEvent.objects.get(action="label")
    assert [{k: v for k, v in row.items() if k != "detail"} for row in rows] == [
        {"at": AuditEvent.objects.get(action="import_answers").at.isoformat().replace("+00:00", "Z"),
         "actor": "command line", "action": "import_answers", "run": RUN, "target": "seed_coverage_support.jsonl",
         "claim_id": None},
        {"at": event.at.isoformat().replace("+00:00", "Z"), "actor": "bob", "action": "label", "run": RUN,
         "target": f"{Q} · claim 4", "claim_id": c.pk},
    ]
    assert rows[1]["detail"] == {"value": "UNSUPPORTED", "previous": None}


def test_audit_command_filters_and_prints_a_table(site):
    run, lea, _bob = site
    run_rename(run=run, user=lea, name="renamed")
    out = io.StringIO()

    call_command("audit", run="renamed", actor="lea", format="table", stdout=out)

    lines = out.getvalue().splitlines()
    event = AuditEvent.objects.get(action="rename")
    assert lines == [
        f"{event.at.isoformat().replace('+00:00', 'Z')}\tlea\trename\t{RUN} → renamed\t"
        '{"from": "seed-coverage-support", "to": "renamed"}',
        "1 event(s) of run 'renamed' in project 'seed'",
    ]


def test_audit_command_names_the_runs_when_the_run_is_unknown(site):
    with pytest.raises(CommandError, match="project 'seed' has no run 'nope' and no log of a deleted run of that "
                                           r"name \(runs: seed-coverage-support\)"):
        call_command("audit", run="nope", format="json", stdout=io.StringIO())


# --------------------------------------------------------------------- page


def test_audit_page_is_for_leads_only(client, site):
    """Lead 200; reviewer and viewer of the project 403; a member of another project only 404."""
    run, lea, bob = site
    viewer = ReviewerFactory(username="vic")
    Membership.objects.create(project=run.project, reviewer=viewer, role="viewer")
    stranger = ReviewerFactory(username="sam")
    Membership.objects.create(project=ProjectFactory(slug="other"), reviewer=stranger, role="lead")
    statuses, linked = {}, {}
    for who in (lea, bob, viewer, stranger):
        client.force_login(who)
        statuses[who.username] = client.get(url("run_audit", run)).status_code
        linked[who.username] = f'href="{url("run_audit", run)}"' in client.get(url("run_detail", run)).content.decode()

    assert statuses == {"lea": 200, "bob": 403, "vic": 403, "sam": 404}
    assert linked == {"lea": True, "bob": False, "vic": False, "sam": False}


def test_audit_page_filters_by_actor_action_and_day(client, site):
    run, lea, bob = site
    for index, value in ((1, "SUPPORTED"), (2, "SUPPORTED")):
        c = claim(run, index)
        c.answer.run = run
        label_save(claim=c, reviewer=bob, value=value, justification="", base_revision=1, base_label_id=None)
    run_rename(run=run, user=lea, name="renamed")
    # The import happened "yesterday".
    yesterday = datetime.now(UTC) - timedelta(days=1)
    AuditEvent.objects.filter(action="import_answers").update(at=yesterday)
    run.refresh_from_db()
    client.force_login(lea)
    today = datetime.now(UTC).date().isoformat()

    def shown(query: str) -> list[str]:
        page = client.get(url("run_audit", run) + query).content.decode()
        return [action for action in ("imported answers", "labeled", "renamed the run")
                for _ in range(page.count(f'">{action}</span>'))]

    assert shown("") == ["imported answers", "labeled", "labeled", "renamed the run"]
    assert shown("?actor=bob") == ["labeled", "labeled"]
    assert shown("?actor=command+line") == ["imported answers"]
    assert shown("?action=rename") == ["renamed the run"]
    assert shown(f"?since={today}") == ["labeled", "labeled", "renamed the run"]
    assert shown(f"?until={yesterday.date().isoformat()}") == ["imported answers"]
    page = client.get(url("run_audit", run) + "?since=yesterday").content.decode()
    assert "since: &#x27;yesterday&#x27; is not a day; write it as 2025-01-31." in page
    assert "(run then named seed-coverage-support)" in page


def test_audit_page_shows_names_and_texts_as_text(client, site):
    run, lea, _bob = site
    run_rename(run=run, user=lea, name="<img src=x onerror=alert(1)>")
    run.refresh_from_db()
    client.force_login(lea)

    page = client.get(url("run_audit", run)).content.decode()

    assert "<img src=x" not in page
    assert "seed-coverage-support → &lt;img src=x onerror=alert(1)&gt;" in page


@pytest.mark.parametrize("n_events", [5, 500])
def test_audit_page_has_a_constant_query_count(db, client, django_assert_max_num_queries, n_events):
    """5 or 500 events, 50 a page: the same queries either way."""
    project = ProjectFactory(slug="budget")
    lea = ReviewerFactory(username="lea")
    Membership.objects.create(project=project, reviewer=lea, role="lead")
    run = RunFactory(project=project, name="big")
    AuditEvent.objects.bulk_create([
        AuditEvent(action=AuditAction.LABEL, actor=lea, actor_name=f"rev{n % 7}", project=project, run=run,
                   run_name="big", target=f"q{n} · claim 1", detail={"value": "SUPPORTED"})
        for n in range(n_events)])
    client.force_login(lea)

    # 2: session, user · 1: run with its project and the role · 1: the actors · 1: count · 1: the page's events.
    with django_assert_max_num_queries(6):
        response = client.get(reverse("run_audit", kwargs={"project_slug": "budget", "run_name": "big"}))

    page = response.content.decode()
    assert page.count('">labeled</span>') == min(n_events, 50)
    assert (f"{n_events} events" in page)
    assert ("page 1 of 10" in page) == (n_events == 500)


# -------------------------------------------------------------------- admin


def test_admin_lists_events_read_only(client, site):
    run, _lea, _bob = site
    admin = ReviewerFactory(username="root", is_staff=True, is_superuser=True)
    client.force_login(admin)
    event = AuditEvent.objects.get(run=run)

    listing = client.get(reverse("admin:labeling_auditevent_changelist"))
    add = client.get(reverse("admin:labeling_auditevent_add"))
    change = client.post(reverse("admin:labeling_auditevent_change", args=[event.pk]), {"target": "x"})

    assert listing.status_code == 200 and "seed_coverage_support.jsonl" in listing.content.decode()
    assert add.status_code == 403
    assert change.status_code == 403
    event.refresh_from_db()
    assert event.target == "seed_coverage_support.jsonl"


# ------------------------------------------------------------------ who: one rule


def test_every_command_is_the_command_line_whatever_reviewer_it_names(site, tmp_path):
    """import_answers --reviewer, snapshot --author, export_labels --reviewer,
    import_labels --reviewer, autolabel --reviewer and import_verdicts --reviewer,
    each naming someone: every event's actor is "command line", the name in its
    detail under the flag's word. Before: snapshot and import_labels named lea."""
    from tests.judge_server import JudgeServer

    run, lea, _bob = site
    out = io.StringIO()
    answers = tmp_path / "more.jsonl"
    answers.write_text(SEED.read_text().replace('"seed-support-1"', '"seed-support-9"')
                       .replace('"reviewer": "seed-reviewer", ', ""), encoding="utf-8")
    call_command("import_answers", str(answers), project="seed", reviewer="expert-9", stdout=out)
    call_command("snapshot", run=RUN, project="seed", note="first", author="lea", stdout=out)
    call_command("export_labels", run=RUN, project="seed", reviewer="lea", output=tmp_path / "lea.csv",
                 stdout=out)
    mine = tmp_path / "mine.csv"
    first = Claim.objects.get(answer__run=run, answer__question_key=Q, index=1)
    mine.write_text(f"claim_id,label,justification\n{first.pk},UNSUPPORTED,reads more than it says\n")
    call_command("import_labels", str(mine), run=RUN, project="seed", reviewer="lea", apply=True, stdout=out)
    with JudgeServer() as server:
        call_command("autolabel", run=RUN, project="seed", reviewer="judge-a", model="m", base_url=server.base_url,
                     limit=1, stdout=out)
    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_text('{"question_id": "seed-support-1", "claim_index": 1, "label": "SUPPORTED", '
                        '"reason": "says so"}\n')
    call_command("import_verdicts", str(verdicts), run=RUN, project="seed", reviewer="judge-b", stdout=out)

    events = [(e.actor_name or COMMAND_LINE, e.action, e.detail) for e in
              AuditEvent.objects.filter(run=run).order_by("id")]
    assert [(actor, action) for actor, action, _ in events] == [
        (COMMAND_LINE, "import_answers"), (COMMAND_LINE, "import_answers"), (COMMAND_LINE, "snapshot"),
        (COMMAND_LINE, "export"), (COMMAND_LINE, "import_labels"), (COMMAND_LINE, "label"),
        (COMMAND_LINE, "import_labels")]
    named = [{key: detail[key] for key in ("reviewer", "author", "judge") if key in detail}
             for _, _, detail in events]
    assert named == [{}, {"reviewer": "expert-9"}, {"author": "lea"}, {"reviewer": "lea"}, {"reviewer": "lea"},
                     {"judge": "judge-a"}, {"judge": "judge-b"}]
    assert run.versions.get().author == lea  # the version still records its author


def test_in_the_browser_the_actor_is_the_user(client, site, tmp_path):
    """The same two changes made in the browser (a version, a label import) are lea's, no name in the detail."""
    run, lea, _bob = site
    client.force_login(lea)
    client.post(url("version_create", run), {"note": "first pass"})
    event = AuditEvent.objects.get(run=run, action="snapshot")
    assert (event.actor_name, "author" in event.detail) == ("lea", False)


@pytest.mark.django_db
def test_run_actors_is_one_query(django_assert_num_queries):
    world = counted_run()
    sample_draw(run=world.run, answers=1, seed=1, actor=world.lead)
    sample_draw(run=world.run, answers=2)
    for n in range(3):  # three more events by the lead: five events, two names
        AuditEvent.objects.create(action=AuditAction.LABEL, actor=world.lead, actor_name="lead",
                                  project=world.project, run=world.run, run_name=world.run.name,
                                  target=f"q01 · claim {n + 1}", detail={"value": "SUPPORTED"})
    with django_assert_num_queries(1) as captured:
        assert run_actors(run=world.run) == sorted(["lead", COMMAND_LINE])
    # One row a name from the database, not one an event: the DISTINCT is over the name alone
    # (the model's ordering by time would add its columns, 50k rows on a 50k-event run).
    sql = captured.captured_queries[0]["sql"]
    with connection.cursor() as cursor:
        cursor.execute(sql.replace("%", "%%"))
        assert sorted(row[0] or COMMAND_LINE for row in cursor.fetchall()) == sorted(["lead", COMMAND_LINE])

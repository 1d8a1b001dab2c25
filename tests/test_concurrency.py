"""Several people on one run at once (SPEC §7), through the real
views and the real database from real threads: four reviewers labeling, one
splitting claims, one merging them, a lead saving versions and downloading
the label table, two leads uploading label tables — all on the same run at
the same time. Runs on SQLite (a file database in WAL mode, see
``tests/conftest.py``) and on PostgreSQL (``DATABASE_URL``).

What must hold afterwards:

- no 500: every answer is 200/302, 404 for a claim a merge removed before
  the request reached it, 409 with a message for a write that raced another
  (``conflicted`` in ``labeling.views.review``), or — SQLite only — 503
  "busy, retry" with ``Retry-After``;
- every label acknowledged with "Saved" is in the database (each carries a
  unique justification), none lost;
- no answer has two claims at one index, and indexes run 1…n;
- every saved version reflects one moment: its file matches its SHA-256,
  re-serializing its rows gives the same bytes, its counts match its rows,
  and no claim in it is without citations (every claim of this run is cited
  at every moment, so a claim read without its citations would be a table
  torn between two moments); a last version saved when all threads are done
  equals the table recomputed from the database.
"""

from __future__ import annotations

import io
import json
import random
import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.db.models import Count
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from labeling.exports.label_table import canonical_bytes, label_count, label_table_frame, table_from_canonical
from labeling.importers.load import project_for_import, run_import
from labeling.models import AuditEvent, Claim, Label, LabelTableVersion, Membership, Run
from labeling.tables.versions import label_table_snapshot, version_read
from tests.factories import ReviewerFactory
from tests.waiting import BOOT_SECONDS, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

ROUNDS = 12
HX = {"HTTP_HX_REQUEST": "true"}
SENTENCES = [f"Fact {n} holds for the backup agent in every region." for n in range(1, 9)]


@dataclass
class Outcomes:
    """What every thread saw: (kind, status, body excerpt) per request, and the labels acknowledged."""

    answers: list[tuple[str, int, str, str]] = field(default_factory=list)
    acknowledged: list[tuple[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, kind: str, response) -> str:
        body = response.content.decode(errors="replace") if not response.streaming else ""
        with self.lock:
            self.answers.append((kind, response.status_code, body, response.get("Retry-After", "")))
        return body


@pytest.fixture
def race(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    project = project_for_import(slug="conc")
    lines = []
    for q in (1, 2):
        lines.append({
            "question_id": f"q{q}", "question": f"Question {q}?", "run": "race", "answer": " ".join(SENTENCES),
            "passages": [{"id": "P1", "source": "manual.md", "text": " ".join(SENTENCES)}],
            "claims": [{"text": text, "citations": ["P1"]} for text in SENTENCES]})
    run_import(project=project, source=io.BytesIO("".join(json.dumps(line) + "\n" for line in lines).encode()))
    lead = ReviewerFactory(username="lea")
    Membership.objects.create(project=project, reviewer=lead, role="lead")
    for name in ("r1", "r2", "r3", "r4", "splitter", "merger"):
        Membership.objects.create(project=project, reviewer=ReviewerFactory(username=name), role="reviewer")
    return Run.objects.select_related("project").get(project=project, name="race")


def url(name: str, **kwargs) -> str:
    return reverse(name, kwargs={"project_slug": "conc", "run_name": "race", **kwargs})


def claims_now(run: Run) -> list[Claim]:
    return list(Claim.objects.filter(answer__run=run).order_by("answer_id", "index"))


def in_thread(work, name: str, errors: list[BaseException], rounds: threading.Barrier | None = None):
    def run() -> None:
        try:
            work(name, random.Random(name))
        except BaseException as exc:  # reported by the test, not lost in the thread
            errors.append(exc)
            if rounds is not None:
                rounds.abort()  # the others stop waiting for this thread at the next round
        finally:
            connection.close()
    return threading.Thread(target=run, name=name)


def test_labeling_splitting_merging_snapshotting_and_uploading_at_once(race):
    """Every thread starts each of its ROUNDS together with the others (a barrier), then
    they all write at once: each round's writes overlap, and each snapshot after the
    first follows a round of labels, however fast or slow the machine runs one thread
    (free-running threads could leave the snapshots nothing new to save at load 8)."""
    run, seen, errors = race, Outcomes(), []
    from labeling.models import Reviewer

    rounds = threading.Barrier(8)

    def next_round() -> None:
        rounds.wait(timeout=BOOT_SECONDS)

    def client_for(name: str) -> Client:
        client = Client()
        client.force_login(Reviewer.objects.get(username=name))
        return client

    def labeler(name: str, rng: random.Random) -> None:
        client = client_for(name)
        for k in range(ROUNDS):
            next_round()
            claim = rng.choice(claims_now(run))
            base = Label.objects.filter(claim=claim, reviewer__username=name, is_current=True).first()
            note = f"{name}-{k}"
            body = seen.add("label", client.post(url("claim_label", claim_id=claim.pk), {
                "claim": claim.pk, "value": "UNSUPPORTED", "justification": note, "revision": claim.revision,
                "base_label": base.pk if base else "", "more_in_answer": 1}, **HX))
            if "Saved UNSUPPORTED" in body:
                with seen.lock:
                    seen.acknowledged.append((name, note))

    def splitter(name: str, rng: random.Random) -> None:
        client = client_for(name)
        for _ in range(ROUNDS):
            next_round()
            claim = rng.choice([c for c in claims_now(run) if len(c.text) > 20])
            cited = list(claim.citations.values_list("pk", flat=True))
            seen.add("split", client.post(url("claim_split", claim_id=claim.pk), {
                "at": len(claim.text) // 2, "revision": claim.revision, "first_citations": cited,
                "second_citations": cited}, **HX))

    def merger(name: str, rng: random.Random) -> None:
        client = client_for(name)
        for _ in range(ROUNDS):
            next_round()
            claims = claims_now(run)
            pairs = [(a, b) for a, b in zip(claims, claims[1:], strict=False)
                     if a.answer_id == b.answer_id and b.index == a.index + 1]
            first, second = rng.choice(pairs)
            seen.add("merge", client.post(url("claim_merge", claim_id=first.pk),
                                          {"other": second.pk, "revision": first.revision}, **HX))

    def snapshotter(name: str, rng: random.Random) -> None:
        client = client_for(name)
        for k in range(ROUNDS):
            next_round()
            seen.add("snapshot", client.post(url("version_create"), {"note": f"round {k}"}))
            seen.add("versions", client.get(url("version_list")))
            response = client.get(url("label_export") + f"?format={rng.choice(['csv', 'xlsx', 'jsonl'])}")
            seen.add("export", response)
            if response.streaming:
                b"".join(response.streaming_content)

    def uploader(name: str, rng: random.Random) -> None:
        client = client_for(name)
        for k in range(ROUNDS):
            next_round()
            if k % 2:
                continue  # an upload every other round
            rows = "".join(f"{c.pk},SUPPORTED,{name} upload {k}\r\n" for c in rng.sample(claims_now(run), 3))
            upload = io.BytesIO(f"claim_id,label,justification\r\n{rows}".encode())
            upload.name = f"{name}-{k}.csv"
            body = seen.add("upload", client.post(url("label_import"), {"file": upload}))
            token = re.search(r'name="token" value="([^"]+)"', body)
            if token:
                seen.add("apply", client.post(url("label_import_apply"), {"token": token.group(1),
                                                                           "newer": "overwrite"}))

    Membership.objects.create(project=run.project, reviewer=ReviewerFactory(username="lee"), role="lead")
    threads = [in_thread(labeler, f"r{n}", errors, rounds) for n in (1, 2, 3, 4)]
    threads += [in_thread(splitter, "splitter", errors, rounds), in_thread(merger, "merger", errors, rounds),
                in_thread(snapshotter, "lea", errors, rounds), in_thread(uploader, "lee", errors, rounds)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=BOOT_SECONDS * 5)  # a bound on a hung thread, not a speed check
    assert not [thread.name for thread in threads if thread.is_alive()], "threads still working"
    assert not errors, errors

    statuses = Counter((kind, status) for kind, status, _body, _retry in seen.answers)
    print(f"\n{connection.vendor}: {sorted(statuses.items())}; {len(seen.acknowledged)} labels acknowledged")
    # No 500, nothing unexpected: each answer is one the reviewer can act on.
    allowed = {200, 302, 404, 409} | ({503} if connection.vendor == "sqlite" else set())
    assert {status for _kind, status in statuses} <= allowed, statuses
    for kind, status, body, retry in seen.answers:
        if status == 409:
            assert "nothing was saved" in body or "nothing was changed" in body or "nothing was merged" in body, body
        if status == 404:
            assert kind in ("label", "split", "merge") and "is not a claim of run" in body, (kind, body)
        if status == 503:
            assert retry == "2" and "busy" in body
        if kind == "label" and status == 200:
            assert "Saved UNSUPPORTED" in body  # no other 200 for a label: a valid label on a cited claim
    # The work happened: labels, splits, merges and versions were saved while the others ran.
    # The audit log counts the splits and merges that were written (its entry is in their transaction):
    # 16 claims + one per split − one per merge.
    done = Counter(AuditEvent.objects.filter(run=run).values_list("action", flat=True))
    print(f"{done['split']} splits, {done['merge']} merges, {done['snapshot']} versions, {done['label']} labels")
    assert done["split"] >= 3 and done["merge"] >= 3 and done["snapshot"] >= 3
    assert len(claims_now(run)) == 16 + done["split"] - done["merge"]
    assert len(seen.acknowledged) >= 10

    # Every acknowledged label is in the database (history keeps even the ones later replaced).
    for name, note in seen.acknowledged:
        assert Label.objects.filter(reviewer__username=name, justification=note).count() == 1, (name, note)

    # No two claims of an answer share an index; indexes run 1…n.
    for answer_id in {c.answer_id for c in claims_now(run)}:
        indexes = sorted(Claim.objects.filter(answer_id=answer_id).values_list("index", flat=True))
        assert indexes == list(range(1, len(indexes) + 1)), indexes
    assert not Claim.objects.values("answer", "index").annotate(n=Count("id")).filter(n__gt=1).exists()

    # Every version is one moment of the table.
    versions = list(LabelTableVersion.objects.filter(run=run).order_by("number"))
    assert [v.number for v in versions] == list(range(1, len(versions) + 1))
    for version in versions:
        data = version_read(version)  # raises unless the file matches its SHA-256
        table = table_from_canonical(data)
        assert canonical_bytes(table) == data
        assert (version.row_count, version.label_count) == (len(table), label_count(table))
        assert (table["citations"] != "").all() and (table["status"] != "uncited").all(), version.number
        for _qid, group in table.groupby("question_id"):
            assert sorted(group["claim_index"]) == list(range(1, len(group) + 1)), version.number

    # Quiet again: a last version equals the table computed from the database now.
    try:
        last = label_table_snapshot(run=run, note="after the race")
    except Exception as exc:  # unchanged since the latest version: that one is the table now
        assert "unchanged since version" in str(exc)
        last = versions[-1]
    assert version_read(last) == canonical_bytes(label_table_frame(run, with_passages=False))


# --------------------------------------------- the races, one step at a time


@pytest.fixture
def bob_on_race(race, client):
    from labeling.models import Reviewer

    client.force_login(Reviewer.objects.get(username="r1"))
    return race, client


def test_label_save_on_a_claim_merged_away_meanwhile_is_a_409_conflict(bob_on_race):
    """The reviewer opened claim 2 of q1; before their save reached the
    database, someone merged claim 1 with claim 2 (claim 2 is gone)."""
    from labeling.review.claim_edits import claim_merge

    run, client = bob_on_race
    first, second = Claim.objects.filter(answer__run=run, answer__question_key="q1", index__in=[1, 2]).order_by("index")
    claim_merge(claim=first, other=second)
    from labeling.review.label_writes import LabelConflict, label_save

    with pytest.raises(LabelConflict, match="Claim 2 was merged into its neighbour by someone else after you "
                                            "opened it: nothing was saved"):
        label_save(claim=second, reviewer=first.answer.run.project.members.get(username="r1"), value="SUPPORTED",
                   justification="", base_revision=1, base_label_id=None)
    assert not Label.objects.filter(justification="late").exists()


def test_citation_judgments_and_factual_mark_on_a_claim_merged_away_are_conflicts(bob_on_race):
    """As above for the per-citation judging form and the ``0`` (not factual)
    key: claim 2 of q1 was merged into claim 1 before the write; both refuse
    with the merge named, the view answers 409, and nothing was written."""
    from labeling.models import CitationJudgment
    from labeling.review.citation_judgments import claim_judge, claim_set_factual
    from labeling.review.claim_edits import claim_merge
    from labeling.review.label_writes import LabelConflict

    run, client = bob_on_race
    first, second = Claim.objects.filter(answer__run=run, answer__question_key="q1", index__in=[1, 2]).order_by("index")
    cited = list(second.citations.values_list("pk", flat=True))
    reviewer = run.project.members.get(username="r1")
    claim_merge(claim=first, other=second)

    with pytest.raises(LabelConflict, match="Claim 2 was merged into its neighbour by someone else"):
        claim_judge(claim=second, reviewer=reviewer, judgments={pk: "FULL" for pk in cited}, evidence={},
                    partials_enough=False, value=None, justification="", base_revision=1, base_label_id=None)
    with pytest.raises(ValidationError, match="Claim 2 was merged into its neighbour by someone else"):
        claim_set_factual(claim=second, factual=False, base_revision=1, actor=reviewer)
    response = client.post(url("claim_factual", claim_id=second.pk), {"factual": "0", "revision": 1}, **HX)

    assert response.status_code == 404  # the view looks the claim up first: gone before the request, not found
    assert not CitationJudgment.objects.filter(citation_id__in=cited).exists()
    assert Claim.objects.filter(answer__run=run, factual=False).count() == 0


def test_split_of_a_claim_split_meanwhile_answers_409_with_the_reason(bob_on_race):
    """Two reviewers split claim 3 at once: the second split names revision 1, the claim is at 2."""
    run, client = bob_on_race
    claim = Claim.objects.get(answer__run=run, answer__question_key="q1", index=3)
    cited = list(claim.citations.values_list("pk", flat=True))
    form = {"revision": 1, "first_citations": cited, "second_citations": cited}
    first = client.post(url("claim_split", claim_id=claim.pk), {"at": 10, **form}, **HX)
    second = client.post(url("claim_split", claim_id=claim.pk), {"at": 12, **form}, **HX)

    assert first.status_code == 200
    assert second.status_code == 409
    assert "Claim 3 was changed by someone else after you opened it: nothing was changed." in second.content.decode()
    assert Claim.objects.filter(answer__run=run, answer__question_key="q1").count() == 9


def test_database_busy_answers_503_with_retry_after(bob_on_race, settings):
    """SQLite (one writer at a time): another process holds the write lock
    longer than the busy timeout (0.2 s here, 20 s in the settings); the save
    answers 503 "busy, retry" with Retry-After, and saved nothing."""
    import sqlite3

    run, client = bob_on_race
    if connection.vendor != "sqlite":
        pytest.skip("PostgreSQL takes row locks and waits; only SQLite locks the whole database")
    claim = Claim.objects.filter(answer__run=run).first()
    connection.close()
    connection.settings_dict["OPTIONS"]["timeout"] = 0.2
    other = sqlite3.connect(connection.settings_dict["NAME"])
    try:
        other.execute("BEGIN IMMEDIATE")
        response = client.post(url("claim_label", claim_id=claim.pk), {
            "claim": claim.pk, "value": "UNSUPPORTED", "justification": "while busy", "revision": 1,
            "base_label": ""}, **HX)
    finally:
        other.rollback()
        other.close()
        connection.close()
        connection.settings_dict["OPTIONS"]["timeout"] = 20

    assert response.status_code == 503
    assert response["Retry-After"] == "2"
    assert response.content.decode() == ("The database is busy with other saves: nothing was saved. Retry in a "
                                         "few seconds.")
    assert not Label.objects.filter(justification="while busy").exists()


def test_busy_middleware_leaves_other_database_errors_alone():
    from django.db import OperationalError
    from django.test import RequestFactory

    from labeling.middleware import DatabaseBusyMiddleware

    middleware = DatabaseBusyMiddleware(lambda request: None)
    request = RequestFactory().post("/x/")

    assert middleware.process_exception(request, OperationalError("deadlock detected")) is None
    assert middleware.process_exception(request, RuntimeError("database is locked")) is None
    assert middleware.process_exception(request, OperationalError("database is locked")).status_code == 503


def test_a_merge_and_a_lease_taken_at_once_do_not_deadlock(race, monkeypatch):
    """PostgreSQL: ``lease_take`` holds the row of claim 4 (its lock, before its upsert)
    while a merge of claims 2 and 3 starts; r1's lease is on claim 3, which the merge
    deletes. The merge used to delete r1's lease (a cascade) and then wait for claim 4
    to renumber it, while r1's upsert waited for that deletion: a deadlock, a 500 for
    one of them (seen in CI under load). The merge now locks the claims it renumbers
    before it writes anything, so it waits for the lease to be taken, then goes on."""
    from labeling.models import ClaimLease, Reviewer
    from labeling.review import claim_edits, queue

    if connection.vendor != "postgresql":
        pytest.skip("SQLite takes a lease in one statement under its one write lock: nothing to interleave")
    run = race
    r1 = Reviewer.objects.get(username="r1")
    first, second, fourth = (Claim.objects.get(answer__run=run, answer__question_key="q1", index=i) for i in (2, 3, 4))
    ClaimLease.objects.create(run=run, reviewer=r1, claim=second, expires_at=timezone.now() + timedelta(minutes=5))
    holding, go, merging_pid = threading.Event(), threading.Event(), []
    upsert, results, errors = queue._lease_upsert, {}, []

    def held_upsert(*args):
        holding.set()  # claim 4's row is locked by lease_take's first statement
        assert go.wait(BOOT_SECONDS), "the merge never came to wait"
        return upsert(*args)

    monkeypatch.setattr(queue, "_lease_upsert", held_upsert)

    def take(name, rng) -> None:
        results["taken"] = queue.lease_take(run=run, reviewer=r1, claim=fourth)

    def merge(name, rng) -> None:
        assert holding.wait(BOOT_SECONDS), "the lease was never taken"
        connection.ensure_connection()
        merging_pid.append(connection.connection.info.backend_pid)
        results["merged"] = claim_edits.claim_merge(claim=first, other=second, base_revision=first.revision)

    threads = [in_thread(take, "take", errors), in_thread(merge, "merge", errors)]
    for thread in threads:
        thread.start()

    def merge_waits_for_a_lock() -> None:
        assert merging_pid
        with connection.cursor() as cursor:
            cursor.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", merging_pid)
            assert cursor.fetchone() == ("Lock",)

    try:
        wait_for(merge_waits_for_a_lock, what="the merge waiting for claim 4", not_yet=(AssertionError,),
                 gone=lambda: repr(errors) if errors else None)
    finally:
        go.set()
        for thread in threads:
            thread.join(timeout=BOOT_SECONDS)  # a bound on a hung thread, not a speed check
    assert not errors, errors
    assert results["taken"] is True
    assert results["merged"].pk == first.pk
    assert dict(ClaimLease.objects.filter(run=run).values_list("reviewer__username", "claim_id")) == {"r1": fourth.pk}
    assert list(Claim.objects.filter(answer__run=run, answer__question_key="q1").order_by("index")
                .values_list("index", flat=True)) == list(range(1, 8))
    assert Claim.objects.get(pk=fourth.pk).index == 3

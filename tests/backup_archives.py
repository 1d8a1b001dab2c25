"""Projects and archives for the backup tests: a small project with a row of
every model of the app, reading and rewriting an archive's members (its
manifest kept consistent, so that the one change a test makes is the only
thing wrong), and ZIP files written by hand (precompressed members, sizes
that lie) for the zip-bomb tests."""

from __future__ import annotations

import hashlib
import json
import struct
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from django.apps import apps

from labeling.integrations.tokens import token_create
from labeling.models import (
    CitationJudgment,
    ExpectedSource,
    GoldPassageId,
    GoldReference,
    GoldSource,
    JudgeRun,
    JudgeRunStatus,
    Label,
    Project,
    Provenance,
    ReviewerKind,
    Role,
    Webhook,
    WebhookDelivery,
)
from labeling.review import label_writes
from labeling.scores.samples import sample_draw
from labeling.tables.versions import label_table_snapshot
from labeling.team import adjudication
from labeling.team.gold_claims import gold_mark
from labeling.team.guidelines import guidelines_save
from labeling.team.memberships import membership_set, run_assign
from labeling.team.send_backs import send_back_create
from tests.factories import (
    AnswerFactory,
    CitationFactory,
    ClaimFactory,
    PassageFactory,
    ProjectFactory,
    QuestionFactory,
    ReviewerFactory,
    RunFactory,
)


def build_project(slug: str) -> Project:
    """Project ``slug`` with at least one row of every model of the app: lead
    ``<slug>-lead``, reviewer ``<slug>-ann``, judge ``<slug>-judge`` (kind
    model, the run's promoted and queue judge, with a judge run); one
    question with gold ids, references and sources; run ``r1`` with ann
    assigned, one answer, one passage, one claim citing it; ann's label
    replaced by a second one (``supersedes``), the judge's label, ann's
    citation judgment, the lead's adjudication, one saved version (its file),
    the run's provenance, an API token, a webhook with a delivery, the
    project's guidelines, the claim as a gold check and ann's label sent back
    (SPEC §4.4), and the audit events those writes left."""
    lead = ReviewerFactory(username=f"{slug}-lead")
    ann = ReviewerFactory(username=f"{slug}-ann")
    judge = ReviewerFactory(username=f"{slug}-judge", kind=ReviewerKind.MODEL)
    project = ProjectFactory(slug=slug)
    membership_set(project=project, reviewer=lead, role=Role.LEAD)
    membership_set(project=project, reviewer=ann, role=Role.REVIEWER)
    guidelines_save(project=project, author=lead, text="Partial support is UNSUPPORTED.")
    question = QuestionFactory(project=project, question_id="q1", gold_ids_given=True,
                               gold_references_given=True, gold_sources_given=True)
    GoldPassageId.objects.create(question=question, passage_id="P1")
    GoldReference.objects.create(question=question, position=0, source="doc.pdf", text="The sky is blue.")
    ExpectedSource.objects.create(question=question, source="doc.pdf")
    run = RunFactory(project=project, name="r1", promoted_judge=judge, queue_judge=judge)
    run_assign(run=run, reviewers=[ann])
    answer = AnswerFactory(run=run, question=question, text="The sky is blue [P1].")
    passage = PassageFactory(answer=answer, passage_id="P1", position=0, text="The sky is blue.")
    claim = ClaimFactory(answer=answer, index=1, text="The sky is blue.")
    citation = CitationFactory(claim=claim, passage=passage, position=0, cited_id="P1")
    judge_run = JudgeRun.objects.create(run=run, reviewer=judge, started_by=lead, status=JudgeRunStatus.DONE,
                                        model="m", answers_total=1, answers_done=1, claims_labeled=1)
    first = label_writes.label_save(claim=claim, reviewer=ann, value="SUPPORTED", justification="",
                                base_revision=claim.revision, base_label_id=None)
    label_writes.label_save(claim=claim, reviewer=ann, value="UNSUPPORTED", justification="it says less",
                        base_revision=claim.revision, base_label_id=first.pk)
    Label.objects.create(claim=claim, reviewer=judge, value="SUPPORTED", claim_revision=claim.revision,
                         judge_run=judge_run)
    CitationJudgment.objects.create(citation=citation, reviewer=ann, judgment="FULL", claim_revision=claim.revision)
    adjudication.adjudication_save(claim=claim, lead=lead, value="SUPPORTED", reason="the passage says it")
    # Reviewer quality (SPEC §4.4): the adjudication is a gold check; ann's label is sent back.
    gold_mark(run=run, claim=claim, lead=lead, source=GoldSource.ADJUDICATION)
    send_back_create(run=run, claim=claim, reviewer=ann, lead=lead, comment="read the passage again")
    label_table_snapshot(run=run, author=lead, note="v1")
    # Where the run came from (import_dataset writes it; SPEC §6).
    Provenance.objects.create(run=run, format="expertqa", source="ExpertQA", url="https://example.org/expertqa",
                              commit="1aa7ba8", licence="MIT", files=[{"name": "r2.jsonl", "sha256": "0" * 64}])
    # The lead's API token for ann, and a webhook with one delivery logged (SPEC §6).
    token_create(project=project, reviewer=ann, created_by=lead, name=f"{slug}-ci")
    hook = Webhook.objects.create(project=project, url="https://hooks.example.org/x", events=["label.saved"],
                                  secret="s", created_by=lead)
    WebhookDelivery.objects.create(webhook=hook, event="label.saved", payload={"event": "label.saved"},
                                   status="delivered", attempts=1, response_status=200)
    # The run's probability sample of its one answer (SPEC §4.6).
    sample_draw(run=run, answers=1, seed=7, actor=lead)
    return project


def model_counts() -> dict[str, int]:
    """Rows per model of the app, every project together."""
    return {model._meta.label_lower: model._base_manager.count()
            for model in apps.get_app_config("labeling").get_models()}


def read_members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as opened:
        return {name: opened.read(name) for name in opened.namelist()}


def rows_of(members: dict[str, bytes], label: str) -> list[dict]:
    return [json.loads(line) for line in members[f"rows/{label}.jsonl"].decode().splitlines()]


def set_rows(members: dict[str, bytes], label: str, rows: list[dict]) -> None:
    members[f"rows/{label}.jsonl"] = "".join(json.dumps(row) + "\n" for row in rows).encode()


def manifest_of(members: dict[str, bytes]) -> dict:
    return json.loads(members["manifest.json"])


def consistent(members: dict[str, bytes]) -> dict[str, bytes]:
    """``members`` with the manifest's row counts and file hashes made to
    match the rows and files present (what a careful forger does)."""
    manifest = manifest_of(members)
    manifest["models"] = {name[5:-6]: len(data.decode().splitlines())
                          for name, data in members.items() if name.startswith("rows/")}
    manifest["files"] = {name[6:]: hashlib.sha256(data).hexdigest()
                         for name, data in members.items() if name.startswith("files/")}
    return {**members, "manifest.json": json.dumps(manifest).encode()}


def write_zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as out:
        for name, data in members.items():
            out.writestr(name, data)
    return path


@dataclass(frozen=True)
class RawMember:
    """One member of a hand-made ZIP: ``data`` as stored (raw deflate when
    ``method`` is 8), the ``size`` and ``crc`` of what it unzips to, and the
    size the central directory declares (``declared``; ``size`` when None)."""

    name: str
    data: bytes
    size: int
    crc: int
    method: int = zipfile.ZIP_DEFLATED
    declared: int | None = None
    flags: int = 0


def deflated(data: bytes) -> RawMember:
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    return RawMember("", compressor.compress(data) + compressor.flush(), len(data), zlib.crc32(data))


def deflated_zeros(mib: int, *, crc: bool = True) -> RawMember:
    """``mib`` MiB of zero bytes, deflated to about 1 KiB per MiB: one
    compressed MiB after a full flush (the compressor forgets everything,
    so each MiB compresses to the same bytes) repeated ``mib`` times. Its
    CRC (about a second per GiB) is 0 unless ``crc``."""
    block = bytes(1 << 20)
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    one = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    checksum = 0
    for _ in range(mib if crc else 0):
        checksum = zlib.crc32(block, checksum)
    return RawMember("", one * mib + compressor.flush(), mib << 20, checksum)


def raw_zip(members: list[RawMember]) -> bytes:
    """A ZIP file (no ZIP64: every size under 4 GiB) of ``members`` exactly as
    given, the central directory declaring ``declared`` sizes."""
    out = bytearray()
    directory = bytearray()
    for member in members:
        name = member.name.encode()
        declared = member.size if member.declared is None else member.declared
        offset = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, member.flags, member.method, 0, 0x21, member.crc,
                           len(member.data), declared, len(name), 0) + name + member.data
        directory += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, member.flags, member.method, 0, 0x21,
                                 member.crc, len(member.data), declared, len(name), 0, 0, 0, 0, 0, offset) + name
    start = len(out)
    out += directory
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(directory), start, 0)
    return bytes(out)

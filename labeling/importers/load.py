"""The service that writes an answers file into the database (SPEC §6), for
every format ``labeling.importers.answers`` reads (JSON Lines, CSV, XLSX).

``run_import`` is all or nothing: a first streaming pass validates every line
(and checks it against what the database already holds) without writing; only
a clean file gets a second pass that writes in batches inside one transaction.
Re-importing the same file creates nothing new (idempotent upserts keyed on
``question_id`` and run × question, with a content hash per answer).

What a file may not do to data other runs rely on: a question's text is
shared by every run, so a file that gives an existing ``question_id`` another
text (or another ``answerable``) is refused, both texts shown. Labels in a
file are credited to an imported reviewer (kind ``external``, or an existing
``model`` labeler) of the name the file gives, never to a login: when a human
account holds that name, the imported reviewer is the account
``<name>@imported`` (see :func:`imported_reviewer_username`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from django.db import connection, transaction
from django.db.models import Count
from django.utils import timezone

from labeling.audit import audit_record
from labeling.db import analyze_after_bulk_write
from labeling.importers.answers import AnswersSource, RecordResults, answer_records
from labeling.importers.answers_jsonl import canonical_passage_id
from labeling.importers.bulk import allocate_ids, insert_rows
from labeling.importers.gold import write_gold
from labeling.importers.records import AnswerRecord, ImportFailed, ImportIssue
from labeling.models import (
    Answer,
    AuditAction,
    Citation,
    CitationJudgment,
    Claim,
    Label,
    Passage,
    Project,
    Question,
    Reviewer,
    ReviewerKind,
    Run,
)
from labeling.names import clean, validate_project_slug, validate_reviewer_name, validate_run_name
from labeling.runs import claims_changed, labels_changed, project_labels_changed
from scoring.labels import label_problem
from scoring.normalize import normalize_source

# Django model instances are the cost here; 1000 answers keep a batch near 10k rows.
BATCH_ANSWERS = 1000
DEFAULT_IMPORT_REVIEWER = "imported"
# Suffix of an imported reviewer whose name a human account already holds.
IMPORTED_SUFFIX = "@imported"


@dataclass
class ImportReport:
    """What an import did: counts of rows created or left unchanged, and the
    non-blocking warnings (e.g. fabricated citations, flagged and kept)."""

    runs: list[str] = field(default_factory=list)
    questions_created: int = 0
    answers_created: int = 0
    answers_unchanged: int = 0
    claims_created: int = 0
    citations_created: int = 0
    fabricated_citations: int = 0
    labels_created: int = 0
    judgments_created: int = 0
    warnings: list[ImportIssue] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"runs {', '.join(self.runs) or '—'}: {self.answers_created} answers imported, "
            f"{self.answers_unchanged} already present, {self.questions_created} new questions, "
            f"{self.claims_created} claims, {self.citations_created} citations "
            f"({self.fabricated_citations} fabricated), {self.labels_created} labels"
            + (f", {self.judgments_created} citation judgments" if self.judgments_created else "")
        )


def answer_content_hash(record: AnswerRecord) -> str:
    """SHA-256 of an answer's content (text, passages, claims, citations),
    labels, citation judgments and ``factual`` marks excluded: equal hashes mean
    a re-import of the same answer."""
    payload = {
        "answer": record.answer,
        "passages": [[p.passage_id, p.source, p.text] for p in record.passages],
        "claims": [
            [c.index, c.text, [[x.passage_id, x.source, x.span] for x in c.citations]] for c in record.claims
        ],
    }
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False, sort_keys=True).encode()).hexdigest()


def _gold_key(record: AnswerRecord) -> str | None:
    if record.gold is None:
        return None
    return json.dumps(
        [record.gold.supporting_ids, record.gold.references, record.gold.expected_sources], ensure_ascii=False
    )


def run_import(
    *, project: Project, source: AnswersSource, format: str | None = None, run_name: str | None = None,
    default_reviewer: str = DEFAULT_IMPORT_REVIEWER, actor: Reviewer | None = None, source_name: str = "",
) -> ImportReport:
    """Import an answers file into ``project`` (SPEC §6): the one entry point
    for every format.

    ``source`` is a path (format from its suffix: ``.jsonl``, ``.csv``,
    ``.xlsx``), bytes or a seekable binary file (``format``, default
    ``"jsonl"``); it is read once, as a stream: each batch of
    ``BATCH_ANSWERS`` answers is checked, then written, so memory stays flat
    in the file's size. The first bad line stops the writing (the checks go
    on, to report every bad line) and the whole transaction rolls back. ``run_name``
    overrides each line's ``run``. Labels without a ``reviewer`` are credited
    to the imported reviewer ``default_reviewer``.

    Raises ValidationError for a bad ``run_name`` or ``default_reviewer``
    (rules in ``labeling.names``), ValueError for an unknown format, and
    ImportFailed listing every bad line (line, field, reason); nothing is
    written then. Fabricated citations are kept, flagged and reported as
    warnings in the returned ImportReport.

    The audit log records the import on every run of the file, under
    ``actor`` (None: the command line), naming the file ``source_name``
    (default: the file name of a path ``source``).
    """
    if run_name is not None:
        run_name = clean(run_name, validate_run_name)
    open_records = answer_records(source, format=format, run=run_name)
    if not source_name and isinstance(source, (str, Path)):
        source_name = Path(source).name
    report, _runs = records_import(project=project, records=open_records(), default_reviewer=default_reviewer,
                                   actor=actor, source_name=source_name)
    return report


def records_import(
    *, project: Project, records: RecordResults, default_reviewer: str = DEFAULT_IMPORT_REVIEWER,
    actor: Reviewer | None = None, source_name: str = "", after_write: Callable[[dict[str, Run]], None] | None = None,
) -> tuple[ImportReport, dict[str, Run]]:
    """Write parsed answer ``records`` (``(line, AnswerRecord or None,
    issues)``, as ``labeling.importers.answers.answer_records`` yields them)
    into ``project``, all or nothing: the writing half of :func:`run_import`,
    shared with ``labeling.importers.datasets.load``. ``after_write`` is called with
    the runs written (name → Run) inside the transaction, before the audit
    entries (a dataset import records its provenance there).

    Returns the report and the runs. Raises ValidationError for a bad
    ``default_reviewer`` and ImportFailed listing every bad line; nothing is
    written then.
    """
    default_reviewer = clean(default_reviewer, validate_reviewer_name)
    report = ImportReport()
    issues: list[ImportIssue] = []
    warnings: list[ImportIssue] = []
    with transaction.atomic():
        writer = _Writer(project=project, report=report, default_reviewer=default_reviewer)
        for batch in _checked_batches(project=project, records=records, issues=issues, warnings=warnings):
            if not issues:
                writer.write(batch)
        if issues:
            # Raised inside the transaction: what the batches before the first bad line wrote is rolled back.
            raise ImportFailed(issues)
        report.warnings = warnings + report.warnings
        report.runs = sorted(writer.runs)
        if after_write is not None:
            after_write(writer.runs)
        for run in writer.runs.values():
            audit_record(action=AuditAction.IMPORT_ANSWERS, actor=actor, run=run, target=source_name,
                         detail={"summary": report.summary(), "answers_created": report.answers_created,
                                 "answers_unchanged": report.answers_unchanged,
                                 "labels_created": report.labels_created,
                                 # The reviewer a command named (labeling.audit: never the actor).
                                 **({"reviewer": default_reviewer}
                                    if default_reviewer != DEFAULT_IMPORT_REVIEWER else {})})
            claims_changed(run=run)
        # What the figures read changed: the runs written, or every run of the project when a
        # question's gold or answerability did (the runs answering it share it). A re-import changing
        # nothing leaves every figure cached.
        if writer.shared_changed:
            project_labels_changed(project=project)
        elif report.answers_created or report.labels_created or report.judgments_created:
            for run in writer.runs.values():
                labels_changed(run=run)
    analyze_after_bulk_write((Question, Answer, Passage, Claim, Citation, Label, CitationJudgment), rows=(
        report.questions_created + report.answers_created + report.claims_created + report.citations_created
        + report.labels_created + report.judgments_created))
    return report, writer.runs


def imported_reviewer_username(name: str, taken_by_humans: set[str]) -> str:
    """The account name of the imported reviewer called ``name``: ``name``
    itself, or — when a human login holds it — ``name@imported`` (again
    suffixed while a human holds that too). A file never speaks for a login."""
    username = name
    while username in taken_by_humans:
        username += IMPORTED_SUFFIX
    return username


def _checked_batches(*, project: Project, records: RecordResults, issues: list[ImportIssue],
                     warnings: list[ImportIssue]) -> Iterator[list[AnswerRecord]]:
    """Batches of checked records: every line's own problems plus cross-line and
    database conflicts are appended to ``issues`` (and non-blocking ones to
    ``warnings``) before the batch holding the line is yielded. What the
    database held before the import is what counts: a question is looked up
    once, before any batch wrote it, and only runs that held answers before
    can conflict with the file. Writes nothing."""
    # question_id -> (text, answerable) stored before this import, or None.
    stored_questions: dict[str, tuple[str, bool | None] | None] = {}
    seen_answers: dict[tuple[str, str], int] = {}
    seen_gold: dict[str, tuple[str | None, int]] = {}
    seen_questions: dict[str, tuple[str, bool | None, int]] = {}
    pending: list[AnswerRecord] = []
    # Only runs that already hold answers can conflict with the file.
    stored_runs = set(Run.objects.filter(project=project, answers__isnull=False).values_list("name", flat=True))

    def check_questions(batch: list[AnswerRecord]) -> None:
        unknown = {r.question_id for r in batch} - stored_questions.keys()
        if unknown:
            stored_questions.update(dict.fromkeys(unknown))
            stored_questions.update(
                (qid, (text, answerable))
                for qid, text, answerable in Question.objects.filter(
                    project=project, question_id__in=unknown,
                ).values_list("question_id", "text", "answerable")
            )
        for record in batch:
            if stored_questions[record.question_id] is None:
                continue
            text, answerable = stored_questions[record.question_id]
            if record.question != text:
                issues.append(ImportIssue(record.line, "question", (
                    f"question {record.question_id!r} is stored with the text {_shown(text)}, this line gives "
                    f"{_shown(record.question)}: a question's text is shared by every run of the project, so "
                    "use the stored text, or give the question another question_id")))
            elif answerable is not None and record.answerable is not None and record.answerable != answerable:
                issues.append(ImportIssue(record.line, "answerable", (
                    f"question {record.question_id!r} is stored as answerable={str(answerable).lower()}, this "
                    f"line gives {str(record.answerable).lower()}: it is shared by every run of the project")))

    def check_database(batch: list[AnswerRecord]) -> None:
        check_questions(batch)
        batch = [record for record in batch if record.run in stored_runs]
        if not batch:
            return
        # Indexed IN lookups, then exact pairs in Python: an OR of 500 pairs
        # makes SQLite scan the table per batch.
        existing = {
            (run, qid): content_hash
            for run, qid, content_hash in Answer.objects.filter(
                run__project=project,
                run__name__in={r.run for r in batch},
                question__question_id__in={r.question_id for r in batch},
            ).values_list("run__name", "question__question_id", "content_hash")
        }
        for record in batch:
            stored = existing.get((record.run, record.question_id))
            if stored is not None and stored != answer_content_hash(record):
                issues.append(ImportIssue(
                    record.line, "answer",
                    f"run {record.run!r} already has a different answer to question {record.question_id!r} "
                    "(text, passages or claims changed); import it under another run name",
                ))

    for number, record, line_issues in records:
        if record is None:
            issues.extend(line_issues)
            continue
        warnings.extend(line_issues)
        key = (record.run, record.question_id)
        if key in seen_answers:
            issues.append(ImportIssue(number, "question_id", f"run {record.run!r} answers question "
                                      f"{record.question_id!r} twice (also line {seen_answers[key]})"))
            continue
        seen_answers[key] = number
        first_question = seen_questions.setdefault(record.question_id,
                                                   (record.question, record.answerable, number))
        if first_question[0] != record.question:
            issues.append(ImportIssue(number, "question", (
                f"question {record.question_id!r} has the text {_shown(record.question)} here but "
                f"{_shown(first_question[0])} on line {first_question[2]}: one question has one text")))
        elif None not in (first_question[1], record.answerable) and first_question[1] != record.answerable:
            issues.append(ImportIssue(number, "answerable", (
                f"question {record.question_id!r} is answerable={str(record.answerable).lower()} here but "
                f"{str(first_question[1]).lower()} on line {first_question[2]}")))
        gold = _gold_key(record)
        if gold is not None:
            first = seen_gold.get(record.question_id)
            if first is not None and first[0] != gold:
                issues.append(ImportIssue(number, "gold", f"gold for question {record.question_id!r} differs "
                                          f"from line {first[1]}"))
            seen_gold.setdefault(record.question_id, (gold, number))
        pending.append(record)
        if len(pending) >= BATCH_ANSWERS:
            check_database(pending)
            yield pending
            pending = []
    if pending:
        check_database(pending)
        yield pending


def _shown(text: str, limit: int = 300) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "…")


class _Writer:
    """Second pass: batched upserts. Only called on a validated stream."""

    def __init__(self, *, project: Project, report: ImportReport, default_reviewer: str):
        self.project = project
        self.report = report
        self.default_reviewer = default_reviewer
        self.runs: dict[str, Run] = {}
        self.new_runs: set[str] = set()
        self.reviewers: dict[str, Reviewer] = {}
        self.gold_written: set[str] = set()
        # Whether a question's gold or answerability changed: every run answering it sees it.
        self.shared_changed = False

    def run(self, name: str) -> Run:
        if name not in self.runs:
            self.runs[name], created = Run.objects.get_or_create(project=self.project, name=name)
            if created:
                self.new_runs.add(name)
        return self.runs[name]

    def reviewer(self, name: str) -> Reviewer:
        """The imported reviewer ``name`` (see :func:`imported_reviewer_username`),
        created as an external labeler that cannot log in when absent."""
        if name not in self.reviewers:
            humans = set(Reviewer.objects.filter(username__startswith=name, kind=ReviewerKind.HUMAN)
                         .values_list("username", flat=True))
            username = imported_reviewer_username(name, humans)
            reviewer = Reviewer.objects.filter(username=username).first()
            if reviewer is None:
                # No password: Django stores an unusable one, so an imported name never logs in.
                reviewer = Reviewer.objects.create_user(username=username, kind=ReviewerKind.EXTERNAL)
            self.reviewers[name] = reviewer
        return self.reviewers[name]

    def write(self, batch: list[AnswerRecord]) -> None:
        questions = self._questions(batch)
        for record in batch:
            self.run(record.run)
        stored = [r for r in batch if r.run not in self.new_runs]
        existing = {
            (a.run_id, a.question_id): a
            for a in Answer.objects.filter(
                run__in={self.runs[r.run] for r in stored}, question__in=[questions[r.question_id] for r in stored]
            ).only("id", "run_id", "question_id")
        } if stored else {}
        new_records: list[AnswerRecord] = []
        known: list[tuple[AnswerRecord, Answer]] = []
        for record in batch:
            answer = existing.get((self.runs[record.run].pk, questions[record.question_id].pk))
            if answer is None:
                new_records.append(record)
            else:
                known.append((record, answer))
        self._create_answers(new_records, questions)
        self._sync_labels(known)
        self.report.answers_unchanged += len(known)

    def _questions(self, batch: list[AnswerRecord]) -> dict[str, Question]:
        ids = {r.question_id for r in batch}
        questions = {q.question_id: q for q in Question.objects.filter(project=self.project, question_id__in=ids)}
        to_create: dict[str, Question] = {}
        to_update: dict[str, Question] = {}
        for record in batch:
            question = questions.get(record.question_id) or to_create.get(record.question_id)
            if question is None:
                to_create[record.question_id] = Question(
                    project=self.project, question_id=record.question_id, text=record.question,
                    answerable=record.answerable,
                )
            elif question.answerable is None and record.answerable is not None:
                # Only an unknown answerable is filled in; a differing one was refused (_validate).
                question.answerable = record.answerable
                to_update[record.question_id] = question
        question_ids = allocate_ids(Question, len(to_create))
        insert_rows(Question, ["project_id", "question_id", "text", "answerable"],
                    ((self.project.pk, q.question_id, q.text, q.answerable) for q in to_create.values()),
                    ids=question_ids)
        for question, pk in zip(to_create.values(), question_ids, strict=True):
            question.pk = question.id = pk
            question._state.adding = False
        if to_update:
            Question.objects.bulk_update(to_update.values(), ["answerable"])
            self.shared_changed = True
        self.report.questions_created += len(to_create)
        questions.update(to_create)
        self.shared_changed |= write_gold(batch, questions, written=self.gold_written)
        return questions

    def _create_answers(self, records: list[AnswerRecord], questions: dict[str, Question]) -> None:
        """Insert the batch's new answers with their passages, claims, citations and
        labels: plain rows through ``labeling.importers.bulk`` (ids allocated first, so each
        table's rows point at the previous one's), no model instance per row."""
        if not records:
            return
        answer_ids = allocate_ids(Answer, len(records))
        insert_rows(Answer, ["run_id", "question_id", "question_key", "text", "content_hash", "external_id"], (
            (self.runs[r.run].pk, questions[r.question_id].pk, r.question_id, r.answer, answer_content_hash(r),
             r.external_id) for r in records), ids=answer_ids)
        passages: list[tuple] = []
        for record, answer_id in zip(records, answer_ids, strict=True):
            passages.extend((answer_id, p.passage_id, k, p.source, p.text) for k, p in enumerate(record.passages))
        passage_ids = allocate_ids(Passage, len(passages))
        insert_rows(Passage, ["answer_id", "passage_id", "position", "source", "text"], passages, ids=passage_ids)
        # (answer id, canonical passage id) and (answer id, normalized source) -> (passage pk, passage id)
        by_id: dict[tuple[int, str], tuple[int, str]] = {}
        by_source: dict[tuple[int, str], tuple[int, str]] = {}
        for (answer_id, passage_id, _k, source, _t), pk in zip(passages, passage_ids, strict=True):
            by_id[(answer_id, canonical_passage_id(passage_id))] = (pk, passage_id)
            by_source.setdefault((answer_id, normalize_source(source)), (pk, passage_id))

        claims: list[tuple] = []
        for record, answer_id in zip(records, answer_ids, strict=True):
            cursor = 0
            for position, claim in enumerate(record.claims):
                # Claim indexes are 1-based, as in the seed's label table.
                start = record.answer.find(claim.text, cursor) if claim.text else -1
                if start >= 0:
                    cursor = start + len(claim.text)
                claims.append((answer_id, position + 1, claim.text, start if start >= 0 else None,
                               start + len(claim.text) if start >= 0 else None, claim.factual))
        claim_ids = allocate_ids(Claim, len(claims))
        insert_rows(Claim, ["answer_id", "index", "text", "start", "end", "factual"], claims, ids=claim_ids)

        citations: list[tuple] = []
        labels: list[tuple] = []
        # The import's time, prepared for the database once: most labels of a file carry no labeled_at.
        now = _created_at_cell(timezone.now())
        # (index into citations, reviewer id, judgment, evidence): written once the citations have ids.
        judged: list[tuple[int, int, str, str]] = []
        fabricated = 0
        claim_iter = iter(zip(claim_ids, claims, strict=True))
        for record in records:
            for claim_record in record.claims:
                claim_id, (answer_id, *_rest) = next(claim_iter)
                for position, cited in enumerate(claim_record.citations):
                    if cited.passage_id is not None:
                        passage = by_id.get((answer_id, canonical_passage_id(cited.passage_id)))
                    else:
                        passage = by_source.get((answer_id, normalize_source(cited.source)))
                    fabricated += passage is None
                    citations.append((
                        claim_id, passage[0] if passage else None, position,
                        passage[1] if passage else (cited.passage_id or cited.source or ""),
                        cited.span, passage is None,
                    ))
                    # SPEC §6: a single judgment is the claim's reviewer's (credited by the parser).
                    for given in cited.judgments:
                        reviewer_id = self.reviewer(given.reviewer or self.default_reviewer).pk
                        judged.append((len(citations) - 1, reviewer_id, given.judgment, given.evidence))
                for given in claim_record.labels:
                    # A new claim is at revision 1 (Claim.revision's default).
                    labels.append((claim_id, self.reviewer(given.reviewer or self.default_reviewer).pk,
                                   given.label, given.justification, 1,
                                   now if given.labeled_at is None else _created_at_cell(given.labeled_at)))
        citation_ids = allocate_ids(Citation, len(citations)) if judged else None
        insert_rows(Citation, ["claim_id", "passage_id", "position", "cited_id", "span", "fabricated"], citations,
                    ids=citation_ids)
        insert_rows(Label, ["claim_id", "reviewer_id", "value", "justification", "claim_revision", "created_at"],
                    labels)
        if citation_ids is not None:
            insert_rows(CitationJudgment, ["citation_id", "reviewer_id", "judgment", "evidence", "claim_revision"],
                        [(citation_ids[k], reviewer_id, judgment, evidence, 1)
                         for k, reviewer_id, judgment, evidence in judged])
        self.report.judgments_created += len(judged)
        self.report.answers_created += len(answer_ids)
        self.report.claims_created += len(claims)
        self.report.citations_created += len(citations)
        self.report.fabricated_citations += fabricated
        self.report.labels_created += len(labels)

    def _sync_labels(self, known: list[tuple[AnswerRecord, Answer]]) -> None:
        """Re-import of an answer already stored: add the file's labels that
        this reviewer has never given on that claim (history kept).

        File claims meet stored claims by their text, not their position: a
        reviewer may have split, merged or edited claims since the import. A
        label whose claim changed, or that would break "UNCITED if and only if
        no citations" (SPEC §3), is not applied and is reported as a warning.
        A label already in the reviewer's history is not given again, so a
        re-import never reverts a later change.
        """
        wanted = [(record, answer) for record, answer in known if any(c.labels for c in record.claims)]
        if not wanted:
            return
        by_text: dict[tuple[int, str], list[Claim]] = {}
        stored = (
            Claim.objects.filter(answer__in=[a for _r, a in wanted])
            .annotate(n_citations=Count("citations"))
            .only("id", "answer_id", "index", "text", "revision")
            .order_by("answer_id", "index")
        )
        for claim in stored:
            by_text.setdefault((claim.answer_id, claim.text), []).append(claim)
        history: dict[tuple[int, int], list[Label]] = {}
        claim_ids = [c.pk for claims in by_text.values() for c in claims]
        for label in Label.objects.filter(claim_id__in=claim_ids).order_by("created_at", "id"):
            history.setdefault((label.claim_id, label.reviewer_id), []).append(label)
        replaced: list[int] = []
        created: list[Label] = []
        for record, answer in wanted:
            for position, claim_record in enumerate(record.claims):
                candidates = by_text.get((answer.pk, claim_record.text))
                claim = candidates.pop(0) if candidates else None
                for k, given in enumerate(claim_record.labels):
                    where = f"claims[{position}].label" if claim_record.label else f"claims[{position}].labels[{k}]"
                    if claim is None:
                        self.report.warnings.append(ImportIssue(
                            record.line, where, "claim was split, merged or edited in Citelab since the import; "
                            "its label from the file was not applied"))
                        continue
                    broken = label_problem(given.label, n_citations=claim.n_citations)
                    if broken is not None:
                        self.report.warnings.append(ImportIssue(
                            record.line, where, f"claim {claim.index} changed since: {broken.message}; not applied"))
                        continue
                    reviewer = self.reviewer(given.reviewer or self.default_reviewer)
                    past = history.get((claim.pk, reviewer.pk), [])
                    if any(lb.value == given.label and lb.justification == given.justification for lb in past):
                        continue
                    replaced.extend(lb.pk for lb in past if lb.is_current)
                    created.append(Label(claim_id=claim.pk, reviewer_id=reviewer.pk, value=given.label,
                                         justification=given.justification, claim_revision=claim.revision))
        Label.objects.filter(pk__in=replaced).update(is_current=False)
        Label.objects.bulk_create(created)
        self.report.labels_created += len(created)


def _created_at_cell(moment: datetime) -> Any:
    """A label's ``created_at`` as ``insert_rows`` writes it: the file's
    ``labeled_at`` (so exports and newer-label checks see when it was given),
    else the import's time."""
    return Label._meta.get_field("created_at").get_db_prep_save(moment, connection)


def project_for_import(*, slug: str | None, name: str | None = None) -> Project:
    """The project an import goes to: ``slug`` (created if absent), else the
    only project there is, else a new project ``default``.

    Raises ValidationError for a slug that breaks the rules of
    ``labeling.names`` (ASCII letters, digits, ``-``, ``_``; 64 characters at
    most); ValueError when no slug is given and several projects exist.
    """
    if slug is not None:
        slug = clean(slug, validate_project_slug)
        project, _created = Project.objects.get_or_create(slug=slug, defaults={"name": name or slug})
        return project
    projects = list(Project.objects.all()[:2])
    if len(projects) == 1:
        return projects[0]
    if not projects:
        return Project.objects.create(slug="default", name=name or "Default project")
    raise ValueError("several projects exist: pass --project SLUG")

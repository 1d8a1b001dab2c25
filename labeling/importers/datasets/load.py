"""The service that imports a public attribution dataset in its own format
(SPEC §6: ``import_dataset --format NAME FILE… --project SLUG [--run
NAME]``): the format's reader (``labeling.importers.datasets``) drafts
answers-file lines, each is validated as one (``answers_jsonl``), and
``answers_import.records_import`` writes them all or nothing, with the
run's provenance (dataset, commit, licence, the files' SHA-256).

Run names: a dataset's system (``rr_gs_gpt4``, ``gpt-4-0613`` …) names its
run. ``run_name`` renames: with one system in the files it is the run's
name, with several each run is ``<run_name>-<system>``. A reader without
systems (HAGRID's answers, an LFQA-Verification file) uses its default.

Re-importing the same files changes nothing (the answers importer's
idempotent upserts) and replaces the provenance with the same values.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

from django.utils import timezone

from labeling.importers.answers_jsonl import _LineProblems, answer_record_from_dict
from labeling.importers.datasets import dataset_reader
from labeling.importers.datasets.common import Draft, SourceFile
from labeling.importers.load import ImportReport, records_import
from labeling.importers.records import AnswerRecord, ImportFailed, ImportIssue
from labeling.models import Project, Provenance, Reviewer, Run
from labeling.names import clean, validate_run_name

MAX_COMMIT_CHARS = 64


def dataset_import(
    *, project: Project, format: str, files: list[Path | SourceFile], run_name: str | None = None,
    commit: str | None = None, actor: Reviewer | None = None,
) -> tuple[ImportReport, dict[str, Run]]:
    """Import the dataset ``files`` of ``format`` into ``project``.

    ``files``: paths, or ``SourceFile`` (name and bytes). ``commit``: the
    commit of the dataset's repository the files come from (default: the
    one the reader was written against, ``SOURCE.commit``). Returns the
    answers import's report and the runs written (name → Run); each run's
    ``Provenance`` is created or replaced.

    Raises ValueError for an unknown format, no file, or a commit longer than
    64 characters; ValidationError for a bad ``run_name``; ImportFailed
    listing every bad record (file, line, field, reason), nothing written.
    """
    reader = dataset_reader(format)
    if not files:
        raise ValueError(f"give the {reader.SOURCE.name} files: {reader.SOURCE.files}")
    if run_name is not None:
        run_name = clean(run_name, validate_run_name)
    commit = (commit or reader.SOURCE.commit).strip()
    if len(commit) > MAX_COMMIT_CHARS:
        raise ValueError(f"--commit is {len(commit)} characters long; a commit id has at most {MAX_COMMIT_CHARS}")
    sources = [f if isinstance(f, SourceFile) else SourceFile(name=Path(f).name, data=Path(f).read_bytes())
               for f in files]
    drafts = list(reader.drafts(sources))
    main = sources[0].name

    def provenance(runs: dict[str, Run]) -> None:
        for run in runs.values():
            Provenance.objects.update_or_create(run=run, defaults={
                "format": reader.__name__.rsplit(".", 1)[-1].replace("_", "-"), "source": reader.SOURCE.name,
                "url": reader.SOURCE.url, "commit": commit, "licence": reader.SOURCE.licence,
                "files": [{"name": s.name, "sha256": hashlib.sha256(s.data).hexdigest()} for s in sources],
                "note": reader.SOURCE.note, "imported_at": timezone.now()})

    try:
        return records_import(project=project, records=_records(drafts, reader, run_name),
                              default_reviewer=_default_reviewer(reader), actor=actor,
                              source_name=", ".join(s.name for s in sources), after_write=provenance)
    except ImportFailed as failure:
        # Cross-line issues (an answer given twice …) come without a file: the first file's lines.
        raise ImportFailed([issue if issue.file else dataclasses.replace(issue, file=main)
                            for issue in failure.issues]) from None


def _default_reviewer(reader: ModuleType) -> str:
    return getattr(reader, "DEFAULT_REVIEWER", "imported")


def _records(drafts: list[Draft], reader: ModuleType, run_name: str | None
             ) -> Iterator[tuple[int, AnswerRecord | None, list[ImportIssue]]]:
    """The drafts as the answers importer's records, each checked as an
    answers-file line; issues keep the draft's file."""
    systems = {draft.system for draft in drafts}
    for draft in drafts:
        if draft.answer is None:
            yield draft.line, None, draft.issues
            continue
        system = draft.system or reader.DEFAULT_RUN
        if run_name:
            system = run_name if len(systems) <= 1 else f"{run_name}-{system}"
        try:
            record = answer_record_from_dict({**draft.answer, "run": system}, line=draft.line)
        except _LineProblems as problems:
            yield draft.line, None, [dataclasses.replace(issue, file=draft.file) for issue in problems.issues]
            continue
        yield draft.line, record, [dataclasses.replace(issue, file=draft.file) for issue in record.warnings]

"""Label table versions (SPEC §2 "label table", §6): freeze a run's label table,
read a version back, score it, compare two.

:func:`label_table_snapshot` freezes a run's label table (the agreed labels,
``labeling.exports.label_table``) as an immutable ``LabelTableVersion``: numbered 1,
2, … per run, its canonical JSON Lines serialization stored through Django's default
storage and hashed with SHA-256. :func:`version_read` gives the bytes back only when
the hash still matches (else :class:`VersionIntegrityError`). Versions are never
edited or deleted by the app. :func:`version_diff` compares two versions row by row
(``labeling.tables.diff``).
"""

from __future__ import annotations

import hashlib

from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.core.files.base import ContentFile
from django.db import IntegrityError, OperationalError

from labeling.audit import audit_record
from labeling.db import consistent_read, snapshot_lock
from labeling.exports.label_table import (
    canonical_bytes,
    label_count,
    label_table_frame,
    table_claim_metrics,
    table_from_canonical,
)
from labeling.models import (
    AuditAction,
    LabelTableVersion,
    Reviewer,
    Run,
)
from labeling.tables.diff import LabelTableDiff, diff_label_tables
from scoring.claims import ClaimMetrics
from scoring.lazy import pd  # loaded on first use: keeps start-up fast (SPEC §7)

MAX_NOTE_CHARS = 2000


SNAPSHOT_UNCHANGED = "unchanged"  # ValidationError code of label_table_snapshot


_SNAPSHOT_ATTEMPTS = 5


class VersionIntegrityError(Exception):
    """A label table version's stored file is missing or no longer matches
    the SHA-256 recorded when the version was made (tampering or corruption)."""

    def __init__(self, version: LabelTableVersion, reason: str):
        self.version = version
        self.reason = reason
        super().__init__(
            f"label table version {version.number} of run {version.run.name!r} failed verification: {reason}"
        )


def label_table_snapshot(*, run: Run, author: Reviewer | None = None, note: str = "",
                         command_line: bool = False) -> LabelTableVersion:
    """Freeze ``run``'s current label table as its next version, by ``author``.

    The audit log names the one who asked (``labeling.audit``): ``author``
    in the browser; with ``command_line`` "command line", the author in the
    event's detail (``author``).

    The number is max + 1 under a row lock on the run (retried on the unique
    constraint if two snapshots still race). ``row_count`` = claims,
    ``label_count`` = claims with a label (UNCITED included), ``sha256`` = hash
    of the canonical serialization (labeling.exports.label_table) stored in
    ``file``. Raises ValidationError for a note over 2000 characters, and
    (code ``SNAPSHOT_UNCHANGED``) when the table is byte for byte the latest
    version's (same SHA-256): a second, identical version would only make
    the list longer and hide which version saved the labels. Nothing is
    created then.
    """
    note = note.strip()
    if len(note) > MAX_NOTE_CHARS:
        raise ValidationError(f"the note is {len(note)} characters long; keep it under {MAX_NOTE_CHARS}")
    for attempt in range(_SNAPSHOT_ATTEMPTS):
        stored: str | None = None
        try:
            # One moment for every read of the table, and one snapshot of the run at a time.
            with consistent_read(for_write=True):
                snapshot_lock(run.pk)
                table = label_table_frame(run, with_passages=False)
                data = canonical_bytes(table)
                digest = hashlib.sha256(data).hexdigest()
                latest = LabelTableVersion.objects.filter(run=run).order_by("-number").first()
                if latest is not None and latest.sha256 == digest:
                    raise ValidationError(
                        f"The label table is unchanged since version {latest.number} (SHA-256 {digest[:12]}…): "
                        "no new version saved.", code=SNAPSHOT_UNCHANGED,
                    )
                number = (latest.number if latest else 0) + 1
                version = LabelTableVersion(
                    run=run, number=number, author=author, note=note, row_count=len(table),
                    label_count=label_count(table), sha256=digest,
                )
                name = f"{run.project.slug}/run-{run.pk}/v{number}-{digest[:12]}.jsonl"
                version.file.save(name, ContentFile(data), save=False)
                stored = version.file.name
                version.save()
                audit_record(action=AuditAction.SNAPSHOT, actor=None if command_line else author, run=run,
                             target=f"version {number}",
                             detail={"sha256": digest, "rows": version.row_count, "labels": version.label_count,
                                     "note": note[:300],
                                     **({"author": author.username} if command_line and author else {})})
                return version
        except (IntegrityError, OperationalError) as exc:
            # A concurrent snapshot took the number (its commit came after this one's moment), or
            # PostgreSQL gave up on this transaction (serialization failure, SQLSTATE 40001):
            # try again, reading the run as it is now.
            if stored:
                version.file.storage.delete(stored)
            if isinstance(exc, OperationalError) and getattr(exc.__cause__, "sqlstate", None) != "40001":
                raise
            if attempt == _SNAPSHOT_ATTEMPTS - 1:
                raise ValidationError("another snapshot of this run was being taken at the same time; "
                                      "try again") from None
        except BaseException:
            if stored:
                version.file.storage.delete(stored)
            raise
    raise AssertionError("unreachable")  # pragma: no cover


def version_read(version: LabelTableVersion) -> bytes:
    """The stored canonical file of ``version``, verified.

    Raises VersionIntegrityError when the file is missing or unreadable or its
    SHA-256 differs from ``version.sha256``; its reason names the file by its
    storage name (``label_tables/…``), never by a path on the server.
    """
    storage = version.file.storage
    try:
        with storage.open(version.file.name, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        raise VersionIntegrityError(version, f"its file {version.file.name!r} cannot be read: it is missing "
                                             "from storage") from None
    except OSError as exc:
        # str(exc) names the absolute path on the server: show the storage name and the reason only.
        raise VersionIntegrityError(version, f"its file {version.file.name!r} cannot be read: "
                                             f"{exc.strerror or exc.__class__.__name__}") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != version.sha256:
        raise VersionIntegrityError(
            version, f"its file {version.file.name!r} has SHA-256 {digest[:16]}…, but the version recorded "
                     f"{version.sha256[:16]}…: the file was changed after the snapshot",
        )
    return data


def version_table(version: LabelTableVersion) -> pd.DataFrame:
    """The label table frame stored in ``version`` (``passage`` empty), verified.

    Raises VersionIntegrityError (see :func:`version_read`).
    """
    data = version_read(version)
    try:
        return table_from_canonical(data)
    except ValueError as exc:
        raise VersionIntegrityError(version, f"its content is not a label table ({exc})") from None


def version_scores(version: LabelTableVersion) -> ClaimMetrics:
    """Coverage/support of ``version``'s table (SPEC §4.1), computed from
    the file alone. Verifies the file every call; the metrics are cached by
    content hash (equal hash, equal table, equal scores).

    Raises VersionIntegrityError (see :func:`version_read`).
    """
    data = version_read(version)
    key = f"citelab:label-table-metrics:{version.sha256}"
    metrics = cache.get(key)
    if metrics is None:
        metrics = table_claim_metrics(table_from_canonical(data))
        cache.set(key, metrics, timeout=None)
    return metrics


def version_diff(*, old: LabelTableVersion, new: LabelTableVersion) -> LabelTableDiff:
    """Row-by-row diff of two versions of one run. Raises ValidationError
    when they belong to different runs, VersionIntegrityError on a bad file."""
    if old.run_id != new.run_id:
        raise ValidationError("only versions of the same run can be compared")
    return diff_label_tables(version_table(old), version_table(new))

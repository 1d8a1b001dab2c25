"""Lossless backup and restore of one project (issue 14 §6): ``export_project``
and ``import_project``.

An archive is a zip file:

- ``manifest.json``: ``{"format": 1, "project": slug, "exported_at": ISO time,
  "models": {"labeling.claim": row count, …}, "files": {storage name: SHA-256}}``;
- ``rows/<app>.<model>.jsonl``: one row a line, as Django's ``python``
  serializer gives it (``{"model", "pk", "fields"}``, values JSON-encoded);
- ``files/<storage name>``: every file a row names (label table versions),
  byte for byte.

What is exported is found from the models, not listed by hand, so a model
added later is backed up too: every model of the ``labeling`` app with a chain
of foreign keys to ``Project`` (its rows are those of the project; required
keys are followed before optional ones), plus the
reviewers any of those rows names (by a foreign key to the user model). A
model of the app with no such chain (and not the user model) is refused by
:func:`project_models` until it is placed: ``GLOBAL_MODELS`` names the ones
that are not a project's.

Restore keeps every primary key, so ids written inside version files (claim
ids) still name the same claims and every version's SHA-256 still verifies.
Reviewers are matched by username: an existing account of that name is used
as it is (its password untouched), a new one is created with the archived
password hash. It is refused, with nothing written, when the project's slug
or any archived id is already taken in the database (restore into a fresh
database, or delete the project first), or when the archive's row counts or
file hashes do not match its manifest.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, time
from pathlib import PurePosixPath
from typing import IO, Any

from django.apps import apps
from django.contrib.auth import get_user_model
from django.core import serializers
from django.core.exceptions import ValidationError
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.management.color import no_style
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, models, transaction
from django.utils import timezone

from labeling.models import Project

FORMAT = 1
APP = "labeling"
# Models of the app that belong to no project (none today): named here so the
# export knows it is meant to leave them out.
GLOBAL_MODELS: frozenset[str] = frozenset()
_BATCH = 2_000


@dataclass(frozen=True)
class ProjectModel:
    """A model whose rows belong to a project through ``path`` (a lookup such as
    ``"answer__run__project"``; ``""`` for ``Project`` itself)."""

    model: type[models.Model]
    path: str

    @property
    def label(self) -> str:
        return self.model._meta.label_lower


def _path_to_project(model: type[models.Model], *, nullable: bool = False) -> str | None:
    """The shortest chain of foreign keys from ``model`` to ``Project`` as a lookup
    path, or ``None`` when there is none. Only required (non-null) keys unless
    ``nullable``: a label's optional judge run must not decide which labels are the
    project's (its claim does). User-model links are not followed."""
    if model is Project:
        return ""
    user_model = get_user_model()
    queue: deque[tuple[type[models.Model], str]] = deque([(model, "")])
    seen = {model}
    while queue:
        current, path = queue.popleft()
        for field in current._meta.concrete_fields:
            target = field.related_model if field.is_relation and (field.many_to_one or field.one_to_one) else None
            if target is None or target is user_model or target in seen or (field.null and not nullable):
                continue
            step = f"{path}__{field.name}" if path else field.name
            if target is Project:
                return step
            seen.add(target)
            queue.append((target, step))
    return None


def project_models() -> list[ProjectModel]:
    """Every model of the app with its path to ``Project``, ``Project`` first.
    Raises ``LookupError`` naming a model with no path that ``GLOBAL_MODELS`` does
    not list (decide where it belongs before backups silently miss it)."""
    found, unplaced = [], []
    user_model = get_user_model()
    for model in apps.get_app_config(APP).get_models():
        if model is user_model or model._meta.label_lower in GLOBAL_MODELS:
            continue
        path = _path_to_project(model)
        if path is None:
            path = _path_to_project(model, nullable=True)
        if path is None:
            unplaced.append(model._meta.label_lower)
        else:
            found.append(ProjectModel(model, path))
    if unplaced:
        raise LookupError(f"no foreign-key path to Project for {', '.join(unplaced)}: give it one or list it "
                          "in labeling.backup.GLOBAL_MODELS")
    return sorted(found, key=lambda m: (m.model is not Project, m.path.count("__"), m.label))


def _rows(spec: ProjectModel, project: Project) -> models.QuerySet:
    lookup = {"pk": project.pk} if not spec.path else {spec.path: project.pk}
    return spec.model._base_manager.filter(**lookup).order_by("pk")


def _user_fields(model: type[models.Model]) -> list[models.Field]:
    user_model = get_user_model()
    return [f for f in model._meta.concrete_fields if f.is_relation and f.related_model is user_model]


def _serialize(objects) -> list[dict[str, Any]]:
    return serializers.serialize("python", objects)


class _Encoder(DjangoJSONEncoder):
    """Django's JSON encoder with times to the microsecond (Django's keeps milliseconds:
    a restored row would differ from the archived one)."""

    def default(self, o: Any) -> Any:
        if isinstance(o, datetime | time):
            return o.isoformat()
        return super().default(o)


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(row, cls=_Encoder, ensure_ascii=False, sort_keys=True) + "\n"
                   for row in rows).encode("utf-8")


@contextmanager
def _one_moment() -> Iterator[None]:
    """A transaction whose reads all see one moment: REPEATABLE READ on
    PostgreSQL (each statement would otherwise see its own moment); SQLite's
    transactions already do. Inside an open transaction, that one's."""
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        yield


@dataclass(frozen=True)
class BackupSummary:
    """What an export wrote or an import restored: rows per model label and file count."""

    project: str
    rows: dict[str, int]
    files: int

    def describe(self) -> str:
        total = sum(self.rows.values())
        parts = ", ".join(f"{count} {label.split('.')[1]}" for label, count in self.rows.items() if count)
        return f"project {self.project}: {total} rows ({parts}), {self.files} files"


def project_export(*, project: Project, out: IO[bytes]) -> BackupSummary:
    """Write the whole of ``project`` to ``out`` as a zip archive (module docstring),
    read in one transaction so the archive is one moment of the project."""
    specs = project_models()
    user_model = get_user_model()
    payload: dict[str, bytes] = {}
    counts: dict[str, int] = {}
    file_names: list[str] = []
    user_ids: set[int] = set()
    with _one_moment():
        for spec in specs:
            rows: list[dict[str, Any]] = []
            query = _rows(spec, project)
            for start in range(0, 1 << 62, _BATCH):
                batch = list(query[start:start + _BATCH])
                if not batch:
                    break
                for obj in batch:
                    user_ids.update(getattr(obj, f.attname) for f in _user_fields(spec.model)
                                    if getattr(obj, f.attname) is not None)
                    file_names.extend(getattr(obj, f.attname).name for f in spec.model._meta.concrete_fields
                                      if isinstance(f, models.FileField) and getattr(obj, f.attname))
                rows.extend(_serialize(batch))
            payload[f"rows/{spec.label}.jsonl"] = _jsonl(rows)
            counts[spec.label] = len(rows)
        users = list(user_model._base_manager.filter(pk__in=user_ids).order_by("pk"))
        user_rows = [{**row, "fields": {k: v for k, v in row["fields"].items()
                                        if k not in ("groups", "user_permissions")}} for row in _serialize(users)]
        payload[f"rows/{user_model._meta.label_lower}.jsonl"] = _jsonl(user_rows)
        counts = {user_model._meta.label_lower: len(user_rows), **counts}
        files: dict[str, bytes] = {}
        for name in sorted(set(file_names)):
            with default_storage.open(name, "rb") as handle:
                files[name] = handle.read()
    manifest = {"format": FORMAT, "project": project.slug, "exported_at": timezone.now().isoformat(),
                "models": counts, "files": {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}}
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("manifest.json", json.dumps(manifest, indent=2, ensure_ascii=False))
        for name, data in payload.items():
            archive.writestr(name, data)
        for name, data in files.items():
            archive.writestr(f"files/{name}", data)
    return BackupSummary(project=project.slug, rows=counts, files=len(files))


def _read_archive(source: IO[bytes]) -> tuple[dict[str, Any], dict[str, list[dict]], dict[str, bytes]]:
    """Manifest, rows by model label and files by storage name; ValidationError
    when the archive is not one, or does not match its manifest."""
    try:
        archive = zipfile.ZipFile(source)
        manifest = json.loads(archive.read("manifest.json"))
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise ValidationError(f"Not a Citelab project archive ({exc}).", code="bad_archive") from None
    if manifest.get("format") != FORMAT:
        raise ValidationError(f"Archive format {manifest.get('format')!r} is not {FORMAT}: export it again with "
                              "this version.", code="bad_archive")
    rows: dict[str, list[dict]] = {}
    for label, count in manifest["models"].items():
        try:
            lines = archive.read(f"rows/{label}.jsonl").decode("utf-8").splitlines()
        except KeyError:
            raise ValidationError(f"The archive has no rows/{label}.jsonl.", code="bad_archive") from None
        rows[label] = [json.loads(line) for line in lines]
        if len(rows[label]) != count:
            raise ValidationError(f"rows/{label}.jsonl holds {len(rows[label])} rows, the manifest says {count}.",
                                  code="bad_archive")
    files: dict[str, bytes] = {}
    for name, digest in manifest["files"].items():
        path = PurePosixPath(name)
        if path.is_absolute() or ".." in path.parts:
            raise ValidationError(f"File name {name!r} leaves the storage.", code="bad_archive")
        data = archive.read(f"files/{name}")
        if hashlib.sha256(data).hexdigest() != digest:
            raise ValidationError(f"files/{name} does not match its SHA-256 in the manifest.", code="bad_archive")
        files[name] = data
    return manifest, rows, files


def _taken(model: type[models.Model], pks: list[Any]) -> list[Any]:
    taken: list[Any] = []
    for start in range(0, len(pks), _BATCH):
        taken.extend(model._base_manager.filter(pk__in=pks[start:start + _BATCH]).values_list("pk", flat=True))
    return sorted(taken)


def project_import(*, source: IO[bytes]) -> BackupSummary:
    """Restore the project archived in ``source`` (module docstring): all or
    nothing. Returns what was restored; ValidationError (nothing written) for a
    bad archive, a slug or id already taken, or a file name already used by
    different content."""
    manifest, rows, files = _read_archive(source)
    user_model = get_user_model()
    user_label = user_model._meta.label_lower
    specs = {spec.label: spec for spec in project_models()}
    unknown = sorted(set(rows) - set(specs) - {user_label})
    if unknown:
        raise ValidationError(f"The archive holds rows of models this version does not have: {', '.join(unknown)}.",
                              code="bad_archive")
    written: list[str] = []
    try:
        with transaction.atomic():
            if Project.objects.filter(slug=manifest["project"]).exists():
                raise ValidationError(f"Project {manifest['project']!r} already exists here: delete it first, or "
                                      "restore into another database.", code="project_exists")
            users = _restore_users(rows.get(user_label, []))
            for label, spec in specs.items():
                objects = rows.get(label, [])
                taken = _taken(spec.model, [row["pk"] for row in objects])
                if taken:
                    shown = ", ".join(str(pk) for pk in taken[:5])
                    raise ValidationError(
                        f"{len(taken)} {spec.model._meta.verbose_name_plural} of the archive have ids already used "
                        f"here ({shown}…): restore into a fresh database.", code="ids_taken")
                user_fields = [f.name for f in _user_fields(spec.model)]
                for row in objects:
                    for name in user_fields:
                        if row["fields"].get(name) is not None:
                            row["fields"][name] = users[row["fields"][name]]
                for start in range(0, len(objects), _BATCH):
                    for deserialized in serializers.deserialize("python", objects[start:start + _BATCH]):
                        deserialized.save()  # raw: keeps pks and auto_now values as archived
            for name, data in files.items():
                if default_storage.exists(name):
                    with default_storage.open(name, "rb") as handle:
                        if handle.read() != data:
                            raise ValidationError(f"The storage already holds a different file {name!r}.",
                                                  code="file_taken")
                    continue
                stored = default_storage.save(name, ContentFile(data))
                written.append(stored)
                if stored != name:
                    raise ValidationError(f"The storage renamed {name!r} to {stored!r}.", code="file_taken")
            _reset_sequences([spec.model for spec in specs.values()] + [user_model])
    except BaseException:
        for name in written:
            default_storage.delete(name)
        raise
    return BackupSummary(project=manifest["project"], rows=dict(manifest["models"]), files=len(files))


def _restore_users(user_rows: list[dict]) -> dict[int, int]:
    """Archived user pk → pk here: an existing account of the same username, or
    a new one (its archived pk when free) with the archived fields."""
    user_model = get_user_model()
    mapping: dict[int, int] = {}
    for row in user_rows:
        fields = row["fields"]
        existing = user_model._base_manager.filter(username=fields["username"]).values_list("pk", flat=True).first()
        if existing is not None:
            mapping[row["pk"]] = existing
            continue
        pk = row["pk"] if not user_model._base_manager.filter(pk=row["pk"]).exists() else None
        [deserialized] = serializers.deserialize("python", [{**row, "pk": pk}])
        deserialized.object.pk = pk
        deserialized.object.save(force_insert=True)
        mapping[row["pk"]] = deserialized.object.pk
    return mapping


def _reset_sequences(model_list: list[type[models.Model]]) -> None:
    """After inserting explicit ids, move PostgreSQL's id sequences past them."""
    statements = connection.ops.sequence_reset_sql(no_style(), model_list)
    with connection.cursor() as cursor:
        for sql in statements:
            cursor.execute(sql)

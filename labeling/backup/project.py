"""Lossless backup and restore of one project (SPEC §7): ``export_project``
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
An archive is not trusted (SPEC §7): ``labeling.backup.archive`` refuses a
damaged or crafted one (bad ZIP, path traversal, a zip bomb past
``CITELAB_MAX_UNZIPPED_MB``, more rows than ``CITELAB_MAX_IMPORT_ROWS``, a
manifest or row of the wrong shape or types, counts or hashes that do not
match), and :func:`project_import` refuses every row that does not belong to
the archived project: each foreign key must name a row of the archive (one
project row, the manifest's; every other row chained to it) or one of the
archive's reviewers, each reviewer must be named by a row, each file by a
row and lie in the project's folder. Reviewers are matched by login name,
normalized as the login form does: an existing account of that name is used
and never changed (password, rights, other memberships); a new one is created
without staff or superuser rights and with an unusable password, unless the
restore is asked to keep them (``--keep-account-rights``,
``--keep-passwords``). It is refused, with nothing written, when the
project's slug or any archived id is already taken in the database (restore
into a fresh database, or delete the project first).
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from datetime import datetime, time
from graphlib import TopologicalSorter
from typing import IO, Any

from django.apps import apps
from django.contrib.auth import get_user_model
from django.core import serializers
from django.core.exceptions import ValidationError
from django.core.files.base import File
from django.core.files.storage import default_storage
from django.core.serializers.json import DjangoJSONEncoder
from django.db import DataError, IntegrityError, connection, models, transaction
from django.utils import timezone

from labeling.backup.archive import FORMAT, Archive, archive_open, bad, row_values, serialized_fields
from labeling.models import Project

APP = "labeling"
# Models of the app that belong to no project (none today): named here so the
# export knows it is meant to leave them out.
# A reviewer's single sign-on identity (labeling.integrations.sso) is the server's, not a project's: a
# restored reviewer signing in again is a new account until an administrator ties them.
GLOBAL_MODELS: frozenset[str] = frozenset({"labeling.ssoidentity"})
# Models of the app whose rows a backup leaves out: a claim lease is a reservation of a
# few minutes (labeling.review.queue), not data; a restored project starts with none.
UNSAVED_MODELS: frozenset[str] = frozenset({"labeling.claimlease"})
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
    """Every model of the app with its path to ``Project``, ``Project`` first
    (``UNSAVED_MODELS`` left out).
    Raises ``LookupError`` naming a model with no path that ``GLOBAL_MODELS`` does
    not list (decide where it belongs before backups silently miss it)."""
    found, unplaced = [], []
    user_model = get_user_model()
    for model in apps.get_app_config(APP).get_models():
        if model is user_model or model._meta.label_lower in GLOBAL_MODELS | UNSAVED_MODELS:
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
                          "in labeling.backup.project.GLOBAL_MODELS")
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
    """What an export wrote or an import restored: rows per model label and
    file count; for an import, the login names of the accounts it created and
    of the existing accounts it used."""

    project: str
    rows: dict[str, int]
    files: int
    accounts_created: tuple[str, ...] = ()
    accounts_matched: tuple[str, ...] = ()

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


def _taken(model: type[models.Model], pks: list[int]) -> list[int]:
    taken: list[int] = []
    for start in range(0, len(pks), _BATCH):
        taken.extend(model._base_manager.filter(pk__in=pks[start:start + _BATCH]).values_list("pk", flat=True))
    return sorted(taken)


def _insert_order(specs: list[ProjectModel]) -> list[ProjectModel]:
    """``specs`` with every model after the models its foreign keys name, so a
    row's keys are checked against rows already read (a key to its own model,
    a label's ``supersedes``, is checked after its whole file)."""
    by_model = {spec.model: spec for spec in specs}
    graph = {spec.model: {f.related_model for f in spec.model._meta.local_fields
                          if f.is_relation and f.related_model in by_model and f.related_model is not spec.model}
             for spec in specs}
    return [by_model[model] for model in TopologicalSorter(graph).static_order()]


class _ChunkStream(io.RawIOBase):
    """A readable stream over chunks of bytes, hashing them as they are read
    (what the storage writes is what was verified)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._rest = b""
        self.sha256 = hashlib.sha256()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._rest:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self.sha256.update(chunk)
            self._rest = chunk
        size = min(len(buffer), len(self._rest))
        buffer[:size] = self._rest[:size]
        self._rest = self._rest[size:]
        return size


def _stored_sha256(name: str) -> str:
    digest = hashlib.sha256()
    with default_storage.open(name, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 16), b""):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass
class _Restore:
    """The state of one restore: which archived ids were read, how archived
    reviewers map to accounts here, which reviewers and files rows name."""

    archive: Archive
    keep_account_rights: bool
    keep_passwords: bool
    users: dict[int, int] = dataclass_field(default_factory=dict)  # archived reviewer pk → account pk here
    named_users: set[int] = dataclass_field(default_factory=set)
    ids: dict[str, set[int]] = dataclass_field(default_factory=dict)  # archived ids by model label
    named_files: set[str] = dataclass_field(default_factory=set)
    # (where, field name, model label, id) of keys to rows not read yet when checked
    pending: list[tuple[str, str, str, int]] = dataclass_field(default_factory=list)
    created: list[str] = dataclass_field(default_factory=list)
    matched: list[str] = dataclass_field(default_factory=list)

    def reviewers(self) -> None:
        """Map each archived reviewer to an account: the existing one of the
        same login name (normalized as the login form does), left as it is,
        or a new one without staff or superuser rights and with an unusable
        password unless ``keep_account_rights`` / ``keep_passwords``."""
        user_model = get_user_model()
        label = user_model._meta.label_lower
        names: dict[str, int] = {}
        for where, row in self.archive.rows(label):
            # Not the login-name validator: imported reviewers' names ("Dr Ruiz@imported") are not login names.
            pk, values = row_values(user_model, row, label=label, where=where, validators=False)
            here = f"{label} row {pk} ({where})"
            if pk in self.users:
                raise bad(f"{here}: id {pk} appears twice")
            username = user_model.normalize_username(values["username"])
            if not username:
                raise bad(f"{here}, field username: the login name is blank")
            if username in names:
                raise bad(f"{here}, field username: {username!r} is also the login name of row {names[username]} "
                          "once normalized")
            names[username] = pk
            existing = user_model._base_manager.filter(username=username).values_list("pk", flat=True).first()
            if existing is not None:
                self.users[pk] = existing
                self.matched.append(username)
                continue
            account = user_model(**{**values, "username": username})
            if not self.keep_account_rights:
                account.is_staff = account.is_superuser = False
            if not self.keep_passwords:
                account.set_unusable_password()
            account.pk = None if user_model._base_manager.filter(pk=pk).exists() else pk
            _store(here, lambda account=account: account.save(force_insert=True))
            self.users[pk] = account.pk
            self.created.append(username)

    def rows(self, spec: ProjectModel) -> None:
        """Check and insert the archived rows of ``spec``'s model, keeping ids:
        every foreign key names a row of the archive (an archived reviewer, or
        a row of the archived project), every file one of the archive's files
        in the project's folder."""
        model, label = spec.model, spec.label
        manifest = self.archive.manifest
        user_model = get_user_model()
        keys = [f for f in serialized_fields(model) if f.is_relation]
        file_fields = [f for f in serialized_fields(model) if isinstance(f, models.FileField)]
        ids = self.ids.setdefault(label, set())
        batch: list[tuple[str, int, dict[str, Any]]] = []
        for where, row in self.archive.rows(label) if label in manifest.models else ():
            pk, values = row_values(model, row, label=label, where=where)
            here = f"{label} row {pk} ({where})"
            if pk in ids:
                raise bad(f"{here}: id {pk} appears twice")
            ids.add(pk)
            if model is Project and values["slug"] != manifest.project:
                raise bad(f"{here}, field slug: {values['slug']!r} is not the manifest's project "
                          f"{manifest.project!r}")
            for key in keys:
                value = values[key.attname]
                if value is None:
                    continue
                if key.related_model is user_model:
                    if value not in self.users:
                        raise bad(f"{here}, field {key.name}: reviewer {value} is not one of the archive's reviewers")
                    self.named_users.add(value)
                    values[key.attname] = self.users[value]
                    continue
                target = key.related_model._meta.label_lower
                if key.related_model is model or target not in self.ids:
                    self.pending.append((here, key.name, target, value))
                elif value not in self.ids[target]:
                    raise _outside(here, key.name, target, value)
            for file_field in file_fields:
                name = values[file_field.attname]
                folder = f"{file_field.upload_to}{manifest.project}/"
                if name and (name not in manifest.files or not name.startswith(folder)):
                    raise bad(f"{here}, field {file_field.name}: file {name!r} is not one of the archive's files "
                              f"in the project's folder {folder!r}")
                self.named_files.add(name)
            batch.append((here, pk, values))
            if len(batch) == _BATCH:
                _insert(model, batch)
                batch = []
        _insert(model, batch)

    def finish(self) -> None:
        """Refuse keys to rows never read, reviewers no row names and files no
        row names: none of them is part of the archived project."""
        for here, name, target, value in self.pending:
            if value not in self.ids.get(target, ()):
                raise _outside(here, name, target, value)
        unnamed = sorted(set(self.users) - self.named_users)
        if unnamed:
            label = get_user_model()._meta.label_lower
            raise bad(f"{label} row {unnamed[0]} (rows/{label}.jsonl) is named by no row of the project: an archive "
                      "holds only the reviewers its project names")
        unnamed_files = sorted(set(self.archive.manifest.files) - self.named_files)
        if unnamed_files:
            raise bad(f"files/{unnamed_files[0]} is named by no row of the project")

    def files(self, written: list[str]) -> None:
        """Write the archive's files to the storage (appending each name to
        ``written``); a file already there with the same SHA-256 is kept."""
        for name, digest in self.archive.manifest.files.items():
            if default_storage.exists(name):
                if _stored_sha256(name) != digest:
                    raise ValidationError(f"The storage already holds a different file {name!r}.", code="file_taken")
                continue
            stream = _ChunkStream(self.archive.file_chunks(name))
            content = File(io.BufferedReader(stream), name=name)
            content.size = self.archive.file_size(name)
            stored = default_storage.save(name, content)
            written.append(stored)
            if stored != name:
                raise ValidationError(f"The storage renamed {name!r} to {stored!r}.", code="file_taken")
            if stream.sha256.hexdigest() != digest:
                raise bad(f"files/{name} changed while it was restored")


def _outside(here: str, name: str, target: str, value: int) -> ValidationError:
    return bad(f"{here}, field {name}: {target} {value} is not a row of the archive; every row must belong to the "
               "archived project")


def _store(here: str, save: Callable[[], object]) -> None:
    """Run one row's insert; a constraint it breaks becomes an error naming the row."""
    try:
        save()
    except (IntegrityError, DataError) as exc:
        raise bad(f"{here} cannot be stored: {str(exc).strip()}") from None


def _insert(model: type[models.Model], batch: list[tuple[str, int, dict[str, Any]]]) -> None:
    if not batch:
        return
    taken = _taken(model, [pk for _, pk, _ in batch])
    if taken:
        shown = ", ".join(str(pk) for pk in taken[:5])
        raise ValidationError(f"{len(taken)} {model._meta.verbose_name_plural} of the archive have ids already used "
                              f"here ({shown}…): restore into a fresh database.", code="ids_taken")
    for here, pk, values in batch:
        row = model(pk=pk, **values)
        # raw: keeps auto_now_add values as archived (what Django's loaddata does).
        _store(here, lambda row=row: models.Model.save_base(row, raw=True, force_insert=True))


def project_import(*, source: IO[bytes], keep_account_rights: bool = False,
                   keep_passwords: bool = False) -> BackupSummary:
    """Restore the project archived in ``source`` (module docstring), all or
    nothing: every row must belong to the archived project; reviewers map to
    existing accounts by login name (left untouched) or become new accounts,
    without staff or superuser rights and with an unusable password unless
    ``keep_account_rights`` / ``keep_passwords``.

    Returns what was restored. Raises ``ValidationError`` (nothing written)
    for a damaged or crafted archive (``labeling.backup.archive``; the
    message names the member, row and field), a row pointing outside the
    project, a slug or id already taken, or a file name already used by
    different content.
    """
    specs = project_models()
    user_model = get_user_model()
    user_label = user_model._meta.label_lower
    project_label = Project._meta.label_lower
    with archive_open(source, known_models={spec.label for spec in specs} | {user_label}) as archive:
        manifest = archive.manifest
        if manifest.models.get(project_label) != 1:
            raise bad(f"manifest.json: an archive holds one {project_label} row, not "
                      f"{manifest.models.get(project_label, 0)}")
        if user_label not in manifest.models:
            raise bad(f"manifest.json: 'models' has no {user_label}")
        archive.verify_files()
        written: list[str] = []
        restore = _Restore(archive=archive, keep_account_rights=keep_account_rights, keep_passwords=keep_passwords)
        try:
            try:
                with transaction.atomic():
                    if Project.objects.filter(slug=manifest.project).exists():
                        raise ValidationError(f"Project {manifest.project!r} already exists here: delete it first, "
                                              "or restore into another database.", code="project_exists")
                    restore.reviewers()
                    for spec in _insert_order(specs):
                        restore.rows(spec)
                    restore.finish()
                    restore.files(written)
                    # Stamps are restored with their ids and sequences never move back: a restored run's
                    # label state is never one a figure was kept under before (a deleted project's).
                    _reset_sequences([spec.model for spec in specs] + [user_model])
            except (IntegrityError, DataError) as exc:  # a deferred key checked at commit
                raise bad(f"the archive's rows break a rule of the database: {str(exc).strip()}") from None
        except BaseException:
            for name in written:
                default_storage.delete(name)
            raise
    return BackupSummary(project=manifest.project, rows=dict(manifest.models), files=len(manifest.files),
                         accounts_created=tuple(restore.created), accounts_matched=tuple(restore.matched))


def _reset_sequences(model_list: list[type[models.Model]]) -> None:
    """After inserting explicit ids, move PostgreSQL's id sequences past them, never
    back: Django's reset sets a sequence to the table's largest id, and after a
    project was deleted that handed its ids (label state stamps among them) out
    again, so a restored run's state could equal one kept from before the delete.
    SQLite needs nothing (AUTOINCREMENT never reuses an id)."""
    if connection.vendor != "postgresql":
        return
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        for model in model_list:
            table, column = model._meta.db_table, model._meta.pk.column
            cursor.execute("SELECT pg_get_serial_sequence(%s, %s)", [quote(table), column])
            sequence = cursor.fetchone()[0]
            if sequence is None:
                continue
            cursor.execute(f"SELECT setval(%s, GREATEST((SELECT COALESCE(MAX({quote(column)}), 0) FROM "
                           f"{quote(table)}), (SELECT last_value FROM {sequence})), true)", [sequence])

"""Reading a project archive (``labeling.backup.project``) without trusting it:
every way an archive can be damaged or crafted ends in one ``ValidationError``
naming the member, line, row or field and the reason, never in a traceback,
and memory stays bounded however much the archive claims to hold.

Checked before any member is unzipped (:func:`archive_open`):

- it is a readable ZIP (not another kind of file, not truncated), its
  members are neither encrypted nor compressed in a way Python cannot read;
- no member name is absolute, holds ``..``, a backslash or a NUL (path
  traversal), and no name appears twice;
- the sizes its members declare add up to at most ``CITELAB_MAX_UNZIPPED_MB``
  (default 512, the limit of an imported .xlsx): a zip bomb is refused here;
- ``manifest.json`` (at most 16 MB) is a JSON object of the shape
  ``labeling.backup.project`` writes, each model's row count at most
  ``CITELAB_MAX_IMPORT_ROWS`` (the limit of one answers file);
- the members are exactly ``manifest.json``, ``rows/<model>.jsonl`` for each
  model of the manifest and ``files/<name>`` for each file of the manifest.

Then, while members stream out (:meth:`Archive.rows`, :meth:`Archive.file_chunks`):
bytes are counted against what each member declares and against the limit
(declared sizes can lie), a row line is at most 32 MB, each row file holds
exactly the rows its manifest counts, and each file its SHA-256.

:func:`row_values` checks one row against its model: its keys, pk, every
field present with a value of the field's type, nothing more.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import zipfile
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from django.core.exceptions import ValidationError
from django.db import models
from django.db.backends.base.operations import BaseDatabaseOperations
from django.utils.dateparse import parse_datetime

from labeling.importers.content import max_rows, max_unzipped_bytes
from labeling.names import text_problem, validate_project_slug

FORMAT = 1
MANIFEST = "manifest.json"
MAX_MANIFEST_BYTES = 16 * 2**20
# A row holds at most a few texts of MAX_TEXT_CHARS (1,000,000) characters, each at most
# 6 bytes once JSON-escaped: 32 MB is room for any real row and a bound on a crafted one.
MAX_ROW_BYTES = 32 * 2**20
_CHUNK = 1 << 16
_READABLE = frozenset({zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA})
_SHA256 = re.compile(r"[0-9a-f]{64}")
_MODEL_LABEL = re.compile(r"[a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*")
# What zipfile, zlib, bz2 and lzma raise on a damaged member or directory.
_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, OSError, ValueError,
               NotImplementedError, RuntimeError)


def bad(message: str) -> ValidationError:
    """The one error of a damaged or crafted archive."""
    return ValidationError(message, code="bad_archive")


def _mb(size: int) -> str:
    return f"{size / 2**20:,.0f} MB" if size >= 2**20 else f"{size:,} bytes"


def name_problem(name: str) -> str:
    """Why ``name`` (a member or storage name, ``/``-separated) could leave the
    folder it is unpacked into, or "" when it cannot."""
    if not name:
        return "it is empty"
    if "\x00" in name or "\\" in name:
        return "it holds a NUL or a backslash"
    if name.startswith("/") or re.match(r"[A-Za-z]:", name):
        return "it is an absolute path"
    parts = name.rstrip("/").split("/")
    if any(part in ("", ".", "..") for part in parts):
        return "it holds an empty, '.' or '..' part (path traversal)"
    return ""


@dataclass
class Budget:
    """Bytes unzipped so far, counted as they stream out, against
    ``CITELAB_MAX_UNZIPPED_MB``: the second guard behind the declared sizes."""

    limit: int
    used: int = 0

    def take(self, size: int, *, member: str) -> None:
        self.used += size
        if self.used > self.limit:
            raise bad(f"{member}: the archive unzips to more than {_mb(self.limit)}, the limit of one import "
                      "(CITELAB_MAX_UNZIPPED_MB)")


def counted_chunks(stream: IO[bytes], *, member: str, declared: int, budget: Budget | None) -> Iterator[bytes]:
    """The bytes of ``stream`` (an open archive member) in chunks of at most
    64 KiB, refused (``ValidationError``) as soon as more come out than the
    member ``declared`` or than ``budget`` allows, or when the member is
    damaged (bad CRC, broken compressed data, fewer bytes than declared)."""
    total = 0
    while True:
        try:
            chunk = stream.read(_CHUNK)
        except _ZIP_ERRORS as exc:
            raise bad(f"{member} is damaged: {exc}") from None
        if not chunk:
            if total != declared:
                raise bad(f"{member} is damaged: it unzips to {total:,} bytes but declares {declared:,}")
            return
        total += len(chunk)
        if total > declared:
            raise bad(f"{member} unzips to more than the {declared:,} bytes it declares: the archive is damaged "
                      "or crafted")
        if budget is not None:
            budget.take(len(chunk), member=member)
        yield chunk


def split_lines(chunks: Iterator[bytes], *, member: str, max_line: int = MAX_ROW_BYTES) -> Iterator[tuple[int, bytes]]:
    """``(line number from 1, line without its newline)`` of the bytes in
    ``chunks``; ``ValidationError`` on a line longer than ``max_line`` bytes,
    found before it is joined in memory."""
    pending: list[bytes] = []
    pending_size = 0
    number = 0
    for chunk in chunks:
        pieces = chunk.split(b"\n")
        for piece in pieces[:-1]:
            number += 1
            if pending_size + len(piece) > max_line:
                raise bad(f"{member} line {number} is longer than {_mb(max_line)}: not a row of a project")
            yield number, b"".join([*pending, piece]) if pending else piece
            pending, pending_size = [], 0
        if pieces[-1]:
            pending.append(pieces[-1])
            pending_size += len(pieces[-1])
            if pending_size > max_line:
                raise bad(f"{member} line {number + 1} is longer than {_mb(max_line)}: not a row of a project")
    if pending:
        yield number + 1, b"".join(pending)


@dataclass
class Manifest:
    """What ``manifest.json`` says: the project's slug, rows per model label,
    SHA-256 per storage name."""

    project: str
    models: dict[str, int]
    files: dict[str, str] = field(default_factory=dict)


def _manifest(data: bytes, *, known_models: set[str]) -> Manifest:
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise bad(f"{MANIFEST} is not JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise bad(f"{MANIFEST} is not a JSON object")
    version = raw.get("format")
    if type(version) is not int or version != FORMAT:
        raise bad(f"{MANIFEST}: archive format {version!r} is not {FORMAT}: export it again with this version")
    project = raw.get("project")
    if not isinstance(project, str):
        raise bad(f"{MANIFEST}: 'project' must be the project's slug (a string), not {project!r}")
    try:
        validate_project_slug(project)
    except ValidationError as exc:
        raise bad(f"{MANIFEST}: 'project' {project!r} is not a project slug ({' '.join(exc.messages)})") from None
    counts = raw.get("models")
    if not isinstance(counts, dict):
        raise bad(f"{MANIFEST}: 'models' must be an object of model label → row count")
    limit = max_rows()
    for label, count in counts.items():
        if not _MODEL_LABEL.fullmatch(label):
            raise bad(f"{MANIFEST}: {label!r} in 'models' is not a model label such as 'labeling.claim'")
        if label not in known_models:
            raise bad(f"{MANIFEST}: the archive holds rows of {label}, a model this version does not have")
        if type(count) is not int or count < 0:
            raise bad(f"{MANIFEST}: the row count of {label} must be a whole number ≥ 0, not {count!r}")
        if count > limit:
            raise bad(f"{MANIFEST}: {label} has {count:,} rows; the limit of one import is {limit:,} "
                      "(CITELAB_MAX_IMPORT_ROWS)")
    files = raw.get("files")
    if not isinstance(files, dict):
        raise bad(f"{MANIFEST}: 'files' must be an object of storage name → SHA-256")
    for name, digest in files.items():
        problem = name_problem(name)
        if problem:
            raise bad(f"{MANIFEST}: file name {name!r} leaves the storage: {problem}")
        if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
            raise bad(f"{MANIFEST}: the SHA-256 of {name!r} must be 64 lowercase hex digits, not {digest!r}")
    return Manifest(project=project, models=dict(counts), files=dict(files))


class Archive:
    """An open project archive whose directory and manifest passed the checks
    of the module docstring. Use as a context manager; ``ValidationError``
    from every method on a damaged or crafted archive."""

    def __init__(self, zipped: zipfile.ZipFile, manifest: Manifest, budget: Budget) -> None:
        self._zip = zipped
        self.manifest = manifest
        self.budget = budget

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc: object) -> None:
        self._zip.close()

    def _open(self, member: str) -> IO[bytes]:
        try:
            return self._zip.open(member)
        except _ZIP_ERRORS as exc:
            raise bad(f"{member} cannot be read: {exc}") from None

    def _chunks(self, member: str, *, counted: bool = True) -> Iterator[bytes]:
        declared = self._zip.getinfo(member).file_size
        with self._open(member) as stream:
            yield from counted_chunks(stream, member=member, declared=declared,
                                      budget=self.budget if counted else None)

    def rows(self, label: str) -> Iterator[tuple[str, Any]]:
        """``(where, row)`` of ``rows/<label>.jsonl``, ``where`` naming the
        member and line (for messages), ``row`` the line's JSON value (its
        shape is :func:`row_values`' to check). Refused at a line that is not
        UTF-8 JSON, or when the file does not hold the manifest's row count."""
        member = f"rows/{label}.jsonl"
        expected = self.manifest.models[label]
        seen = 0
        for number, line in split_lines(self._chunks(member), member=member):
            if not line.strip():
                continue
            seen += 1
            if seen > expected:
                raise bad(f"{member} holds more rows than the {expected:,} its manifest counts")
            try:
                row = json.loads(line.decode("utf-8"))
            except (UnicodeDecodeError, ValueError, RecursionError) as exc:
                raise bad(f"{member} line {number} is not a JSON row ({exc})") from None
            yield f"{member} line {number}", row
        if seen != expected:
            raise bad(f"{member} holds {seen:,} rows, its manifest says {expected:,}: the archive is truncated or "
                      "was changed")

    def file_digest(self, name: str) -> str:
        """SHA-256 of ``files/<name>`` as it streams out (counted)."""
        digest = hashlib.sha256()
        for chunk in self._chunks(f"files/{name}"):
            digest.update(chunk)
        return digest.hexdigest()

    def verify_files(self) -> None:
        """Every file of the manifest matches its SHA-256, or ``ValidationError``."""
        for name, expected in self.manifest.files.items():
            if self.file_digest(name) != expected:
                raise bad(f"files/{name} does not match its SHA-256 in the manifest")

    def file_size(self, name: str) -> int:
        """The size ``files/<name>`` declares (at most what it unzips to)."""
        return self._zip.getinfo(f"files/{name}").file_size

    def file_chunks(self, name: str) -> Iterator[bytes]:
        """The bytes of ``files/<name>`` again, for writing them to the storage
        (already counted once by :meth:`verify_files`; still held to the size
        the member declares)."""
        yield from self._chunks(f"files/{name}", counted=False)


def archive_open(source: IO[bytes], *, known_models: set[str]) -> Archive:
    """Open ``source`` as a project archive after the directory and manifest
    checks of the module docstring; ``known_models`` are the model labels this
    version can restore. Raises ``ValidationError`` naming what is wrong."""
    try:
        zipped = zipfile.ZipFile(source)
    except _ZIP_ERRORS as exc:
        raise bad(f"not a Citelab project archive: not a ZIP file, or a truncated one ({exc})") from None
    try:
        infos = zipped.infolist()
        names = Counter(info.filename for info in infos)
        for info in infos:
            problem = name_problem(info.filename)
            if problem:
                raise bad(f"member name {info.filename!r}: {problem}")
            if names[info.filename] > 1:
                raise bad(f"member {info.filename!r} appears {names[info.filename]} times")
            if info.flag_bits & 0x1:
                raise bad(f"member {info.filename!r} is encrypted")
            if info.compress_type not in _READABLE:
                raise bad(f"member {info.filename!r} is compressed with method {info.compress_type}, which "
                          "cannot be read")
        limit = max_unzipped_bytes()
        declared = sum(info.file_size for info in infos)
        if declared > limit:
            raise bad(f"the archive unzips to {_mb(declared)}; the limit of one import is {_mb(limit)} "
                      "(CITELAB_MAX_UNZIPPED_MB)")
        if MANIFEST not in names:
            raise bad(f"not a Citelab project archive: it has no {MANIFEST}")
        budget = Budget(limit)
        info = zipped.getinfo(MANIFEST)
        if info.file_size > MAX_MANIFEST_BYTES:
            raise bad(f"{MANIFEST} is {_mb(info.file_size)}; a manifest is at most {_mb(MAX_MANIFEST_BYTES)}")
        try:
            stream = zipped.open(info)
        except _ZIP_ERRORS as exc:
            raise bad(f"{MANIFEST} cannot be read: {exc}") from None
        with stream:
            data = b"".join(counted_chunks(stream, member=MANIFEST, declared=info.file_size, budget=budget))
        manifest = _manifest(data, known_models=known_models)
        expected = {MANIFEST} | {f"rows/{label}.jsonl" for label in manifest.models} | {
            f"files/{name}" for name in manifest.files}
        present = {info.filename for info in infos if not (info.is_dir() and info.file_size == 0)}
        missing = sorted(expected - present)
        if missing:
            raise bad(f"the archive has no {missing[0]}, which its manifest lists"
                      + (f" (nor {len(missing) - 1} more)" if len(missing) > 1 else ""))
        extra = sorted(present - expected)
        if extra:
            raise bad(f"the archive holds {extra[0]!r}, which its manifest does not list")
    except BaseException:
        zipped.close()
        raise
    return Archive(zipped, manifest, budget)


_INTEGER_RANGES = BaseDatabaseOperations.integer_field_ranges


def _json_text_problem(value: Any) -> str:
    """The first string (key or value) of a JSON value that cannot be stored."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            problem = text_problem(item, document=True)
            if problem:
                return problem
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return ""


def _field_value(field: models.Field, value: Any) -> tuple[Any, str]:
    """``(python value, "")`` for a row's JSON ``value`` of ``field``, or
    ``(None, reason)`` when it is not a value of that field."""
    if value is None:
        return (None, "") if field.null else (None, "is null, which this field may not be")
    if field.is_relation:
        field = field.target_field
    if isinstance(field, models.BooleanField):
        return (value, "") if isinstance(value, bool) else (None, f"must be true or false, not {value!r}")
    if isinstance(field, models.IntegerField | models.AutoField):
        if type(value) is not int:
            return None, f"must be a whole number, not {value!r}"
        low, high = _INTEGER_RANGES.get(field.get_internal_type(), (None, None))
        if (low is not None and value < low) or (high is not None and value > high):
            return None, f"{value} is outside {low}…{high}"
    elif isinstance(field, models.FloatField):
        if type(value) not in (int, float) or not math.isfinite(value):
            return None, f"must be a finite number, not {value!r}"
        value = float(value)
    elif isinstance(field, models.DateTimeField):
        try:
            parsed = parse_datetime(value) if isinstance(value, str) else None
        except ValueError:
            parsed = None
        if parsed is None or parsed.utcoffset() is None:
            return None, f"must be a date and time with its UTC offset (ISO 8601), not {value!r}"
        value = parsed
    elif isinstance(field, models.JSONField):
        problem = _json_text_problem(value)
        if problem:
            return None, problem
    elif isinstance(field, models.CharField | models.TextField | models.FileField):
        if not isinstance(value, str):
            return None, f"must be text, not {value!r}"
        if field.max_length is not None and len(value) > field.max_length:
            return None, f"is {len(value):,} characters long; the field holds at most {field.max_length:,}"
        problem = text_problem(value, document=True)
        if problem:
            return None, problem
    else:
        try:
            value = field.to_python(value)
        except (ValidationError, TypeError, ValueError, OverflowError) as exc:
            return None, f"is not a value of this field ({exc})"
    # As Django's own validation: a field that may be blank takes "" whatever its choices
    # (an open send-back has no resolution yet, SPEC §4.4).
    blank = field.blank and value in field.empty_values
    if field.choices and not blank and value not in {choice for choice, _ in field.flatchoices}:
        allowed = ", ".join(str(choice) for choice, _ in field.flatchoices)
        return None, f"{value!r} is not one of {allowed}"
    return value, ""


def serialized_fields(model: type[models.Model]) -> list[models.Field]:
    """The fields a row of ``model`` holds under ``"fields"`` (as Django's
    serializer writes them: every concrete field but the primary key; the
    user model's group and permission links are left out by the export)."""
    return [f for f in model._meta.local_fields if f.serialize]


def row_values(model: type[models.Model], row: Any, *, label: str, where: str,
               validators: bool = True) -> tuple[int, dict[str, Any]]:
    """``(pk, {attname: python value})`` of one archived row of ``model``
    (``{"model": label, "pk": id, "fields": {name: value}}``), or
    ``ValidationError`` naming ``where``, the row and the field: a row that is
    not that shape, names another model, lacks a field or has one the model
    does not, or holds a value not of its field's type, length, range or
    choices, or (``validators``) one its field's validators refuse (a run
    name with ``/``). Foreign keys come back as plain ids, unchecked (the
    caller knows which rows exist)."""
    if not isinstance(row, dict) or set(row) != {"model", "pk", "fields"}:
        raise bad(f"{where}: a row is an object with exactly 'model', 'pk' and 'fields'")
    if row["model"] != label:
        raise bad(f"{where}: a row of model {row['model']!r} in the rows of {label}")
    pk = row["pk"]
    pk_value, problem = _field_value(model._meta.pk, pk)
    if problem or pk_value is None or pk_value < 1:
        raise bad(f"{where}: the row's pk {pk!r} is not an id (a whole number ≥ 1)")
    fields = row["fields"]
    where = f"{label} row {pk} ({where})"
    if not isinstance(fields, dict):
        raise bad(f"{where}: 'fields' is not an object")
    expected = serialized_fields(model)
    names = {f.name for f in expected}
    unknown = sorted(set(fields) - names)
    if unknown:
        raise bad(f"{where}: field {unknown[0]!r} is not a field of {label}")
    values: dict[str, Any] = {}
    for model_field in expected:
        if model_field.name not in fields:
            raise bad(f"{where}: field {model_field.name!r} is missing")
        value, problem = _field_value(model_field, fields[model_field.name])
        if problem:
            raise bad(f"{where}, field {model_field.name}: {problem}")
        if validators and value is not None and not model_field.is_relation:
            try:
                model_field.run_validators(value)
            except ValidationError as exc:
                raise bad(f"{where}, field {model_field.name}: {' '.join(exc.messages)}") from None
        values[model_field.attname] = value
    return pk, values

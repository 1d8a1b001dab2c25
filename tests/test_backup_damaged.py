"""Damaged and crafted archives (SPEC §7): every kind ends in a
``CommandError`` naming the member, line, row or field and the reason, with
nothing written, never in a traceback; a zip bomb is refused with bounded
memory under the limits of an answers file (``CITELAB_MAX_UNZIPPED_MB``,
``CITELAB_MAX_IMPORT_ROWS``).

Each archive starts as a genuine export of project ``small`` (one row of
every model, tests/backup_archives.py), deleted after the export; the one
change a case makes is described by its id.
"""

from __future__ import annotations

import io
import json
import re
import tracemalloc
import warnings
import zipfile
from collections.abc import Callable

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from labeling.backup.archive import MAX_ROW_BYTES, Budget, counted_chunks, split_lines
from labeling.models import LabelTableVersion, Project
from tests.backup_archives import (
    RawMember,
    build_project,
    consistent,
    deflated,
    deflated_zeros,
    manifest_of,
    model_counts,
    raw_zip,
    read_members,
    rows_of,
    set_rows,
)

pytestmark = pytest.mark.django_db(transaction=False)

Members = dict[str, bytes]


@pytest.fixture
def genuine(settings, tmp_path) -> Members:
    """The members of ``small``'s archive; ``small`` deleted since."""
    settings.MEDIA_ROOT = tmp_path / "media"
    project = build_project("small")
    path = tmp_path / "small.zip"
    call_command("export_project", "small", str(path), stdout=io.StringIO())
    LabelTableVersion.objects.filter(run__project=project).delete()
    project.delete()
    return read_members(path)


def _zip(members: Members) -> bytes:
    out = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Duplicate name": one case wants two
        with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for name, data in members.items():
                archive.writestr(name.split("\x00dup")[0], data)
    return out.getvalue()


def _with_row(label: str, change: Callable[[dict], None], *, index: int = 0) -> Callable[[Members], bytes]:
    """A case: ``change`` applied to row ``index`` of ``label``, manifest consistent."""
    def build(members: Members) -> bytes:
        rows = rows_of(members, label)
        change(rows[index])
        set_rows(members, label, rows)
        return _zip(consistent(members))
    return build


def _with_fields(label: str, **fields) -> Callable[[Members], bytes]:
    return _with_row(label, lambda row: row["fields"].update(fields))


def _with_manifest(change: Callable[[dict], object]) -> Callable[[Members], bytes]:
    def build(members: Members) -> bytes:
        manifest = manifest_of(members)
        change(manifest)
        return _zip({**members, "manifest.json": json.dumps(manifest).encode()})
    return build


def _with_members(change: Callable[[Members], object], *, fix: bool = False) -> Callable[[Members], bytes]:
    def build(members: Members) -> bytes:
        change(members)
        return _zip(consistent(members) if fix else members)
    return build


def _rows_text(label: str, text: bytes) -> Callable[[Members], bytes]:
    def build(members: Members) -> bytes:
        members[f"rows/{label}.jsonl"] = text
        return _zip(members)
    return build


def _version_file(members: Members) -> str:
    return next(name for name in members if name.startswith("files/"))


def _raw(members: Members, **change) -> bytes:
    """The archive written by hand, ``rows/labeling.claim.jsonl`` changed as given (RawMember fields)."""
    raw = []
    for name, data in members.items():
        member = deflated(data)
        member = RawMember(name, member.data, member.size, member.crc)
        if name == "rows/labeling.claim.jsonl":
            member = RawMember(**{**member.__dict__, **change})
        raw.append(member)
    return raw_zip(raw)


def _rows_text_field(label: str, field: str, literal: str) -> Callable[[Members], bytes]:
    """A case whose value JSON can spell but Python's json does not write: the
    field's value replaced in the row's text by ``literal``."""
    def build(members: Members) -> bytes:
        rows = rows_of(members, label)
        rows[0]["fields"][field] = "@@"
        text = "".join(json.dumps(row) + "\n" for row in rows).replace('"@@"', literal)
        members[f"rows/{label}.jsonl"] = text.encode()
        return _zip(consistent(members))
    return build


def _flipped(members: Members) -> bytes:
    """One byte inverted in the middle of the claim rows' compressed data."""
    data = bytearray(deflated(members["rows/labeling.claim.jsonl"]).data)
    data[len(data) // 2] ^= 0xFF
    return _raw(members, data=bytes(data))


def _duplicate_pk(members: Members) -> bytes:
    labels = rows_of(members, "labeling.label")
    labels[1]["pk"] = labels[0]["pk"]
    set_rows(members, "labeling.label", labels)
    return _zip(consistent(members))


def _two_projects(members: Members) -> bytes:
    [project] = rows_of(members, "labeling.project")
    set_rows(members, "labeling.project", [project, {**project, "pk": project["pk"] + 1}])
    return _zip(consistent(members))


def _unknown_model(members: Members) -> bytes:
    members["rows/labeling.nosuch.jsonl"] = b'{"model": "labeling.nosuch", "pk": 1, "fields": {}}\n'
    return _zip(consistent(members))


def _two_current_labels(members: Members) -> bytes:
    """Two current labels of one reviewer on one claim: the database's own rule refuses it."""
    labels = rows_of(members, "labeling.label")
    current = next(row for row in labels if row["fields"]["is_current"] and row["fields"]["judge_run"] is None)
    set_rows(members, "labeling.label", [*labels, {**current, "pk": 9005}])
    return _zip(consistent(members))


CASES: dict[str, tuple[Callable[[Members], bytes], str]] = {
    # The file itself
    "not a zip": (lambda m: b"claim,label\n1,SUPPORTED\n", r"not a Citelab project archive: not a ZIP file"),
    "empty file": (lambda m: b"", r"not a ZIP file, or a truncated one"),
    "truncated zip": (lambda m: _zip(m)[: len(_zip(m)) // 2], r"not a ZIP file, or a truncated one"),
    "truncated directory": (lambda m: _zip(m)[:-30], r"not a ZIP file, or a truncated one"),
    # The manifest
    "missing manifest": (_with_members(lambda m: m.pop("manifest.json")), r"it has no manifest\.json"),
    "manifest not JSON": (_with_members(lambda m: m.update({"manifest.json": b"{'format': 1"})),
                          r"manifest\.json is not JSON"),
    "manifest not UTF-8": (_with_members(lambda m: m.update({"manifest.json": b"\xff\xfe{}"})),
                           r"manifest\.json is not JSON"),
    "manifest a list": (_with_members(lambda m: m.update({"manifest.json": b"[1, 2]"})),
                        r"manifest\.json is not a JSON object"),
    "format as text": (_with_manifest(lambda m: m.update(format="1")), r"archive format '1' is not 1"),
    "format true": (_with_manifest(lambda m: m.update(format=True)), r"archive format True is not 1"),
    "format missing": (_with_manifest(lambda m: m.pop("format")), r"archive format None is not 1"),
    "project not a slug": (_with_manifest(lambda m: m.update(project="../etc")),
                           r"'project' '\.\./etc' is not a project slug"),
    "project a number": (_with_manifest(lambda m: m.update(project=7)), r"'project' must be the project's slug"),
    "models a list": (_with_manifest(lambda m: m.update(models=[])), r"'models' must be an object"),
    "row count negative": (_with_manifest(lambda m: m["models"].update({"labeling.claim": -1})),
                           r"the row count of labeling\.claim must be a whole number ≥ 0, not -1"),
    "row count as text": (_with_manifest(lambda m: m["models"].update({"labeling.claim": "1"})),
                          r"the row count of labeling\.claim must be a whole number ≥ 0, not '1'"),
    "model label malformed": (_with_manifest(lambda m: m["models"].update({"claims": 1})),
                              r"'claims' in 'models' is not a model label"),
    "unknown model": (_unknown_model, r"the archive holds rows of labeling\.nosuch, a model this version does "
                                      r"not have"),
    "no project row": (_with_members(lambda m: m.pop("rows/labeling.project.jsonl"), fix=True),
                       r"an archive holds one labeling\.project row, not 0"),
    "two project rows": (_two_projects, r"an archive holds one labeling\.project row, not 2"),
    "no reviewers entry": (_with_members(lambda m: m.pop("rows/labeling.reviewer.jsonl"), fix=True),
                           r"'models' has no labeling\.reviewer"),
    "files a list": (_with_manifest(lambda m: m.update(files=[])), r"'files' must be an object"),
    "file hash not hex": (_with_manifest(lambda m: m["files"].update({k: "abc" for k in m["files"]})),
                          r"must be 64 lowercase hex digits, not 'abc'"),
    "file name traversal in manifest": (
        _with_manifest(lambda m: m["files"].update({"../../outside.txt": "0" * 64})),
        r"file name '\.\./\.\./outside\.txt' leaves the storage: it holds an empty, '\.' or '\.\.' part"),
    # Members
    "rows member missing": (_with_members(lambda m: m.pop("rows/labeling.claim.jsonl")),
                            r"the archive has no rows/labeling\.claim\.jsonl, which its manifest lists"),
    "file member missing": (_with_members(lambda m: m.pop(_version_file(m))),
                            r"the archive has no files/label_tables/small/.*, which its manifest lists"),
    "member not in manifest": (_with_members(lambda m: m.update({"notes.txt": b"hello"})),
                               r"the archive holds 'notes\.txt', which its manifest does not list"),
    "path traversal member": (_with_members(lambda m: m.update({"../../evil.py": b"x"})),
                              r"member name '\.\./\.\./evil\.py': it holds an empty, '\.' or '\.\.' part "
                              r"\(path traversal\)"),
    "absolute member": (_with_members(lambda m: m.update({"/etc/cron.d/x": b"x"})),
                        r"member name '/etc/cron\.d/x': it is an absolute path"),
    "backslash member": (_with_members(lambda m: m.update({"files\\..\\x": b"x"})),
                         r"it holds a NUL or a backslash"),
    "duplicate member": (_with_members(lambda m: m.update({"rows/labeling.claim.jsonl\x00dup": b""})),
                         r"member 'rows/labeling\.claim\.jsonl' appears 2 times"),
    "hash mismatch": (_with_members(lambda m: m.update({_version_file(m): m[_version_file(m)] + b"\n"})),
                      r"files/label_tables/small/.* does not match its SHA-256 in the manifest"),
    "bad CRC": (lambda m: _raw(m, crc=12345), r"rows/labeling\.claim\.jsonl is damaged: Bad CRC-32"),
    "corrupt compressed data": (_flipped, r"rows/labeling\.claim\.jsonl is damaged"),
    "declared size too small": (lambda m: _raw(m, declared=10), r"rows/labeling\.claim\.jsonl is damaged"),
    "declared size too large": (lambda m: _raw(m, declared=10_000), r"rows/labeling\.claim\.jsonl is damaged"),
    "unknown compression": (lambda m: _raw(m, method=99),
                            r"member 'rows/labeling\.claim\.jsonl' is compressed with method 99"),
    "encrypted": (lambda m: _raw(m, flags=0x1), r"member 'rows/labeling\.claim\.jsonl' is encrypted"),
    # Rows
    "a row missing": (_with_members(lambda m: set_rows(m, "labeling.label", rows_of(m, "labeling.label")[1:])),
                      r"rows/labeling\.label\.jsonl holds 2 rows, its manifest says 3"),
    "a row too many": (_with_members(lambda m: set_rows(m, "labeling.label", rows_of(m, "labeling.label") * 2)),
                       r"rows/labeling\.label\.jsonl holds more rows than the 3 its manifest counts"),
    "row not JSON": (_rows_text("labeling.claim", b'{"model": "labeling.claim", "pk": \n'),
                     r"rows/labeling\.claim\.jsonl line 1 is not a JSON row"),
    "row not UTF-8": (_rows_text("labeling.claim", b'{"model": "labeling.claim\xff"}\n'),
                      r"rows/labeling\.claim\.jsonl line 1 is not a JSON row \(.*utf-8"),
    "row too deep": (_rows_text("labeling.claim", b"[" * 100_000 + b"]" * 100_000 + b"\n"),
                     r"rows/labeling\.claim\.jsonl line 1 is not a JSON row"),
    "row a list": (_rows_text("labeling.claim", b"[1, 2, 3]\n"),
                   r"rows/labeling\.claim\.jsonl line 1: a row is an object with exactly 'model', 'pk' and "
                   r"'fields'"),
    "row without fields": (_with_row("labeling.claim", lambda row: row.pop("fields")),
                           r"a row is an object with exactly 'model', 'pk' and 'fields'"),
    "row of another model": (_with_row("labeling.claim", lambda row: row.update(model="labeling.run")),
                             r"line 1: a row of model 'labeling\.run' in the rows of labeling\.claim"),
    "pk as text": (_with_row("labeling.claim", lambda row: row.update(pk="7")),
                   r"rows/labeling\.claim\.jsonl line 1: the row's pk '7' is not an id"),
    "pk zero": (_with_row("labeling.claim", lambda row: row.update(pk=0)), r"the row's pk 0 is not an id"),
    "pk too large": (_with_row("labeling.claim", lambda row: row.update(pk=2**70)), r"is not an id"),
    "duplicate pk": (_duplicate_pk, r"labeling\.label row \d+ \(rows/labeling\.label\.jsonl line 2\): id \d+ "
                                    r"appears twice"),
    "fields a list": (_with_row("labeling.claim", lambda row: row.update(fields=[])), r"'fields' is not an object"),
    "field missing": (_with_row("labeling.claim", lambda row: row["fields"].pop("text")),
                      r"labeling\.claim row \d+ \(rows/labeling\.claim\.jsonl line 1\): field 'text' is missing"),
    "field unknown": (_with_fields("labeling.claim", colour="red"),
                      r"field 'colour' is not a field of labeling\.claim"),
    "text where a number": (_with_fields("labeling.claim", index="one"),
                            r"labeling\.claim row \d+ \(rows/labeling\.claim\.jsonl line 1\), field index: must be "
                            r"a whole number, not 'one'"),
    "number where text": (_with_fields("labeling.claim", text=5), r"field text: must be text, not 5"),
    "true where a number": (_with_fields("labeling.claim", index=True), r"field index: must be a whole number"),
    "number where true or false": (_with_fields("labeling.claim", factual=1),
                                   r"field factual: must be true or false, not 1"),
    "negative count": (_with_fields("labeling.claim", revision=-1),
                       r"field revision: -1 is outside 0…2147483647"),
    "number past the column": (_with_fields("labeling.claim", index=2**31),
                               r"field index: 2147483648 is outside 0…2147483647"),
    "null where required": (_with_fields("labeling.claim", text=None),
                            r"field text: is null, which this field may not be"),
    "key as text": (_with_fields("labeling.claim", answer="x"), r"field answer: must be a whole number, not 'x'"),
    "time without offset": (_with_fields("labeling.answer", created_at="2024-05-01T10:00:00"),
                            r"field created_at: must be a date and time with its UTC offset"),
    "not a time": (_with_fields("labeling.answer", created_at="yesterday"),
                   r"field created_at: must be a date and time"),
    "impossible date": (_with_fields("labeling.answer", created_at="2024-02-31T10:00:00+00:00"),
                        r"field created_at: must be a date and time"),
    "unknown choice": (_with_fields("labeling.label", value="MAYBE"),
                       r"field value: 'MAYBE' is not one of SUPPORTED, UNSUPPORTED, UNCITED"),
    "text too long": (_with_fields("labeling.run", name="r" * 201),
                      r"field name: is 201 characters long; the field holds at most 200"),
    "run name with a slash": (_with_fields("labeling.run", name="gpt4o/prompt-v2"),
                              r"labeling\.run row \d+ \(rows/labeling\.run\.jsonl line 1\), field name: .*/"),
    "NUL in text": (_with_fields("labeling.claim", text="The sky\x00 is blue."),
                    r"field text: contains the control character U\+0000"),
    "lone surrogate": (_rows_text_field("labeling.claim", "text", '"\\ud800"'), r"field text: .*surrogate"),
    "NaN temperature": (_rows_text_field("labeling.judgerun", "temperature", "NaN"),
                        r"field temperature: must be a finite number, not nan"),
    "NUL in JSON metadata": (_with_fields("labeling.run", metadata={"model": "gpt\x00"}),
                             r"field metadata: contains the control character U\+0000"),
    "project slug not the manifest's": (_with_fields("labeling.project", slug="other"),
                                        r"field slug: 'other' is not the manifest's project 'small'"),
    "two reviewers one pk": (_with_members(lambda m: set_rows(m, "labeling.reviewer", [
        *rows_of(m, "labeling.reviewer"), rows_of(m, "labeling.reviewer")[0]]), fix=True),
        r"labeling\.reviewer row \d+ \(rows/labeling\.reviewer\.jsonl line 4\): id \d+ appears twice"),
    "blank login name": (_with_fields("labeling.reviewer", username=" "),
                         r"field username: the login name is blank"),
    "a database rule broken": (_two_current_labels,
                               r"labeling\.label row 9005 \(rows/labeling\.label\.jsonl line 4\) cannot be stored"),
    "a check constraint broken": (_with_fields("labeling.run", overlap=9),
                                  r"labeling\.run row \d+ \(rows/labeling\.run\.jsonl line 1\) cannot be stored"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_damaged_archive_is_refused_with_a_clear_message(genuine, tmp_path, case):
    build, message = CASES[case]
    path = tmp_path / "damaged.zip"
    path.write_bytes(build(dict(genuine)))
    before = model_counts()
    stored = sorted((tmp_path / "media").rglob("*"))

    with pytest.raises(CommandError) as refusal:
        call_command("import_project", str(path), stdout=io.StringIO())

    assert re.search(message, str(refusal.value)), str(refusal.value)
    assert str(refusal.value).startswith(f"{path}: ") and str(refusal.value).endswith("Nothing was imported.")
    assert model_counts() == before
    assert not Project.objects.filter(slug="small").exists()
    assert sorted((tmp_path / "media").rglob("*")) == stored


def test_the_genuine_archive_the_cases_start_from_imports(genuine, tmp_path):
    """The cases fail because of their one change: the archive they start from restores."""
    path = tmp_path / "small.zip"
    path.write_bytes(_zip(genuine))
    call_command("import_project", str(path), stdout=io.StringIO())
    assert Project.objects.filter(slug="small").exists()


def test_an_archive_cut_anywhere_is_refused(genuine, tmp_path):
    """Cut after 5 %, 10 %, … 95 % of its bytes: always a clear error."""
    data = _zip(genuine)
    for twentieth in range(1, 20):
        path = tmp_path / f"cut-{twentieth}.zip"
        path.write_bytes(data[: len(data) * twentieth // 20])
        with pytest.raises(CommandError, match="not a ZIP file, or a truncated one"):
            call_command("import_project", str(path), stdout=io.StringIO())
    assert not Project.objects.filter(slug="small").exists()


def _delete_small() -> None:
    project = Project.objects.get(slug="small")
    LabelTableVersion.objects.filter(run__project=project).delete()
    project.delete()


def test_a_byte_changed_anywhere_gives_a_clear_error_or_a_whole_project(genuine, tmp_path):
    """One byte inverted at 60 places spread over the archive: the import
    either refuses with a CommandError (a damaged directory, data or row),
    writing nothing, or, where the byte is one ZIP ignores (a time stamp, a
    version), restores the whole project: every row the intact archive
    restores. Never another exception."""
    data = _zip(genuine)
    empty = model_counts()
    (tmp_path / "intact.zip").write_bytes(data)
    call_command("import_project", str(tmp_path / "intact.zip"), stdout=io.StringIO())
    whole = model_counts()
    _delete_small()
    outcomes = {"refused": 0, "restored": 0}
    for place in range(60):
        damaged = bytearray(data)
        damaged[place * len(data) // 60] ^= 0xFF
        path = tmp_path / f"flip-{place}.zip"
        path.write_bytes(bytes(damaged))
        try:
            call_command("import_project", str(path), stdout=io.StringIO())
        except CommandError:
            outcomes["refused"] += 1
            assert model_counts() == empty
        else:
            outcomes["restored"] += 1
            assert model_counts() == whole
            _delete_small()
    assert outcomes["refused"] + outcomes["restored"] == 60
    assert outcomes["refused"] >= 40  # most bytes are data, names, sizes or the directory


# Zip bombs and the limits of one import


def _bomb(genuine: Members, member: RawMember) -> bytes:
    return raw_zip([RawMember(name, deflated(data).data, len(data), deflated(data).crc)
                    for name, data in genuine.items() if name != member.name] + [member])


def _peak_while(action: Callable[[], object]) -> int:
    """Peak bytes Python allocated while ``action`` ran (tracemalloc)."""
    tracemalloc.start()
    try:
        action()
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak


def test_a_zip_bomb_is_refused_from_its_declared_sizes_in_bounded_memory(genuine, tmp_path):
    """A 1.5 GiB audit log deflated to 1.6 MB (the issue's bomb: the old code
    reached 3.8 GB before MemoryError). Its declared size alone is past the
    512 MB of CITELAB_MAX_UNZIPPED_MB: refused before a byte is unzipped,
    the whole import allocating under 4 MB."""
    bomb = RawMember(**{**deflated_zeros(1536).__dict__, "name": "rows/labeling.auditevent.jsonl"})
    path = tmp_path / "bomb.zip"
    path.write_bytes(_bomb(genuine, bomb))
    assert path.stat().st_size < 2_000_000

    def refused() -> None:
        with pytest.raises(CommandError, match=r"the archive unzips to 1,536 MB; the limit of one import is 512 MB "
                                               r"\(CITELAB_MAX_UNZIPPED_MB\)"):
            call_command("import_project", str(path), stdout=io.StringIO())

    assert _peak_while(refused) < 4 * 2**20
    assert not Project.objects.filter(slug="small").exists()


def test_a_member_that_lies_about_its_size_is_not_unzipped_past_it(genuine, tmp_path):
    """The claim rows declare 1,000 bytes (and the CRC of 1,000 zero bytes)
    but hold 1 GiB of zeros: ZIP reading stops at the declared size, the
    row is refused as not JSON, and memory stays under 4 MB."""
    zeros = deflated_zeros(1024, crc=False)
    lying = RawMember("rows/labeling.claim.jsonl", zeros.data, 1000, deflated(bytes(1000)).crc)
    path = tmp_path / "liar.zip"
    path.write_bytes(_bomb(genuine, lying))

    def refused() -> None:
        with pytest.raises(CommandError, match=r"rows/labeling\.claim\.jsonl line 1 is not a JSON row"):
            call_command("import_project", str(path), stdout=io.StringIO())

    assert _peak_while(refused) < 4 * 2**20


def test_a_bomb_under_the_size_limit_stops_at_the_longest_row(genuine, tmp_path):
    """256 MiB of zeros declared honestly (under 512 MB) as one line of the
    claim rows: refused once the line passes 32 MB, the import never holding
    much more than that line."""
    zeros = RawMember(**{**deflated_zeros(256, crc=False).__dict__, "name": "rows/labeling.claim.jsonl"})
    path = tmp_path / "long-line.zip"
    path.write_bytes(_bomb(genuine, zeros))

    def refused() -> None:
        with pytest.raises(CommandError, match=r"rows/labeling\.claim\.jsonl line 1 is longer than 32 MB"):
            call_command("import_project", str(path), stdout=io.StringIO())

    assert _peak_while(refused) < MAX_ROW_BYTES + 8 * 2**20


def test_the_unzipped_limit_is_the_setting(genuine, tmp_path, settings):
    """The genuine archive unzips to a few kilobytes; with the limit at 1,000 bytes it is refused."""
    settings.CITELAB_MAX_UNZIPPED_BYTES = 1000
    path = tmp_path / "small.zip"
    path.write_bytes(_zip(genuine))
    with pytest.raises(CommandError, match=r"the archive unzips to [\d,]+ bytes; the limit of one import is "
                                           r"1,000 bytes"):
        call_command("import_project", str(path), stdout=io.StringIO())


def test_the_row_limit_is_the_setting(genuine, tmp_path, settings):
    """``small`` has 3 labels; with CITELAB_MAX_IMPORT_ROWS at 2 its manifest is refused."""
    settings.CITELAB_MAX_IMPORT_ROWS = 2
    path = tmp_path / "small.zip"
    path.write_bytes(_zip(genuine))
    with pytest.raises(CommandError, match=r"labeling\.\w+ has \d+ rows; the limit of one import is 2 "
                                           r"\(CITELAB_MAX_IMPORT_ROWS\)"):
        call_command("import_project", str(path), stdout=io.StringIO())


def test_bytes_are_counted_as_they_stream_not_taken_from_the_header():
    """The second guard: 3 MiB streaming out of a member that declares 4 MiB,
    under a 1 MiB budget, stop after 1 MiB + one 64 KiB chunk; a member that
    declares 1 MiB but streams 2 MiB stops after 1 MiB + one chunk."""
    read: list[int] = []
    budget = Budget(limit=2**20)
    with pytest.raises(ValidationError, match=r"rows/x\.jsonl: the archive unzips to more than 1 MB"):
        for chunk in counted_chunks(io.BytesIO(bytes(3 * 2**20)), member="rows/x.jsonl", declared=4 * 2**20,
                                    budget=budget):
            read.append(len(chunk))
    assert sum(read) == 2**20 and budget.used == 2**20 + 2**16

    read.clear()
    with pytest.raises(ValidationError, match=r"rows/y\.jsonl unzips to more than the 1,048,576 bytes it "
                                              r"declares"):
        for chunk in counted_chunks(io.BytesIO(bytes(2 * 2**20)), member="rows/y.jsonl", declared=2**20,
                                    budget=None):
            read.append(len(chunk))
    assert sum(read) == 2**20


def test_lines_are_split_across_chunks_and_capped():
    """``a\\nbb`` + ``b\\n`` + ``\\ncc``: lines 1–4 are a, bbb, (blank), cc; a
    line of 11 bytes under a 10-byte cap is refused before it is joined."""
    assert list(split_lines(iter([b"a\nbb", b"b\n", b"\ncc"]), member="m")) == [
        (1, b"a"), (2, b"bbb"), (3, b""), (4, b"cc")]
    with pytest.raises(ValidationError, match=r"m line 2 is longer than 10 bytes"):
        list(split_lines(iter([b"ok\n", b"x" * 6, b"y" * 5]), member="m", max_line=10))

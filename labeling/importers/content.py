"""What an uploaded or imported file really is, told from its bytes, not its
name: every importer (answers files, label tables; web and command line)
checks a file here before parsing it, so a renamed PDF, a UTF-16 export, an
old ``.xls`` or a zip bomb gets one clear ``(file)`` issue and nothing is read.

The checks, in order (:func:`content_problem`):

- a file that is a known binary kind (ZIP, old Excel/OLE, PDF, images,
  gzip/bzip2/xz/7z/RAR archives) where text was expected, or text where a
  workbook was expected, is named as what it is;
- text in UTF-16 or UTF-32 (a byte-order mark ``FF FE``/``FE FF``, or a NUL
  in every other byte of its start) is refused with the advice to save it
  as UTF-8 — Python would otherwise read it as garbage or a NUL per letter;
- other binary data (NUL bytes, or mostly control bytes, in the first 4 KiB)
  is refused as not text. A single NUL inside a cell of a text file is left
  to the row checks, which name its row and column;
- an ``.xlsx`` must be a readable ZIP holding ``xl/workbook.xml``, and the
  sizes its members declare (what unzipping produces: ``zipfile`` never
  returns more than a member declares) must add up to at most
  ``CITELAB_MAX_UNZIPPED_MB`` (default 512): a few kilobytes that unzip to
  gigabytes are refused before any XML is parsed.

Row limits: :func:`max_rows` (setting ``CITELAB_MAX_IMPORT_ROWS``, default
500,000 data rows or lines) is enforced while reading by
``labeling.importers.tabular`` and the JSON Lines readers, which stop at the
first row past it (one ``(file)`` issue); an XLSX worksheet that declares
more rows in its dimension is refused before its rows are read.
"""

from __future__ import annotations

import io
import zipfile

from django.conf import settings

from labeling.importers.records import ImportIssue

HEAD_BYTES = 4096

ZIP_MAGIC = b"PK\x03\x04"
# (leading bytes, what a person would call such a file, advice)
_BINARY_KINDS: list[tuple[bytes, str]] = [
    (b"PK\x03\x04", "a ZIP archive (an .xlsx workbook is one)"),
    (b"PK\x05\x06", "an empty ZIP archive"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old Excel .xls file or a password-protected workbook: "
                                           "save it as .xlsx without a password"),
    (b"%PDF", "a PDF document"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"\x1f\x8b", "a gzip archive: unpack it first"),
    (b"BZh", "a bzip2 archive: unpack it first"),
    (b"\xfd7zXZ\x00", "an xz archive: unpack it first"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive: unpack it first"),
    (b"Rar!\x1a\x07", "a RAR archive: unpack it first"),
    (b"SQLite format 3\x00", "a SQLite database"),
]
_TEXT_CONTROLS = frozenset(range(0x20)) - {0x09, 0x0A, 0x0C, 0x0D, 0x1B}


def max_rows() -> int:
    """The most data rows (or JSON lines) one import may hold (CITELAB_MAX_IMPORT_ROWS)."""
    return settings.CITELAB_MAX_IMPORT_ROWS


def max_unzipped_bytes() -> int:
    """The most bytes an .xlsx may unzip to (CITELAB_MAX_UNZIPPED_MB)."""
    return settings.CITELAB_MAX_UNZIPPED_BYTES


def too_many_rows(line: int) -> ImportIssue:
    """The ``(file)`` issue of a file whose data rows go past :func:`max_rows` at ``line``."""
    return ImportIssue(line, "(file)", f"more than {max_rows():,} rows: the limit of one import "
                                       "(CITELAB_MAX_IMPORT_ROWS); split the file")


def content_problem(head: bytes, *, format: str) -> ImportIssue | None:
    """Why a file of the given ``format`` (``"jsonl"``, ``"csv"`` or
    ``"xlsx"``) whose first bytes are ``head`` (at least :data:`HEAD_BYTES`
    of them when the file is that long) is not what its format says, or None.
    For an XLSX only the kind is checked here; :func:`xlsx_problem` checks the
    archive itself."""
    head = head[:HEAD_BYTES]
    kind = next((name for magic, name in _BINARY_KINDS if head.startswith(magic)), None)
    if format == "xlsx":
        if head.startswith(ZIP_MAGIC):
            return None
        if not head.strip():
            return _file("the file is empty, not an .xlsx workbook")
        what = kind or _text_kind(head) or "not a workbook"
        return _file(f"not an .xlsx workbook: the file is {what}")
    if kind is not None:
        advice = ": name it .xlsx" if head.startswith(ZIP_MAGIC) and _looks_like_xlsx_head(head) else ""
        return _file(f"not a {format.upper()} text file: it is {kind}{advice}")
    encoding = _utf16_or_32(head)
    if encoding:
        return _file(f"the file is {encoding} text: save it as UTF-8 (in Excel: 'CSV UTF-8'; in an editor: "
                     "encoding UTF-8) and import it again")
    nuls = head.count(0)
    controls = sum(1 for byte in head if byte in _TEXT_CONTROLS)
    if nuls > 8 or (head and controls > len(head) // 10):
        return _file(f"not a {format.upper()} text file: its first {len(head):,} bytes hold {controls:,} "
                     "control bytes (binary data)")
    return None


def xlsx_problem(data: bytes) -> ImportIssue | None:
    """Why ``data`` (a whole .xlsx file that passed :func:`content_problem`)
    cannot be opened safely, or None: not a readable ZIP, no workbook part,
    or members that would unzip past :func:`max_unzipped_bytes`."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        return _file(f"not a readable .xlsx workbook: the ZIP archive is damaged or truncated ({exc})")
    with archive:
        names = set(archive.namelist())
        if "xl/workbook.xml" not in names:
            return _file("not an .xlsx workbook: a ZIP archive without xl/workbook.xml")
        unzipped = sum(info.file_size for info in archive.infolist())
        limit = max_unzipped_bytes()
        if unzipped > limit:
            return _file(f"the workbook unzips to {unzipped / 2**20:,.0f} MB; the limit is {limit / 2**20:,.0f} MB "
                         "(CITELAB_MAX_UNZIPPED_MB)")
    return None


def not_utf8(data: bytes, error: UnicodeDecodeError) -> ImportIssue:
    """The ``(file)`` issue of text ``data`` that failed to decode as UTF-8:
    the line (1-based) and the byte within it (1-based) where it failed."""
    line = data.count(b"\n", 0, error.start) + 1
    column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
    return ImportIssue(line, "(file)", f"not UTF-8 text: {error.reason} at byte {column} of line {line}; save "
                                       "the file as UTF-8 (in Excel: 'CSV UTF-8')")


def _file(reason: str) -> ImportIssue:
    return ImportIssue(1, "(file)", reason)


def _looks_like_xlsx_head(head: bytes) -> bool:
    return b"[Content_Types].xml" in head or b"xl/" in head or b"docProps/" in head


def _text_kind(head: bytes) -> str | None:
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if stripped.startswith(b"{"):
        return "JSON Lines text (name it .jsonl)"
    if stripped and not _utf16_or_32(head) and head.count(0) == 0:
        return "plain text (a CSV file? name it .csv)"
    return None


def _utf16_or_32(head: bytes) -> str | None:
    """``"UTF-16"``/``"UTF-32"`` when ``head`` starts with that byte-order
    mark, or has a NUL in (nearly) every other byte as UTF-16 ASCII text does."""
    if head.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return "UTF-32"
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "UTF-16"
    sample = head[:512]
    if len(sample) >= 8:
        for start in (0, 1):
            half = sample[start::2]
            if half.count(0) >= 0.9 * len(half):
                return "UTF-16"
    return None

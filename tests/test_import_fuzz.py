"""Fuzzing the importers with hypothesis (SPEC §7): arbitrary JSON
values and shapes in every field of an answers line, arbitrary cells in
answers and label tables (CSV and XLSX), arbitrary bytes under every format.

The properties, for every example: the import either succeeds or is refused
with ``ImportFailed`` / ``ValidationError`` (never another exception), and a
refused import leaves the row count of every table as it was
(``tests.tables.row_counts``). Each example runs in a savepoint rolled back
afterwards, so examples do not see each other's rows.

Examples are derandomized (the same ones every run) and kept to 60 per
property, so the module stays within a few seconds of CI time per database.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openpyxl import Workbook
from openpyxl.utils.exceptions import IllegalCharacterError

from labeling.importers.label_table import read_label_table
from labeling.importers.load import project_for_import, run_import
from labeling.importers.records import ImportFailed
from labeling.models import Run
from labeling.tables.label_import import label_table_import_apply
from tests.conftest import FIXTURES_DIR
from tests.factories import ReviewerFactory
from tests.tables import row_counts

SEED = FIXTURES_DIR / "seed_coverage_support.jsonl"
FUZZ = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])

# Text with everything a file can smuggle in: control characters, NUL, lone
# surrogates (Cs is not excluded), Excel's _xHHHH_ escapes, huge numbers as text.
any_text = st.one_of(
    st.text(alphabet=st.characters(exclude_categories=()), max_size=30),
    st.sampled_from(["", " ", "_x0000_", "a_xD800_b", "_x0007_", "=1+1", "'=HYPERLINK(\"x\")", "9" * 30,
                     "SUPPORTED", "unsupported", "UNCITED", "P1", "[P1]", "1, 3", "\ufeffq1", "ｑ１", "../..",
                     "a/b", "x" * 300, "2025-01-31T09:15:00Z", "null", "{}", "[{", "true"]),
)
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
                         st.floats(allow_nan=False, allow_infinity=False), any_text)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(any_text, inner, max_size=3),
    max_leaves=8,
)


@pytest.fixture
def seeded(db, settings, tmp_path):
    """Project ``seed`` with the seed example (1 answer, 5 labeled claims +
    citations, passages, gold): every table an import writes has rows."""
    settings.MEDIA_ROOT = tmp_path / "media"
    project = project_for_import(slug="seed")
    run_import(project=project, source=SEED)
    return project


@pytest.fixture
def lead(seeded):
    lead = ReviewerFactory(username="fuzz-lead")
    seeded.members.add(lead)
    return lead


def assert_all_or_nothing(write) -> None:
    """Call ``write()`` in a savepoint rolled back afterwards: it may succeed
    or raise ImportFailed/ValidationError, and then must have written nothing."""
    with transaction.atomic():
        before = row_counts()
        try:
            write()
        except (ImportFailed, ValidationError):
            assert row_counts() == before
        transaction.set_rollback(True)


# --------------------------------------------------- answers: JSON Lines

def base_line() -> dict[str, Any]:
    """A valid answers line using every field (SPEC §6)."""
    return {
        "question_id": "fz1", "question": "How do retries work?", "run": "fuzz", "answerable": True,
        "answer": "Retries back off [P1]. They stop after five tries [P2].",
        "passages": [{"id": "P1", "source": "retries.md", "text": "Each retry waits twice as long."},
                     {"id": "P2", "source": "retries.md", "text": "After five tries it stops."}],
        "claims": [{"text": "Retries back off.", "index": 0,
                    "citations": [{"passage_id": "P1", "span": "waits twice as long"}],
                    "label": "SUPPORTED", "justification": "", "reviewer": "expert-1"},
                   {"text": "They stop after five tries.", "citations": ["P2"], "label": "UNSUPPORTED",
                    "justification": "says tries, not retries"}],
        "gold": {"supporting_ids": ["P1"], "references": [{"source": "retries.md", "text": "Each retry"}],
                 "expected_sources": ["retries.md"]},
    }


# Every place a value sits in base_line(), as a key path.
PATHS: list[tuple[Any, ...]] = [
    ("question_id",), ("question",), ("run",), ("answer",), ("answerable",), ("passages",), ("passages", 0),
    ("passages", 0, "id"), ("passages", 0, "source"), ("passages", 0, "text"), ("passages", 1, "id"),
    ("claims",), ("claims", 0), ("claims", 0, "text"), ("claims", 0, "index"), ("claims", 0, "citations"),
    ("claims", 0, "citations", 0), ("claims", 0, "citations", 0, "passage_id"), ("claims", 0, "citations", 0, "span"),
    ("claims", 0, "label"), ("claims", 0, "justification"), ("claims", 0, "reviewer"), ("claims", 1, "citations", 0),
    ("claims", 1, "label"), ("gold",), ("gold", "supporting_ids"), ("gold", "supporting_ids", 0),
    ("gold", "references"), ("gold", "references", 0, "source"), ("gold", "references", 0, "text"),
    ("gold", "expected_sources"), ("gold", "expected_sources", 0),
]
DELETE = object()


def put(line: dict, path: tuple[Any, ...], value: Any) -> None:
    """Set (or, for DELETE, remove) the value at ``path`` in place."""
    *parents, last = path
    node: Any = line
    for key in parents:
        node = node[key]
    if value is DELETE:
        del node[last]
    else:
        node[last] = value


@FUZZ
@given(changes=st.lists(st.tuples(st.sampled_from(PATHS), json_values | st.just(DELETE)), min_size=1, max_size=4),
       extra=st.dictionaries(any_text, json_values, max_size=2))
def test_any_json_in_any_field_of_an_answers_line_is_imported_or_refused_whole(seeded, changes, extra):
    line = base_line() | {"question_id": "fz2"}  # beside an untouched valid line fz1
    for path, value in changes:
        try:
            put(line, path, value)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change replaced the parent
    line = {**extra, **line}
    data = (json.dumps(base_line()) + "\n" + json.dumps(line) + "\n").encode()

    assert_all_or_nothing(lambda: run_import(project=seeded, source=data, format="jsonl"))


@FUZZ
@given(value=json_values)
def test_any_json_value_as_a_whole_line_is_refused_whole(seeded, value):
    data = (json.dumps(base_line()) + "\n" + json.dumps(value) + "\n").encode()

    assert_all_or_nothing(lambda: run_import(project=seeded, source=data, format="jsonl"))


@FUZZ
@given(data=st.binary(max_size=600), fmt=st.sampled_from(["jsonl", "csv", "xlsx"]))
def test_any_bytes_as_an_answers_file_are_imported_or_refused_whole(seeded, data, fmt):
    assert_all_or_nothing(lambda: run_import(project=seeded, source=data, format=fmt))


# ------------------------------------------------------ spreadsheet cells

ANSWER_COLUMNS = ["question_id", "question", "run", "answer", "answerable", "passages", "gold", "claim_index",
                  "claim", "citations", "span", "label", "justification", "reviewer"]
LABEL_COLUMNS = ["run", "question_id", "claim_index", "claim", "label", "justification", "reviewer", "labeled_at",
                 "claim_id", "claim_revision"]
cell_values = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False), any_text,
    # digits int()/isdigit()/float() read but a file must not: superscript, Arabic-Indic, full-width
    st.sampled_from(["²", "٣", "１２", "+7", " 7 ", "-1", "1e3", "7.0", "0x1f", "1_000"]),
    st.datetimes(min_value=datetime(1900, 1, 2), max_value=datetime(2100, 1, 1)),
)


def valid_answer_row(question_id: str) -> dict[str, Any]:
    return {"question_id": question_id, "question": "How?", "run": "fuzz", "answer": "It retries [P1].",
            "answerable": "true", "passages": json.dumps([{"id": "P1", "source": "m.md", "text": "It retries."}]),
            "gold": "", "claim_index": 1, "claim": "It retries.", "citations": "P1", "span": "",
            "label": "SUPPORTED", "justification": "", "reviewer": "expert"}


def as_csv(header: list[str], rows: list[list[Any]]) -> bytes:
    out = io.StringIO()
    csv.writer(out).writerows([header, *[["" if cell is None else cell for cell in row] for row in rows]])
    # surrogatepass: a lone surrogate becomes bytes that are not UTF-8, as a broken file holds.
    return out.getvalue().encode("utf-8", "surrogatepass")


def as_xlsx(header: list[str], rows: list[list[Any]], *, title: str = "Sheet") -> bytes | None:
    """The workbook, or None when openpyxl itself refuses a cell (control characters)."""
    workbook = Workbook()
    sheet = workbook.active
    sheet.title = title
    try:
        sheet.append(header)
        for row in rows:
            sheet.append(row)
        out = io.BytesIO()
        workbook.save(out)
    except (IllegalCharacterError, UnicodeEncodeError, ValueError):
        return None
    return out.getvalue()


def mutated_rows(base: list[dict[str, Any]], columns: list[str], changes: list[tuple[int, str, Any]]) -> list[list]:
    rows = [dict(row) for row in base]
    for number, column, value in changes:
        rows[number % len(rows)][column] = value
    return [[row.get(column) for column in columns] for row in rows]


@FUZZ
@given(changes=st.lists(st.tuples(st.integers(0, 2), st.sampled_from(ANSWER_COLUMNS), cell_values), max_size=6),
       fmt=st.sampled_from(["csv", "xlsx"]))
def test_any_cell_in_an_answers_table_is_imported_or_refused_whole(seeded, changes, fmt):
    base = [valid_answer_row("fz1"), valid_answer_row("fz2"), {**valid_answer_row("fz2"), "claim_index": 2,
                                                               "claim": "It retries twice."}]
    rows = mutated_rows(base, ANSWER_COLUMNS, changes)
    data = as_csv(ANSWER_COLUMNS, rows) if fmt == "csv" else as_xlsx(ANSWER_COLUMNS, rows)
    if data is None:
        data = as_csv(ANSWER_COLUMNS, rows)
        fmt = "csv"

    assert_all_or_nothing(lambda: run_import(project=seeded, source=data, format=fmt))


@FUZZ
@given(changes=st.lists(st.tuples(st.integers(0, 4), st.sampled_from(LABEL_COLUMNS), cell_values), max_size=6),
       fmt=st.sampled_from(["csv", "xlsx"]), overwrite=st.sampled_from([None, True, False]))
def test_any_cell_in_a_label_table_is_applied_or_refused_whole(seeded, lead, changes, fmt, overwrite):
    """Rows start as the seed run's five claims relabeled by the lead; the
    changes then put arbitrary values in arbitrary cells."""
    run = Run.objects.get(project=seeded, name="seed-coverage-support")
    claims = list(run.answers.get().claims.order_by("index"))
    base = [{"run": run.name, "question_id": "seed-support-1", "claim_index": claim.index, "claim": claim.text,
             "label": "SUPPORTED", "justification": "reads so", "reviewer": "fuzz-lead",
             "labeled_at": datetime(2025, 1, 1, tzinfo=UTC).isoformat(), "claim_id": claim.pk,
             "claim_revision": claim.revision} for claim in claims]
    rows = mutated_rows(base, LABEL_COLUMNS, changes)
    data = as_csv(LABEL_COLUMNS, rows) if fmt == "csv" else as_xlsx(LABEL_COLUMNS, rows, title="Labels")
    if data is None:
        data, fmt = as_csv(LABEL_COLUMNS, rows), "csv"

    def apply() -> None:
        table_file = read_label_table(data, format=fmt)
        label_table_import_apply(run=run, reviewer=lead, table_file=table_file, overwrite_newer=overwrite)

    assert_all_or_nothing(apply)


@FUZZ
@given(data=st.binary(max_size=600), fmt=st.sampled_from(["jsonl", "csv", "xlsx"]))
def test_any_bytes_as_a_label_table_are_refused_whole(seeded, lead, data, fmt):
    run = Run.objects.get(project=seeded, name="seed-coverage-support")

    def apply() -> None:
        label_table_import_apply(run=run, reviewer=lead, table_file=read_label_table(data, format=fmt))

    assert_all_or_nothing(apply)

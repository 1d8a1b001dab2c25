"""A bulk write refreshes PostgreSQL's planner statistics of the tables it
filled (``labeling.db.analyze_after_bulk_write``, SPEC §7): without them a
run imported a moment ago is planned as if its tables were empty."""

from __future__ import annotations

import pytest
from django.db import connection

import labeling.db
from labeling.importers.load import project_for_import, run_import
from labeling.models import Citation, Claim, Label


def _estimated_rows(model) -> float:
    """What the planner believes the table holds (PostgreSQL's ``reltuples``; -1: never analyzed)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = %s", [model._meta.db_table])
        return cursor.fetchone()[0]


def _sqlite_statistics() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'sqlite_stat1'")
        return cursor.fetchone()[0] > 0


@pytest.mark.django_db
def test_an_import_past_the_threshold_analyzes_what_it_wrote(monkeypatch, expertqa_path):
    monkeypatch.setattr(labeling.db, "ANALYZE_AFTER_ROWS", 1)

    run_import(project=project_for_import(slug="expertqa"), source=expertqa_path)

    if connection.vendor == "postgresql":
        # A table this small is read whole: the estimate is the exact count.
        assert _estimated_rows(Claim) == Claim.objects.count() == 735
        assert _estimated_rows(Citation) == Citation.objects.count()
        assert _estimated_rows(Label) == Label.objects.count()
    else:
        assert _sqlite_statistics() is False


@pytest.mark.django_db
def test_an_import_below_the_threshold_leaves_the_statistics_alone(monkeypatch, expertqa_path):
    monkeypatch.setattr(labeling.db, "ANALYZE_AFTER_ROWS", 1_000_000)
    # The statistics of the empty table (the estimate outlives a test's rollback: start from a known one).
    labeling.db.analyze_after_bulk_write((Claim,), rows=1_000_000)

    run_import(project=project_for_import(slug="expertqa"), source=expertqa_path)

    if connection.vendor == "postgresql":
        assert _estimated_rows(Claim) == 0
        assert Claim.objects.count() == 735
    else:
        assert _sqlite_statistics() is False


@pytest.mark.django_db
def test_the_threshold_counts_rows_and_sqlite_never_analyzes():
    ran = labeling.db.analyze_after_bulk_write((Claim,), rows=labeling.db.ANALYZE_AFTER_ROWS)

    assert ran is (connection.vendor == "postgresql")
    assert labeling.db.analyze_after_bulk_write((Claim,), rows=labeling.db.ANALYZE_AFTER_ROWS - 1) is False


@pytest.mark.django_db
def test_postgresql_connections_run_without_jit():
    """PostgreSQL's JIT compiles any query whose cost estimate passes ``jit_above_cost``
    (10–50 ms each), which a label step's few-row queries never win back; the settings
    turn it off at connect (``-c jit=off``). SQLite has no such option and gets none."""
    options = connection.settings_dict.get("OPTIONS", {})
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SHOW jit")
            assert cursor.fetchone()[0] == "off"
        assert "-c jit=off" in options["options"]
    else:
        assert "options" not in options


def test_id_chunks_follow_the_databases_parameter_cap():
    """SQLite: Django caps a statement at 999 parameters, so 2,000 ids go 900, 900, 200;
    PostgreSQL has no cap: one list. No ids, no statement."""
    from django.db import connection

    from labeling.db import id_chunks

    chunks = list(id_chunks(range(2_000)))
    expected = [900, 900, 200] if connection.features.max_query_params else [2_000]
    assert [len(chunk) for chunk in chunks] == expected
    assert [i for chunk in chunks for i in chunk] == list(range(2_000))
    assert list(id_chunks([])) == []

"""Model instances from rows of hand-written SQL (the label step's reads, SPEC §7).

The label step reads a few small sets of rows on every save; building their
querysets took the ORM longer than the database took to run them. The review
page's claims with their citations and labels (:func:`answer_claims`) are one
of those reads. Its hand-written
statements select a model's columns with :func:`columns` and turn them back into
instances with :func:`instance`, through the same converters the ORM applies
(SQLite's booleans and datetimes), so an instance is the one the ORM would give.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.db import connection
from django.db.models import Field, Model

from labeling.models import Answer, Citation, Claim, GoldClaim, Label, Passage, Reviewer, SendBack

Converter = Callable[[Any, Any, Any], Any]


class Columns:
    """The concrete columns of ``model`` under table alias ``alias``, in field order:
    ``select`` (``alias.column, …``), ``nulls`` (one typed NULL each, for the branches
    of a ``UNION ALL`` that carry other rows: PostgreSQL types a bare NULL as text)
    and ``width`` (how many)."""

    def __init__(self, model: type[Model], alias: str):
        self.model = model
        self.fields: list[Field] = list(model._meta.concrete_fields)
        quote = connection.ops.quote_name
        self.select = ", ".join(f"{alias}.{quote(field.column)}" for field in self.fields)
        self.nulls = ", ".join(f"CAST(NULL AS {_cast_type(field)})" for field in self.fields)
        self.width = len(self.fields)
        self.attnames = [field.attname for field in self.fields]
        self.converters: list[tuple[int, list[tuple[Converter, Any]]]] = []
        for position, field in enumerate(self.fields):
            column = field.get_col(model._meta.db_table)
            found = connection.ops.get_db_converters(column) + field.get_db_converters(connection)
            if found:
                self.converters.append((position, [(converter, column) for converter in found]))


def _cast_type(field: Field) -> str:
    return field.cast_db_type(connection) or "text"


_COLUMNS: dict[tuple[str, str, str], Columns] = {}


def columns(model: type[Model], alias: str) -> Columns:
    """:class:`Columns` of ``model`` under ``alias``, made once per database vendor."""
    key = (connection.vendor, model._meta.label, alias)
    found = _COLUMNS.get(key)
    if found is None:
        found = _COLUMNS[key] = Columns(model, alias)
    return found


def instance(cols: Columns, row: Sequence[Any], start: int) -> Any:
    """The instance of ``cols.model`` from ``row[start:start + cols.width]``, converted
    as the ORM converts; ``None`` when its primary key (first column) is NULL (the
    missing side of an outer join). No query."""
    values = list(row[start:start + cols.width])
    if values[0] is None:
        return None
    for position, converters in cols.converters:
        value = values[position]
        for converter, expression in converters:
            value = converter(value, expression, connection)
        values[position] = value
    return cols.model.from_db(connection.alias, cols.attnames, values)


# An answer's claims, their citations with passages and their labels with reviewers, in one
# statement of three branches (column 0 says which), each branch's columns NULL in the others:
# the claims of answer %s with the id of their open send-back to reviewer %s and {gold} (the id of
# their current gold label, or NULL), then the citations and the labels of the claims of answer %s.
_ANSWER_CLAIMS_SQL = """
SELECT 0, {claim_cols},
  (SELECT sb.id FROM {send_back} sb WHERE sb.claim_id = c.id AND sb.reviewer_id = %s AND sb.resolved_at IS NULL
   LIMIT 1),
  {gold}, {citation_nulls}, {passage_nulls}, {label_nulls}, {reviewer_nulls}
FROM {claim} c WHERE c.answer_id = %s
UNION ALL
SELECT 1, {claim_nulls}, NULL, NULL, {citation_cols}, {passage_cols}, {label_nulls}, {reviewer_nulls}
FROM {citation} ci JOIN {claim} c ON c.id = ci.claim_id LEFT JOIN {passage} p ON p.id = ci.passage_id
WHERE c.answer_id = %s
UNION ALL
SELECT 2, {claim_nulls}, NULL, NULL, {citation_nulls}, {passage_nulls}, {label_cols}, {reviewer_cols}
FROM {label} l JOIN {claim} c ON c.id = l.claim_id JOIN {reviewer} r ON r.id = l.reviewer_id
WHERE c.answer_id = %s
"""
_GOLD_ID_SQL = "(SELECT g.id FROM {gold_claim} g WHERE g.claim_id = c.id AND g.is_current LIMIT 1)"


def answer_claims(answer: Answer, reviewer: Reviewer, *, gold: bool) -> list[Claim]:
    """The claims of ``answer`` in index order, each with ``answer`` set and
    ``open_send_back`` (the id of the send-back of ``reviewer``'s label on it that is
    still open, or ``None``), with ``gold``: ``current_gold`` (the id of its current gold
    label, or ``None``); ``cited``: its citations by position, each with its passage (or
    ``None``); ``all_labels``: every label on it, newest first, each with its reviewer.
    One query (``_ANSWER_CLAIMS_SQL``): the ORM's prefetch chain took three, and longer
    to build than the database took to run them."""
    claim, citation, passage = columns(Claim, "c"), columns(Citation, "ci"), columns(Passage, "p")
    label, reviewer_cols = columns(Label, "l"), columns(Reviewer, "r")
    quote = connection.ops.quote_name
    tables = {name: quote(model._meta.db_table) for name, model in (
        ("claim", Claim), ("citation", Citation), ("passage", Passage), ("label", Label),
        ("reviewer", Reviewer), ("send_back", SendBack), ("gold_claim", GoldClaim))}
    sql = _ANSWER_CLAIMS_SQL.format(
        claim_cols=claim.select, claim_nulls=claim.nulls, citation_cols=citation.select,
        citation_nulls=citation.nulls, passage_cols=passage.select, passage_nulls=passage.nulls,
        label_cols=label.select, label_nulls=label.nulls, reviewer_cols=reviewer_cols.select,
        reviewer_nulls=reviewer_cols.nulls,
        gold=_GOLD_ID_SQL.format(**tables) if gold else "NULL", **tables)
    with connection.cursor() as cursor:
        cursor.execute(sql, [reviewer.pk, answer.pk, answer.pk, answer.pk])
        rows = cursor.fetchall()
    marks = 1 + claim.width
    cite_at = marks + 2
    passage_at = cite_at + citation.width
    label_at = passage_at + passage.width
    reviewer_at = label_at + label.width
    claims: list[Claim] = []
    cited: dict[int, list[Citation]] = {}
    labels: dict[int, list[Label]] = {}
    for row in rows:
        if row[0] == 0:
            item = instance(claim, row, 1)
            item.answer = answer
            item.open_send_back = row[marks]
            if gold:
                item.current_gold = row[marks + 1]
            claims.append(item)
        elif row[0] == 1:
            cite = instance(citation, row, cite_at)
            cite.passage = instance(passage, row, passage_at)
            cited.setdefault(cite.claim_id, []).append(cite)
        else:
            given = instance(label, row, label_at)
            given.reviewer = instance(reviewer_cols, row, reviewer_at)
            labels.setdefault(given.claim_id, []).append(given)
    claims.sort(key=lambda c: c.index)
    for item in claims:
        item.cited = sorted(cited.get(item.pk, []), key=lambda c: (c.position, c.pk))
        item.all_labels = sorted(labels.get(item.pk, []), key=lambda label: -label.pk)
        # What the ORM's prefetch set: each citation's and label's claim.
        for related in (*item.cited, *item.all_labels):
            related.claim = item
    return claims

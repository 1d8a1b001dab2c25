"""Row-by-row difference of two label tables (SPEC §5, last bullet).

Pure: two label table frames (``labeling.exports.label_table``) in, a
:class:`LabelTableDiff` out. ``labeling.tables.versions.version_diff`` feeds it
two verified versions of one run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scoring.lazy import pd  # loaded on first use: keeps start-up fast (SPEC §7)

DIFF_FIELDS = ("claim", "claim_index", "citations", "cited_span", "label", "justification", "reviewer")
# Each reviewer's own current label (labeling.exports.label_table): compared
# when both tables carry it, so one reviewer's change shows even where the
# agreed label (pending on a disagreement, say) reads the same before and after.
REVIEWER_LABELS = "reviewer_labels"


@dataclass(frozen=True)
class FieldChange:
    field: str
    old: object
    new: object


@dataclass(frozen=True)
class RowDiff:
    """One row that differs between two tables: ``kind`` is ``added``,
    ``removed`` or ``changed``; ``changes`` names each differing field of
    DIFF_FIELDS (empty for added/removed rows)."""

    kind: str
    claim_id: int
    question_id: str
    claim_index: int
    claim: str
    old_label: str | None
    new_label: str | None
    changes: tuple[FieldChange, ...] = ()

    @property
    def changed_fields(self) -> list[str]:
        return [change.field for change in self.changes]

    def change(self, name: str) -> FieldChange | None:
        return next((c for c in self.changes if c.field == name), None)

    @property
    def claim_change(self) -> FieldChange | None:
        return self.change("claim")

    @property
    def label_change(self) -> FieldChange | None:
        return self.change("label")

    @property
    def justification_change(self) -> FieldChange | None:
        return self.change("justification")

    @property
    def other_changes(self) -> list[str]:
        """Changed fields besides claim, label, justification, in words:
        ``"position 3 → 4"``, ``"citations 1 → 1, 2"``, ``"reviewer ann → ann, bob"``, ``"spans"``,
        then one entry per reviewer whose own label changed (:attr:`reviewer_changes`)."""
        words = {"claim_index": "position", "citations": "citations", "reviewer": "reviewer"}
        described = []
        for change in self.changes:
            if change.field in words:
                described.append(f"{words[change.field]} {change.old or '—'} → {change.new or '—'}")
            elif change.field == "cited_span":
                described.append("spans")
        return described + self.reviewer_changes

    @property
    def reviewer_changes(self) -> list[str]:
        """Each reviewer's own label change, in reviewer order:
        ``"bob: SUPPORTED → UNSUPPORTED"``, ``"bob: justification edited"``,
        ``"carol: UNSUPPORTED (new)"``, ``"ann: SUPPORTED withdrawn"``."""
        change = self.change(REVIEWER_LABELS)
        if change is None:
            return []
        before, after = _by_reviewer(change.old), _by_reviewer(change.new)
        described = []
        for name in sorted(before.keys() | after.keys()):
            old, new = before.get(name), after.get(name)
            if old == new:
                continue
            if old is None:
                described.append(f"{name}: {new[0]} (new)")
            elif new is None:
                described.append(f"{name}: {old[0]} withdrawn")
            elif old[0] != new[0]:
                described.append(f"{name}: {old[0]} → {new[0]}")
            else:
                described.append(f"{name}: justification edited")
        return described


@dataclass
class LabelTableDiff:
    """Row-by-row difference of two label tables (SPEC §5), keyed by claim id.

    ``rows`` is sorted by question_id, claim_index; ``unchanged`` counts the
    rows present in both with no field of DIFF_FIELDS changed.
    """

    old_rows: int
    new_rows: int
    rows: list[RowDiff] = field(default_factory=list)
    unchanged: int = 0

    def count(self, kind: str) -> int:
        return sum(1 for row in self.rows if row.kind == kind)

    @property
    def label_flips(self) -> list[tuple[str, str, int]]:
        """``(old, new, claims)`` per label transition, pending shown as ``"pending"``."""
        flips: dict[tuple[str, str], int] = {}
        for row in self.rows:
            if row.kind == "changed" and row.change("label"):
                key = (row.old_label or "pending", row.new_label or "pending")
                flips[key] = flips.get(key, 0) + 1
        return [(old, new, n) for (old, new), n in sorted(flips.items())]


def diff_label_tables(old: pd.DataFrame, new: pd.DataFrame) -> LabelTableDiff:
    """Compare two label table frames row by row (SPEC §5 last bullet).

    Rows are matched on ``claim_id``; a claim only in ``new`` is ``added``,
    only in ``old`` ``removed``; a claim in both is ``changed`` when any of
    DIFF_FIELDS differs (None and "" are different: pending is not a value),
    or — when both tables carry ``reviewer_labels`` (versions saved before
    it was stored do not) — when any reviewer's own label or justification
    differs.
    """
    fields = DIFF_FIELDS
    if _has_reviewer_labels(old) and _has_reviewer_labels(new):
        fields = (*DIFF_FIELDS, REVIEWER_LABELS)

    def rows_of(table: pd.DataFrame) -> dict[int, dict]:
        columns = ["claim_id", "question_id", *fields]
        data = {c: table[c].tolist() for c in columns}
        return {int(data["claim_id"][i]): {c: data[c][i] for c in columns} for i in range(len(table))}

    before, after = rows_of(old), rows_of(new)
    diff = LabelTableDiff(old_rows=len(before), new_rows=len(after))
    for claim_id, row in after.items():
        previous = before.get(claim_id)
        if previous is None:
            diff.rows.append(_row_diff("added", claim_id, row, None, row["label"]))
            continue
        changes = tuple(FieldChange(name, previous[name], row[name]) for name in fields
                        if _value(previous[name]) != _value(row[name]))
        if changes:
            diff.rows.append(_row_diff("changed", claim_id, row, previous["label"], row["label"], changes))
        else:
            diff.unchanged += 1
    for claim_id, row in before.items():
        if claim_id not in after:
            diff.rows.append(_row_diff("removed", claim_id, row, row["label"], None))
    diff.rows.sort(key=lambda r: (r.question_id, r.claim_index, r.claim_id))
    return diff


def _value(value: object) -> object:
    if isinstance(value, float) and value != value:  # NaN from a frame column
        return None
    if isinstance(value, list):  # reviewer_labels: what each reviewer chose, not when
        return sorted(_by_reviewer(value).items())
    return int(value) if hasattr(value, "item") else value


def _has_reviewer_labels(table: pd.DataFrame) -> bool:
    return REVIEWER_LABELS in table.columns and not table[REVIEWER_LABELS].isna().any()


def _by_reviewer(labels: list[dict] | None) -> dict[str, tuple[str, str]]:
    return {item["reviewer"]: (item["label"], item["justification"]) for item in labels or []}


def _row_diff(kind: str, claim_id: int, row: dict, old_label, new_label, changes=()) -> RowDiff:
    return RowDiff(kind=kind, claim_id=claim_id, question_id=str(row["question_id"]),
                   claim_index=int(row["claim_index"]), claim=row["claim"], old_label=_value(old_label),
                   new_label=_value(new_label), changes=changes)

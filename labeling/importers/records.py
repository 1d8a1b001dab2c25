"""Plain records an answers file is parsed into (SPEC §6), shared by formats."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True, slots=True)
class ImportIssue:
    """One problem in an input file: 1-based ``line`` (row for spreadsheets),
    the ``field`` it concerns (dotted path such as ``claims[2].label``) and a
    ``reason`` a person can act on. ``file`` names the file when an import
    reads several (a dataset's responses and its sources), else ""."""

    line: int
    field: str
    reason: str
    file: str = ""

    def __str__(self) -> str:
        where = f"{self.file}: " if self.file else ""
        return f"{where}line {self.line}: {self.field}: {self.reason}"


class ImportFailed(Exception):
    """Raised when an import is rejected; ``issues`` lists every bad line.

    Nothing was written when this is raised (imports are all or nothing).
    """

    def __init__(self, issues: list[ImportIssue]):
        self.issues = issues
        shown = "\n".join(str(issue) for issue in issues[:50])
        more = f"\n… and {len(issues) - 50} more" if len(issues) > 50 else ""
        super().__init__(f"{len(issues)} problem(s), nothing was imported:\n{shown}{more}")


@dataclass(slots=True)
class JudgmentRecord:
    """One reviewer's judgment of one citation (SPEC §4.3b): ``reviewer`` None
    means the import's default reviewer."""

    reviewer: str | None
    judgment: str
    evidence: str = ""


@dataclass(slots=True)
class CitationRecord:
    """A claim's citation: by ``passage_id`` (as the answer cites it) or by ``source``."""

    passage_id: str | None
    source: str | None = None
    span: str = ""
    # The claim's reviewer's judgment of this citation (SPEC §4.3b), with its evidence.
    judgment: str | None = None
    evidence: str = ""
    # Every reviewer's judgment of this citation: ``judgment`` above (credited to the
    # claim's reviewer) or the file's ``judgments`` list, one per reviewer.
    judgments: list[JudgmentRecord] = field(default_factory=list)


@dataclass(slots=True)
class LabelRecord:
    """One reviewer's label of a claim as a file gives it: ``reviewer`` None
    means the import's default reviewer; ``labeled_at`` an aware UTC time, or
    None (the import's time)."""

    reviewer: str | None
    label: str
    justification: str = ""
    labeled_at: datetime | None = None


@dataclass(slots=True)
class ClaimRecord:
    """One claim with its citations and optional pre-existing labels.

    ``label``/``justification``/``reviewer`` are the single label of today's
    answers files; ``labels`` holds every label the claim carries (that one,
    or each entry of the file's ``labels`` list: several reviewers per claim),
    and is what the writer reads."""

    text: str
    citations: list[CitationRecord]
    index: int
    label: str | None = None
    justification: str = ""
    reviewer: str | None = None
    # False: "not a factual claim" (SPEC §4.3b).
    factual: bool = True
    labels: list[LabelRecord] = field(default_factory=list)


@dataclass(slots=True)
class PassageRecord:
    passage_id: str
    source: str
    text: str


@dataclass(slots=True)
class GoldRecord:
    """Gold of a question; each part is ``None`` when the file does not give it."""

    supporting_ids: list[str] | None = None
    references: list[tuple[str, str]] | None = None
    expected_sources: list[str] | None = None


@dataclass(slots=True)
class AnswerRecord:
    """One line of an answers file, validated (SPEC §6)."""

    line: int
    question_id: str
    question: str
    run: str
    answer: str
    answerable: bool | None
    passages: list[PassageRecord]
    claims: list[ClaimRecord]
    gold: GoldRecord | None
    # True when claims were split from the answer text (no `claims` field).
    claims_split: bool = False
    # The answer's id in the system it came from (a trace id), "" when the file gives none.
    external_id: str = ""
    warnings: list[ImportIssue] = field(default_factory=list)

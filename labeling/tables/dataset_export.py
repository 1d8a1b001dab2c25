"""A run's label table as a Hugging Face dataset folder (SPEC §6:
``export_dataset --run NAME [--version N] -o DIR``).

The folder holds:

- ``data/train-00000-of-00001.parquet``: the label table, one row per claim,
  typed (``labeling.exports.parquet``), with every reviewer's label
  (``reviewer_labels``) and the cited passages' texts; the file name is the
  Hub's split convention, so ``datasets.load_dataset("parquet",
  data_dir=DIR)`` reads it as the ``train`` split;
- ``README.md``: the dataset card (:func:`dataset_card`): counts, labels and
  what they mean, reviewers, coverage and support with their 95 % intervals
  (SPEC §4.5), agreement with its intervals (SPEC §4.4), the licence and
  source from the run's provenance, and the SHA-256 of the version
  exported (or, for the current table, the SHA-256 a version saved now
  would record).

The folder is written next to ``DIR`` under a temporary name and renamed
into place, so a failed export leaves nothing half written.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from labeling.audit import audit_record
from labeling.db import consistent_read
from labeling.exports.label_table import (
    STATUS_DISAGREEMENT,
    STATUS_LABELED,
    STATUS_PENDING,
    canonical_bytes,
    label_table_frame,
    passage_texts,
    table_claim_metrics,
)
from labeling.exports.parquet import PARQUET_EXTRA, parquet_available, write_parquet
from labeling.models import AuditAction, LabelTableVersion, Provenance, Reviewer, Run
from labeling.tables.versions import version_table
from labeling.team.agreement import CATEGORIES, run_judgment_agreement
from scoring.agreement import Coefficient, reliability
from scoring.intervals import Interval, clustered_ratio
from scoring.judgment_agreement import JudgmentAgreement
from scoring.labels import LABEL_VALUES, counted_labels
from scoring.lazy import pd  # loaded on first use: keeps start-up fast (SPEC §7)
from scoring.ratio import format_value

DATA_FILE = "data/train-00000-of-00001.parquet"
# Hub licence ids of the licences provenance records (anything else: "other").
HUB_LICENCES = {"mit": "mit", "apache-2.0": "apache-2.0", "cc-by-4.0": "cc-by-4.0", "cc-by-sa-4.0": "cc-by-sa-4.0",
                "cc0-1.0": "cc0-1.0"}
MEANINGS = {
    "SUPPORTED": "at least one cited span entails the claim as written",
    "UNSUPPORTED": "the claim has citations, but none entails it (partial support is UNSUPPORTED)",
    "UNCITED": "the claim has no citation",
}


@dataclass(frozen=True)
class DatasetExport:
    """What was written: the folder, its rows, and the table's SHA-256."""

    directory: Path
    rows: int
    sha256: str


def dataset_export(*, run: Run, directory: Path, version: LabelTableVersion | None = None,
                   actor: Reviewer | None = None) -> DatasetExport:
    """Write ``run``'s label table (current, or ``version``) as a dataset
    folder at ``directory`` (module docstring) and record the export in the
    audit log.

    Raises ValueError when pyarrow (the ``parquet`` extra) is missing, when
    ``directory``'s parent folder does not exist, or when ``directory``
    exists and is not empty; VersionIntegrityError when the version's file
    fails verification. Nothing is left at ``directory`` on failure.
    """
    if not parquet_available():
        raise ValueError(f"a dataset export needs pyarrow: {PARQUET_EXTRA}")
    if not directory.parent.is_dir():
        raise ValueError(f"{directory}: the folder {str(directory.parent)!r} does not exist; create it first")
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise ValueError(f"{directory} already exists and is not an empty folder: choose a new one")
    with consistent_read():
        if version is not None:
            table = passage_texts(run, version_table(version))
            digest = version.sha256
        else:
            table = label_table_frame(run)
            digest = hashlib.sha256(canonical_bytes(table)).hexdigest()
        judged = run_judgment_agreement(run=run) if version is None else None
        provenance = Provenance.objects.filter(run=run).first()
        names = {item["reviewer"] for items in table["reviewer_labels"].tolist() if items for item in items}
        kinds = dict(Reviewer.objects.filter(username__in=names).values_list("username", "kind"))
    card = dataset_card(run=run, table=table, sha256=digest, version=version, provenance=provenance, kinds=kinds,
                        judged=judged)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}-", dir=directory.parent))
    try:
        (staging / "data").mkdir()
        with (staging / DATA_FILE).open("wb") as handle:
            write_parquet(table, handle)
        (staging / "README.md").write_text(card, encoding="utf-8")
        if directory.exists():
            directory.rmdir()
        staging.rename(directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    audit_record(action=AuditAction.EXPORT, actor=actor, run=run, target=f"dataset {directory.name}",
                 detail={"format": "dataset", "version": version.number if version else None, "rows": len(table),
                         "sha256": digest})
    return DatasetExport(directory=directory, rows=len(table), sha256=digest)


def dataset_card(*, run: Run, table: pd.DataFrame, sha256: str, version: LabelTableVersion | None,
                 provenance: Provenance | None, kinds: dict[str, str],
                 judged: JudgmentAgreement | None) -> str:
    """The dataset card (``README.md``, Hub YAML header then Markdown) of a
    label table. ``kinds``: reviewer name → kind; ``judged``: the citation
    judgments' agreement (None for a version, which does not store them)."""
    licence = provenance.licence if provenance else ""
    hub_licence = HUB_LICENCES.get(licence.strip().lower(), "other")
    metrics = table_claim_metrics(table)
    per_answer = metrics.per_answer
    coverage = clustered_ratio(per_answer["cited"].tolist(), per_answer["claims"].tolist())
    support = clustered_ratio(per_answer["supported"].tolist(), per_answer["labeled_cited"].tolist())
    labels = _labels_frame(table, kinds, promoted=run.promoted_judge.username if run.promoted_judge_id else None)
    overall = reliability(labels, categories=CATEGORIES) if len(labels) else None
    what = (f"version {version.number} of the label table (saved {version.created_at:%Y-%m-%d}"
            + (f", note: {version.note}" if version.note else "") + ")") if version else \
        "the current label table (not a saved version)"
    counts = table["label"].value_counts(dropna=True).to_dict()
    status = table["status"].value_counts().to_dict()
    lines = [
        "---",
        f"license: {hub_licence}",
        f"pretty_name: {_yaml(f'{run.project.slug} / {run.name} — claim-level citation labels')}",
        "tags:", "- citelab", "- attribution", "- citations", "- rag",
        "configs:", "- config_name: default", "  data_files:", "  - split: train", f"    path: {DATA_FILE}",
        "---", "",
        f"# {run.name} (project {run.project.slug}): claim-level citation labels", "",
        f"Exported by Citelab on {datetime.now(UTC):%Y-%m-%d} from {what}. Each row of `{DATA_FILE}` is one "
        "**claim** of an answer with its citations, the cited passages, the label that counts for it and every "
        "reviewer's own label (`reviewer_labels`).", "",
        "## Integrity", "",
        f"SHA-256 of the table's canonical form: `{sha256}`"
        + (f" (version {version.number}, as Citelab recorded it)." if version else
           " (what a version saved now would record)."), "",
        "## Counts", "",
        "| answers | claims | cited | labeled cited | SUPPORTED | UNSUPPORTED | UNCITED | pending | disputed | "
        "not factual |",
        "|---|---|---|---|---|---|---|---|---|---|",
        f"| {metrics.answers} | {len(table)} | {metrics.cited} | {metrics.labeled_cited} | "
        f"{counts.get('SUPPORTED', 0)} | {counts.get('UNSUPPORTED', 0)} | {counts.get('UNCITED', 0)} | "
        f"{status.get(STATUS_PENDING, 0)} | {status.get(STATUS_DISAGREEMENT, 0)} | {status.get('non_factual', 0)} |",
        "",
        "## Labels", "",
        *[f"- `{value}`: {MEANINGS[value]}." for value in LABEL_VALUES],
        "- `null`: pending (not labeled yet) or disputed (its reviewers disagree and no lead adjudicated).", "",
        "## Coverage and support", "",
        "Pooled over answers, with 95% intervals that treat each answer as a cluster of claims (Wilson at the "
        "effective size; Citelab SPEC §4.5).", "",
        "| metric | value | 95% interval | answers |", "|---|---|---|---|",
        _ratio_row("coverage (cited / claims)", metrics.cited, metrics.claims, coverage),
        _ratio_row("support (SUPPORTED / labeled cited)", metrics.supported, metrics.labeled_cited, support), "",
        "## Reviewers", "",
        *_reviewer_lines(table, kinds), "",
        "## Agreement", "",
        *_agreement_lines(overall, judged), "",
        "## Source and licence", "",
        *_source_lines(provenance), "",
        "## Columns", "",
        "`run`, `question_id`, `answer_id`, `claim_index`, `claim`, `citations` (cited passage ids, `, `-joined), "
        "`cited_span`, `passage` (the cited passages' texts), `label`, `justification`, `reviewer`, `labeled_at` "
        "(UTC), `status`, `claim_id`, `claim_revision`, `factual`, `judgments`, `evidence`, `reviewer_labels` "
        "(list of `{reviewer, label, justification, labeled_at}`).", "",
        "```python", "import datasets", "", 'labels = datasets.load_dataset("parquet", data_dir="<this folder>")',
        "```", "",
    ]
    return "\n".join(lines)


def _labels_frame(table: pd.DataFrame, kinds: dict[str, str], *, promoted: str | None) -> pd.DataFrame:
    """Every counted reviewer's SUPPORTED/UNSUPPORTED on the table's judged claims: the labels
    frame agreement reads (``scoring.labels.counted_labels``: an automated judge, kind
    ``model``, counts only when it is the run's ``promoted`` judge, as on the agreement page)."""
    judged = {STATUS_LABELED, STATUS_PENDING, STATUS_DISAGREEMENT}
    rows = [(claim_id, item["reviewer"], item["label"], kinds.get(item["reviewer"]))
            for claim_id, status, items in table[["claim_id", "status", "reviewer_labels"]].itertuples(index=False)
            if status in judged and items
            for item in items
            if item["label"] in CATEGORIES]
    labels = pd.DataFrame.from_records(rows, columns=["claim_id", "reviewer", "label", "kind"])
    return counted_labels(labels, promoted=promoted)[["claim_id", "reviewer", "label"]]


def _ratio_row(name: str, numerator: int, denominator: int, interval: Interval) -> str:
    value = f"{numerator}/{denominator} = {format_value(numerator / denominator, 3)}" if denominator \
        else f"{numerator}/0 = —"
    bounds = f"{format_value(interval.low, 3)} – {format_value(interval.high, 3)}" if interval.defined else "—"
    return f"| {name} | {value} | {bounds} | {interval.n_answers} |"


def _reviewer_lines(table: pd.DataFrame, kinds: dict[str, str]) -> list[str]:
    given: dict[str, int] = {}
    for items in table["reviewer_labels"].tolist():
        for item in items or []:
            given[item["reviewer"]] = given.get(item["reviewer"], 0) + 1
    if not given:
        return ["No reviewer has labeled a claim of this table."]
    return ["| reviewer | kind | labels |", "|---|---|---|",
            *[f"| {_cell(name)} | {kinds.get(name, 'unknown')} | {count} |" for name, count in sorted(given.items())]]


def _agreement_lines(overall, judged: JudgmentAgreement | None) -> list[str]:
    lines = ["Across the people and imported annotators who labeled the cited claims (automated judges excluded), "
             "on SUPPORTED vs UNSUPPORTED; 95% percentile bootstrap intervals over claims (2,000 resamples, fixed "
             "seed).", "", "| figure | value | 95% interval | n |", "|---|---|---|---|"]
    if overall is None:
        lines.append("| Krippendorff's alpha | — | — | 0 |")
    else:
        lines += [_figure_row("Krippendorff's alpha (nominal)", overall.alpha, "claims"),
                  _figure_row("Gwet's AC1", overall.ac1, "claims")]
    if judged is not None and judged.citations:
        lines += [_figure_row("citation judgments: alpha, nominal", judged.nominal, "citations"),
                  _figure_row("citation judgments: alpha, ordinal (FULL > PARTIAL > NONE)", judged.ordinal,
                              "citations")]
    elif judged is None:
        lines += ["", "Citation judgments' agreement is not part of a saved version (versions keep the agreed "
                      "judgments only)."]
    return lines


def _figure_row(name: str, figure: Coefficient, unit: str) -> str:
    value = format_value(figure.value, 3)
    bounds = "—" if figure.ci95 is None else f"{format_value(figure.ci95[0], 3)} – {format_value(figure.ci95[1], 3)}"
    return f"| {name} | {value} | {bounds} | {figure.n} {unit} |"


def _source_lines(provenance: Provenance | None) -> list[str]:
    if provenance is None:
        return ["The answers and labels were made in Citelab; no dataset licence is recorded for this run. Choose "
                "one (and edit the `license` line above) before you share the dataset."]
    files = ", ".join(f"`{f.get('name')}` (SHA-256 `{f.get('sha256')}`)" for f in provenance.files) or "—"
    return [f"- Source: {_cell(provenance.source)}, {provenance.url}",
            f"- Commit: `{provenance.commit or 'not recorded'}`",
            f"- Licence: {_cell(provenance.licence)}",
            f"- Imported files: {files}",
            f"- How its labels became Citelab's: {_cell(provenance.note)}"]


def _cell(text: str) -> str:
    """Text safe in a Markdown table cell or list line."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _yaml(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'

"""Label values, the label rule, input checks, and how reviewers' labels resolve per claim.

This module is the one home of the label values (``SUPPORTED``,
``UNSUPPORTED``, ``UNCITED``; ``labeling.models.LabelValue`` takes them from
here) and of the SPEC §3 rule a label must keep (:func:`label_problem`): the
browser, the answers and label table imports and scoring all ask it.

The labels frame is the shape every label-consuming function of ``scoring``
takes (SPEC §3, §4.1, §4.4): one row per *current* label of one reviewer on
one claim, with columns

- ``claim_id``  hashable, the claim's stable id
- ``reviewer``  str, the reviewer's name (a person or an imported ``model``)
- ``label``     str, one of ``SUPPORTED``, ``UNSUPPORTED``, ``UNCITED``

Stale labels (SPEC §3: the claim's text or citations changed since) are not
current and must not be passed in.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from scoring.lazy import np, pd  # loaded on first use: keeps start-up fast (SPEC §7)

SUPPORTED = "SUPPORTED"
UNSUPPORTED = "UNSUPPORTED"
UNCITED = "UNCITED"
LABEL_VALUES = (SUPPORTED, UNSUPPORTED, UNCITED)

LABEL_COLUMNS = ("claim_id", "reviewer", "label")


@dataclass(frozen=True, slots=True)
class LabelProblem:
    """Why a label cannot be recorded on a claim: ``code`` (``uncited_on_cited``,
    ``judged_on_uncited``, ``supported_on_fabricated`` or ``justification_required``), ``field`` (``label``
    or ``justification``: the input to correct) and ``message`` (lower-case,
    no final stop, for the caller to place after the claim or row it names)."""

    code: str
    field: str
    message: str


def label_problem(value: str, *, n_citations: int, n_sent: int | None = None, justification: str | None = None,
                  supported_needs_justification: bool = False) -> LabelProblem | None:
    """The SPEC §3 rule for ``value`` on a claim with ``n_citations`` citations,
    or ``None`` when the label may be recorded.

    - UNCITED if and only if the claim has zero citations;
    - SUPPORTED needs at least one citation of a passage that was sent with the
      answer: ``n_sent`` counts those (``None`` when unknown skips the check).
      A fabricated citation (SPEC §4.2) names a passage the model never read,
      so no cited span exists that could entail the claim;
    - a justification is required for UNSUPPORTED, and for SUPPORTED when
      ``supported_needs_justification`` (a project setting). ``justification``
      ``None`` skips this check: an imported dataset keeps its labels as its
      annotators gave them; a reviewer in the app always passes the text.

    ``value`` must be one of ``LABEL_VALUES`` (callers parse it first).
    """
    if value == UNCITED and n_citations:
        return LabelProblem("uncited_on_cited", "label", f"UNCITED on a claim with {n_citations} citation(s): "
                                                         "a cited claim is SUPPORTED or UNSUPPORTED")
    if value != UNCITED and not n_citations:
        return LabelProblem("judged_on_uncited", "label", f"{value} on a claim without citations: a claim that "
                                                          "cites nothing is UNCITED automatically")
    if value == SUPPORTED and n_sent == 0 and n_citations:
        return LabelProblem("supported_on_fabricated", "label",
                            "SUPPORTED on a claim whose every citation is fabricated (it names a passage that "
                            "was not sent with the answer): nothing it cites can entail it, so it is UNSUPPORTED")
    if justification is not None and not justification.strip() and (
            value == UNSUPPORTED or (value == SUPPORTED and supported_needs_justification)):
        where = " in this project" if value == SUPPORTED else ""
        return LabelProblem("justification_required", "justification",
                            f"a justification is required for {value}{where}")
    return None


def label_rule_breaks(codes: np.ndarray, cited: np.ndarray) -> np.ndarray:
    """:func:`label_problem`'s citation rule over many claims at once: True where
    the label (codes of :func:`label_codes`, -1 = none) breaks it.

    Each of the eight (label, cited) combinations is put to
    :func:`label_problem` once, so both forms hold exactly the same rule.
    """
    breaks = np.zeros((len(LABEL_VALUES) + 1, 2), dtype=bool)  # row -1 (no label) never breaks
    for code, value in enumerate(LABEL_VALUES):
        for is_cited in (False, True):
            breaks[code, int(is_cited)] = label_problem(value, n_citations=int(is_cited)) is not None
    return breaks[codes, cited.astype(int)]


def require_columns(frame: pd.DataFrame, columns: Iterable[str], *, name: str) -> None:
    """Raise ``ValueError`` naming every column of ``columns`` missing from ``frame``.

    ``name`` says which input frame is meant (``"claims"``, ``"labels"`` …) so
    the message points at the caller's mistake.
    """
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise ValueError(f"{name} frame lacks column(s) {', '.join(missing)}; it has {list(frame.columns)}")


def label_codes(values: pd.Series, *, allow_null: bool) -> np.ndarray:
    """Each label as its position in ``LABEL_VALUES`` (0 SUPPORTED, 1 UNSUPPORTED,
    2 UNCITED) or -1 for null, as an int8 array aligned with ``values``.

    One factorize instead of a string comparison per label value keeps
    1M-claim scoring fast. Raises ``ValueError`` as :func:`check_label_values`.
    """
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    uniques = list(uniques)
    unknown = [value for value in uniques if value not in LABEL_VALUES]
    if unknown:
        names = sorted({repr(value.item() if isinstance(value, np.generic) else value) for value in unknown})
        shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
        rows = int(np.isin(codes, [uniques.index(value) for value in unknown]).sum())
        raise ValueError(f"unknown label value(s) {shown} in {rows} row(s); expected one of {', '.join(LABEL_VALUES)}")
    if not allow_null and (codes < 0).any():
        raise ValueError(f"{int((codes < 0).sum())} label row(s) have no label value")
    # codes == -1 (null) picks the trailing -1
    lookup = np.array([LABEL_VALUES.index(value) for value in uniques] + [-1], dtype="int8")
    return lookup[codes]


def check_label_values(values: pd.Series, *, allow_null: bool) -> None:
    """Raise ``ValueError`` unless every value is a label value (SPEC §3).

    ``values`` is any Series of labels. Nulls (None/NaN/pd.NA) are allowed only
    when ``allow_null`` (a pending claim in the claims frame); a labels-frame
    row must carry a value. The message names the unknown values, e.g.
    ``unknown label value(s) 'YES', 'supported'``.
    """
    label_codes(values, allow_null=allow_null)


def check_labels_frame(labels: pd.DataFrame) -> None:
    """Validate a labels frame (module docstring): columns, values, one label
    per (claim_id, reviewer).

    Raises ``ValueError`` on a missing column, a null or unknown label value, or
    a reviewer with two current labels on one claim (naming the first few).
    """
    require_columns(labels, LABEL_COLUMNS, name="labels")
    check_label_values(labels["label"], allow_null=False)
    if labels["reviewer"].isna().any():
        raise ValueError("labels frame has row(s) without a reviewer")
    twice = labels.duplicated(["claim_id", "reviewer"], keep=False)
    if twice.any():
        pairs = labels.loc[twice, ["claim_id", "reviewer"]].drop_duplicates().head(5)
        shown = ", ".join(f"({c!r}, {r!r})" for c, r in pairs.itertuples(index=False))
        raise ValueError(
            f"a reviewer has more than one current label on a claim: {shown}; pass only each reviewer's current label"
        )


def sort_by(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """``frame`` sorted by ``columns`` with a fresh index, so results do not
    depend on input row order; ids of mixed, unorderable types keep their
    first-seen order instead of raising."""
    try:
        return frame.sort_values(columns, kind="stable").reset_index(drop=True)
    except TypeError:
        return frame.reset_index(drop=True)


MODEL_KIND = "model"


def counted_labels(labels: pd.DataFrame, *, promoted: str | None = None,
                   excluded: Collection[str] = ()) -> pd.DataFrame:
    """The rows of ``labels`` that may make a claim's label (SPEC §4.4): all
    but an automated labeler's. ``labels`` has a ``kind`` column (the
    reviewer's kind: ``human``, ``external`` — imported human experts, who
    count — or ``model``, who never counts as a human label and is only
    graded against them); without one every row counts. ``promoted``: the
    name of a judge a lead promoted for the run, whose labels count too.
    ``excluded``: names of reviewers whose labels the run leaves out of its
    figures (unqualified reviewers, SPEC §4.4), whatever their kind.
    Out: the same columns, the other ``model`` rows and the excluded dropped.
    The database's form of this rule is ``labeling.models.counted.counted_q``.

    Example: ann (human) S, judge-a (model, promoted) U, judge-b (model) U,
    cy (human, excluded) U on one claim → ann's and judge-a's rows."""
    kept = labels
    if "kind" in labels.columns:
        kept = kept[(kept["kind"] != MODEL_KIND) | (kept["reviewer"] == promoted)]
    if len(excluded):
        kept = kept[~kept["reviewer"].isin(list(excluded))]
    return kept


def resolve_labels(labels: pd.DataFrame, *, reviewer: str | None = None) -> pd.DataFrame:
    """One resolved label per claim from the reviewers' current labels.

    In: a labels frame (module docstring). With ``reviewer=NAME`` only that
    reviewer's labels count (e.g. to score one reviewer or an imported model).

    Out: one row per ``claim_id`` with at least one counted label, sorted by
    ``claim_id``, columns

    - ``claim_id``
    - ``label``        the value every counted reviewer gave, or ``None`` when
      they disagree: the claim stays *pending* until adjudicated (SPEC §4:
      pending is not a value)
    - ``reviewers``    int, number of reviewers counted on the claim
    - ``disagreement`` bool, True when the counted reviewers gave ≥ 2 values

    Raises ``ValueError`` as :func:`check_labels_frame`.
    """
    check_labels_frame(labels)
    if reviewer is not None:
        labels = labels[labels["reviewer"] == reviewer]
    grouped = labels.groupby("claim_id", sort=False)["label"]
    disagreement = (grouped.nunique() > 1).to_numpy(dtype=bool)
    first = grouped.first().to_numpy(dtype=object)
    resolved = pd.DataFrame(
        {
            "claim_id": grouped.size().index.to_numpy(),
            "label": pd.Series(np.where(disagreement, None, first), dtype=object),
            "reviewers": grouped.size().to_numpy(dtype="int64"),
            "disagreement": disagreement,
        }
    )
    return sort_by(resolved, ["claim_id"])


def apply_adjudications(resolved: pd.DataFrame, adjudications: pd.DataFrame) -> pd.DataFrame:
    """The label that counts per claim (SPEC §4.4): a lead's adjudication, else
    the reviewers' resolved label (``resolve_labels``).

    In: ``resolved`` as ``resolve_labels`` returns it; ``adjudications`` with
    columns ``claim_id`` and ``label`` (the adjudicated value, one row per claim).
    Out: ``resolved`` with every adjudicated claim's ``label`` replaced,
    ``disagreement`` False there (settled), a claim adjudicated without any
    counted label added (``reviewers`` 0), and a bool column ``adjudicated``;
    sorted by ``claim_id``.

    Example: reviewers split on claim 1 (label None, disagreement True) and a
    lead says UNSUPPORTED → claim 1 is UNSUPPORTED, disagreement False,
    adjudicated True.
    """
    adjudicated = adjudications.set_index("claim_id")["label"]
    out = resolved.set_index("claim_id")
    missing = adjudicated.index.difference(out.index)
    if len(missing):
        added = pd.DataFrame({"label": None, "reviewers": 0, "disagreement": False}, index=missing)
        out = pd.concat([out, added.astype({"reviewers": "int64", "disagreement": bool})])
    out["label"] = out["label"].astype(object)
    out.loc[adjudicated.index, "label"] = adjudicated.to_numpy(dtype=object)
    out["adjudicated"] = out.index.isin(adjudicated.index)
    out.loc[out["adjudicated"], "disagreement"] = False
    out.index.name = "claim_id"
    return sort_by(out.reset_index(), ["claim_id"])


def disagreements(labels: pd.DataFrame) -> pd.DataFrame:
    """The claims whose current reviewers disagree, one column per reviewer.

    In: a labels frame (module docstring).
    Out: one row per disagreeing claim, sorted by ``claim_id``; columns
    ``claim_id`` then each reviewer who labeled any of these claims (sorted by
    name), a cell holding that reviewer's label or ``None`` where the reviewer
    did not label the claim. Empty (only ``claim_id``) when everyone agrees.

    Raises ``ValueError`` as :func:`check_labels_frame`.
    """
    resolved = resolve_labels(labels)
    disputed = resolved.loc[resolved["disagreement"], "claim_id"]
    rows = labels[labels["claim_id"].isin(disputed)]
    if rows.empty:
        return pd.DataFrame({"claim_id": pd.Series([], dtype=object)})
    wide = rows.pivot(index="claim_id", columns="reviewer", values="label").astype(object)
    wide = wide.reindex(columns=sorted(wide.columns))
    wide = wide.where(wide.notna(), None)
    wide.columns.name = None
    return sort_by(wide.reset_index(), ["claim_id"])

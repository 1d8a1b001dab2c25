"""Agreement on citation judgments (SPEC §6): Krippendorff's alpha,
nominal and ordinal (FULL > PARTIAL > NONE, UNJUDGEABLE left out), with
bootstrap intervals; in ``agreement --format json`` under
``citation_judgments`` and on the run's agreement page. Checked by hand and
against the ``krippendorff`` package."""

from __future__ import annotations

import io
import json
from fractions import Fraction

import krippendorff
import numpy as np
import pandas as pd
import pytest
from django.core.management import call_command
from django.urls import reverse

from labeling.importers.load import project_for_import, run_import
from labeling.models import Reviewer, ReviewerKind
from scoring.judgment_agreement import coincidence_alpha, judgment_agreement, judgment_value_counts

# c1 FULL/FULL, c2 FULL/PARTIAL, c3 NONE/NONE; c4: a UNJUDGEABLE, b FULL → one judgment left, drops out.
HAND = pd.DataFrame([(1, "a", "FULL"), (1, "b", "FULL"), (2, "a", "FULL"), (2, "b", "PARTIAL"),
                     (3, "a", "NONE"), (3, "b", "NONE"), (4, "a", "UNJUDGEABLE"), (4, "b", "FULL")],
                    columns=["citation_id", "reviewer", "judgment"])
# Coincidences: o_FF = 2, o_FP = o_PF = 1, o_NN = 2; marginals n_N = 2, n_P = 1, n_F = 3, n = 6.
# Nominal: 1 − (n − 1)·Σ_{c≠k} o_ck / Σ_{c≠k} n_c n_k = 1 − 5·2 / (36 − 4 − 1 − 9) = 1 − 10/22 = 6/11.
NOMINAL = float(Fraction(6, 11))
# Ordinal δ²: NP = (3/2)² = 2.25, PF = (4/2)² = 4, NF = (6 − 5/2)² = 12.25;
# observed Σ o δ² = 2·4 = 8; chance Σ n_c n_k δ² = 2·(2·1·2.25 + 2·3·12.25 + 1·3·4) = 180;
# alpha = 1 − 5·8/180 = 7/9.
ORDINAL = float(Fraction(7, 9))


def test_alpha_by_hand():
    result = judgment_agreement(HAND)
    assert result.nominal.value == pytest.approx(NOMINAL, abs=1e-12)
    assert result.ordinal.value == pytest.approx(ORDINAL, abs=1e-12)
    assert (result.nominal.n, result.ordinal.n, result.citations, result.unjudgeable) == (3, 3, 4, 1)
    assert result.reviewers == ["a", "b"]
    assert result.to_dict()["n_citations"] == 3


def reliability_data(frame: pd.DataFrame) -> np.ndarray:
    """Reviewers × citations, NONE 0 < PARTIAL 1 < FULL 2, UNJUDGEABLE and absent NaN."""
    value = {"NONE": 0.0, "PARTIAL": 1.0, "FULL": 2.0}
    reviewers = sorted(frame["reviewer"].unique())
    citations = sorted(frame["citation_id"].unique())
    data = np.full((len(reviewers), len(citations)), np.nan)
    for citation, reviewer, judgment in frame.itertuples(index=False):
        if judgment in value:
            data[reviewers.index(reviewer), citations.index(citation)] = value[judgment]
    return data


@pytest.mark.parametrize("seed", range(6))
def test_alpha_is_the_krippendorff_packages_on_the_reliability_matrix(seed):
    """Random judgments of 2–5 reviewers on 40 citations (some missing, some UNJUDGEABLE)."""
    rng = np.random.default_rng(seed)
    reviewers = [f"r{k}" for k in range(2 + seed % 4)]
    rows = [(c, r, rng.choice(["FULL", "PARTIAL", "NONE", "UNJUDGEABLE"], p=[0.45, 0.25, 0.2, 0.1]))
            for c in range(40) for r in reviewers if rng.random() < 0.8]
    frame = pd.DataFrame(rows, columns=["citation_id", "reviewer", "judgment"])
    result = judgment_agreement(frame)
    data = reliability_data(frame)
    for level, figure in (("nominal", result.nominal), ("ordinal", result.ordinal)):
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level, value_domain=[0, 1, 2])
        assert figure.value == pytest.approx(expected, abs=1e-12), level
        # The bootstrap's coincidence form on the full sample is the package's alpha too.
        counts = judgment_value_counts(frame)
        pairable = counts[counts.sum(axis=1) >= 2]
        patterns, weights = np.unique(pairable, axis=0, return_counts=True)
        assert coincidence_alpha(patterns, weights[np.newaxis], level=level)[0] == pytest.approx(expected, abs=1e-12)
        low, high = figure.ci95
        assert low <= figure.value <= high


def test_intervals_are_the_same_every_time():
    assert judgment_agreement(HAND).nominal.ci95 == judgment_agreement(HAND).nominal.ci95


def test_one_judgment_throughout_leaves_alpha_undefined():
    frame = pd.DataFrame([(1, "a", "FULL"), (1, "b", "FULL"), (2, "a", "FULL"), (2, "b", "FULL")],
                         columns=["citation_id", "reviewer", "judgment"])
    result = judgment_agreement(frame)
    assert (result.nominal.value, result.nominal.ci95, result.ordinal.value, result.nominal.n) == (None, None, None, 2)


def test_a_reviewer_judging_a_citation_twice_is_refused():
    with pytest.raises(ValueError, match="reviewer 'a' judges citation 1 twice"):
        judgment_agreement(pd.DataFrame([(1, "a", "FULL"), (1, "a", "NONE")],
                                        columns=["citation_id", "reviewer", "judgment"]))


# ------------------------------------------------------------ the run


@pytest.fixture
def judged_run(db):
    """The HAND judgments on one run, imported as judgments lists (SPEC §6): ann-a
    and ann-b judge four citations; judge-x (a model) judges them too and is left out."""
    passages = [{"id": f"P{k}", "source": "doc.md", "text": f"Passage {k}."} for k in range(1, 5)]
    by_citation: dict[int, list[dict]] = {}
    for citation, reviewer, judgment in HAND.itertuples(index=False):
        by_citation.setdefault(citation, []).append({"reviewer": f"ann-{reviewer}", "judgment": judgment})
    Reviewer.objects.create_user(username="judge-x", kind=ReviewerKind.MODEL)
    claims = []
    for k in range(1, 5):
        judgments = [*by_citation[k], {"reviewer": "judge-x", "judgment": "NONE"}]
        claims.append({"text": f"Claim {k}.", "citations": [{"passage_id": f"P{k}", "judgments": judgments}],
                       "labels": [{"reviewer": "ann-a", "label": "SUPPORTED"},
                                  {"reviewer": "ann-b", "label": "SUPPORTED"}]})
    line = {"question_id": "q1", "question": "Q?", "run": "judged", "answer": " ".join(c["text"] for c in claims),
            "passages": passages, "claims": claims}
    project = project_for_import(slug="judging")
    run_import(project=project, source=(json.dumps(line) + "\n").encode())
    return project


def test_agreement_json_gives_citation_judgments(judged_run):
    out = io.StringIO()
    call_command("agreement", "--run", "judged", "--project", "judging", "--format", "json", stdout=out)
    figures = json.loads(out.getvalue())["citation_judgments"]
    assert figures["alpha_nominal"] == pytest.approx(NOMINAL, abs=1e-12)
    assert figures["alpha_ordinal"] == pytest.approx(ORDINAL, abs=1e-12)
    assert figures["n_citations"] == 3
    assert figures["reviewers"] == ["ann-a", "ann-b"]
    assert figures["unjudgeable_left_out"] == 1
    low, high = figures["alpha_nominal_ci95"]
    assert low <= NOMINAL <= high
    assert len(figures["alpha_ordinal_ci95"]) == 2


def test_agreement_table_lists_the_judgment_figures(judged_run):
    out = io.StringIO()
    call_command("agreement", "--run", "judged", "--project", "judging", stdout=out)
    text = out.getvalue()
    assert "Citation judgments of 2 reviewer(s), FULL > PARTIAL > NONE (1 UNJUDGEABLE left out)" in text
    assert "Krippendorff alpha, nominal 0.55 (95% CI" in text
    assert "Krippendorff alpha, ordinal 0.78 (95% CI" in text


def test_the_agreement_page_shows_both_alphas(judged_run, client):
    lead = Reviewer.objects.create_user(username="lead", password="pw-for-tests-1")
    judged_run.members.add(lead)
    client.force_login(lead)
    page = client.get(reverse("run_agreement", kwargs={"project_slug": "judging", "run_name": "judged"}))
    html = page.content.decode()
    assert page.status_code == 200
    assert 'id="figure-judgment-alpha-nominal"' in html and 'id="figure-judgment-alpha-ordinal"' in html
    section = html[html.index('id="citation-judgments"'):]
    assert "ann-a, ann-b" in section
    assert ">0.55<" in section.split('id="figure-judgment-alpha-ordinal"')[0]
    assert ">0.78<" in section.split('id="figure-judgment-alpha-ordinal"')[1]
    assert "3 citations with two or more judgments" in section

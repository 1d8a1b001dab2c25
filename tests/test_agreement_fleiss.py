"""Fleiss' kappa beside alpha and AC1 in ``manage.py agreement`` and on the agreement page
(SPEC §4.4), on the real ExpertQA labels with known flips (tests/agreement_data.py)."""

from __future__ import annotations

import numpy as np
import pytest
from django.urls import reverse
from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss

from tests.agreement_data import FLIP_RUN
from tests.test_agreement_command import agreement_json, flipped  # noqa: F401 (fixture)

# Two reviewers on 175 claims: S→S 123, S→U 10, U→S 5, U→U 37 (tests/test_agreement_command.py).
# p_a = 160/175; π_S = 261/350, π_U = 89/350; p_e = (261² + 89²)/350² = 76042/122500;
# kappa = (112000 − 76042)/(122500 − 76042) = 35958/46458.
FLEISS = 35958 / 46458


def test_command_reports_fleiss_kappa_with_its_interval(flipped, capsys):  # noqa: F811
    result = agreement_json(capsys)
    table = np.array([[2, 0]] * 123 + [[1, 1]] * 15 + [[0, 2]] * 37)
    assert result["fleiss_kappa"] == pytest.approx(FLEISS, abs=1e-12)
    assert result["fleiss_kappa"] == pytest.approx(statsmodels_fleiss(table), abs=1e-12)
    assert result["fleiss_kappa_n"] == 175
    low, high = result["fleiss_kappa_ci95"]
    assert low < FLEISS < high and high - low < 0.35


def test_agreement_page_shows_fleiss_kappa(flipped, client, reviewer):  # noqa: F811
    flipped.members.add(reviewer)
    client.force_login(reviewer)
    html = client.get(reverse("run_agreement", kwargs={"project_slug": "expertqa", "run_name": FLIP_RUN})).content
    html = html.decode()
    assert 'id="figure-fleiss"' in html and "<h3 class=\"stat-title\">Fleiss' kappa</h3>" in html
    assert f'<span class="metric">{FLEISS:.2f}</span>' in html

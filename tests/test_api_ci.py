"""The CI example of the HTTP API's help page (templates/docs/api.md), run as
written with ``sh`` and ``curl`` against a live server and a fake judge endpoint
on 127.0.0.1: import a run's answers and start the judge, wait for it, read the
scores, gate — exit 0 when the gate passes, non-zero when it fails. Also the
judge runs over the API."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from labeling.importers.load import project_for_import, run_import
from labeling.integrations.tokens import token_create
from labeling.models import JudgeRun, Label, Membership, Role
from tests.conftest import REPO_ROOT
from tests.factories import ReviewerFactory
from tests.judge_server import QUESTIONS, JudgeServer, judging_answers


def ci_script() -> str:
    """The first ``sh`` block under the heading "A CI job" of templates/docs/api.md
    (the HTTP API's help page, served at /docs/api/)."""
    page = (REPO_ROOT / "templates" / "docs" / "api.md").read_text(encoding="utf-8")
    match = re.search(r"^## A CI job\n.*?```sh\n(.*?)```", page, re.S | re.M)
    assert match, "templates/docs/api.md has no CI example"
    return match.group(1)


def _answers(path: Path, *, run: str, uncite: int = 0) -> Path:
    """The judging answers (6 answers, 12 cited claims of 18) as ``run``, the first ``uncite``
    answers' cited claims without their citations."""
    rows = [json.loads(line) for line in judging_answers(path).read_text().splitlines()]
    for row in rows[:uncite]:
        row["answer"] = row["answer"].replace(" [P1]", "").replace(" [P2]", "")
        for claim in row["claims"]:
            claim["citations"] = []
    path.write_text("".join(json.dumps({**row, "run": run}) + "\n" for row in rows))
    return path


@pytest.fixture
def project_lead(transactional_db, tmp_path):
    """Project ``judging`` with the baseline run ``nightly-1`` (coverage 12/18) and a lead's token."""
    project = project_for_import(slug="judging")
    run_import(project=project, source=_answers(tmp_path / "base.jsonl", run="nightly-1"))
    lead = ReviewerFactory(username="ci-lead")
    Membership.objects.create(project=project, reviewer=lead, role=Role.LEAD)
    return project, token_create(project=project, reviewer=lead, created_by=None, name="ci").secret


def _run_script(live_server, tmp_path, secret: str, answers: Path, run: str):
    (tmp_path / "answers.jsonl").write_bytes(answers.read_bytes())
    env = {"PATH": "/usr/bin:/bin", "CITELAB_URL": live_server.url, "CITELAB_PROJECT": "judging",
           "CITELAB_TOKEN": secret, "RUN": run, "BASELINE": "nightly-1", "JUDGE": "judge-ci", "MODEL": "fake"}
    return subprocess.run(["sh", "-c", ci_script()], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)


def test_the_readme_ci_script_passes_and_then_fails_a_coverage_drop(project_lead, live_server, tmp_path, settings,
                                                                       monkeypatch):
    """Run nightly-2 = the baseline again: coverage 12/18 both, the gate passes (exit 0). Run
    nightly-3 loses the citations of 2 answers (4 cited claims): coverage 8/18, a drop of
    4/18 = 0.222 > 0.05: curl's --fail-with-body exits 22 and the script with it."""
    _, secret = project_lead
    settings.CITELAB_TASKS_SYNC = True
    with JudgeServer(labels={f"{q} two.": "UNSUPPORTED" for q in QUESTIONS}) as server:
        monkeypatch.setenv("CITELAB_OPENAI_BASE_URL", server.base_url)
        passed = _run_script(live_server, tmp_path, secret, _answers(tmp_path / "a.jsonl", run="nightly-2"),
                             "nightly-2")
        assert passed.returncode == 0, passed.stderr + passed.stdout
        verdict = json.loads(passed.stdout)
        assert verdict["passed"] is True
        assert verdict["values"] == {"coverage": {"run": 12 / 18, "baseline": 12 / 18}}
        judge_run = JudgeRun.objects.get(run__name="nightly-2")
        assert (judge_run.status, judge_run.reviewer.username, judge_run.claims_labeled) == ("done", "judge-ci", 12)
        assert Label.objects.filter(reviewer__username="judge-ci", value="UNSUPPORTED").count() == 6
        scores = json.loads((tmp_path / "score.json").read_text())
        assert (scores["run"], scores["claims"]["claims"], scores["claims"]["cited"]) == ("nightly-2", 18, 12)

        failed = _run_script(live_server, tmp_path, secret,
                             _answers(tmp_path / "b.jsonl", run="nightly-3", uncite=2), "nightly-3")
    assert failed.returncode == 22, failed.stderr + failed.stdout
    verdict = json.loads(failed.stdout)
    assert verdict["passed"] is False
    assert verdict["values"] == {"coverage": {"run": 8 / 18, "baseline": 12 / 18}}
    assert verdict["failures"] == ["coverage: nightly-3 0.4444 vs baseline nightly-1 0.6667: dropped 0.2222 > "
                                   "allowed 0.0500"]

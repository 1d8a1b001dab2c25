"""Every command reads reviewer names as login does (labeling.management.lookup.reviewer_name)."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command, load_command_class

from labeling.importers.load import project_for_import, run_import
from labeling.models import Run
from tests.conftest import FIXTURES_DIR
from tests.factories import ReviewerFactory

# (command, option, the other required arguments)
OPTIONS = [
    ("score", "--reviewer", ["--run", "r"]),
    ("score", "--judge", ["--run", "r"]),
    ("import_labels", "--reviewer", ["f.csv", "--run", "r"]),
    ("snapshot", "--author", ["--run", "r", "--note", "n"]),
    ("agreement", "--reviewer", ["--run", "r"]),
    ("autolabel", "--reviewer", ["--run", "r", "--model", "m"]),
    ("import_verdicts", "--reviewer", ["f.jsonl", "--run", "r"]),
    ("export_labels", "--reviewer", ["-o", "out.csv", "--run", "r"]),
    ("import_gold", "--lead", ["f.csv", "--run", "r"]),
]


@pytest.mark.parametrize(("command", "option", "rest"), OPTIONS)
def test_reviewer_options_take_the_login_form_of_a_name(command, option, rest):
    """Full-width ``ｒｅｖ０１`` (NFKC → ``rev01``) and a zero-width space are read as login reads them."""
    parser = load_command_class("labeling", command).create_parser("manage.py", command)
    options = vars(parser.parse_args([*rest, option, "ｒｅｖ０１\u200b"]))
    value = options[option.lstrip("-")]
    assert (value[0] if isinstance(value, list) else value) == "rev01"


@pytest.mark.django_db
def test_score_reviewer_in_full_width_finds_the_reviewer():
    """The seed run: 5 claims, all cited; rev01 labels 3 SUPPORTED, 1 UNSUPPORTED → 3/4."""
    project = project_for_import(slug="names")
    run_import(project=project, source=FIXTURES_DIR / "seed_coverage_support.jsonl")
    run = Run.objects.get(project=project, name="seed-coverage-support")
    rev01 = ReviewerFactory(username="rev01")
    from labeling.review.label_writes import label_save

    claims = list(run.answers.get().claims.order_by("index"))
    for claim, value in zip(claims, ["SUPPORTED", "SUPPORTED", "SUPPORTED", "UNSUPPORTED"], strict=False):
        label_save(claim=claim, reviewer=rev01, value=value, justification="" if value == "SUPPORTED" else "no",
                   base_revision=claim.revision, base_label_id=None)
    out = io.StringIO()
    call_command("score", "--project", "names", "--run", run.name, "--reviewer", "ｒｅｖ０１", "--format", "json",
                 stdout=out)
    claims = json.loads(out.getvalue())["claims"]
    assert (claims["labeled_cited"], claims["supported"], claims["support"]) == (4, 3, 0.75)

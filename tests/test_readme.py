"""The README's commands table says what the commands are: every management
command of ``labeling`` has a row, every row names a command that exists, and
every option a row lists is one its parser takes. The README's links to the
help pages (``templates/docs/*.md``) and the pages' links to each other lead
to files that exist."""

from __future__ import annotations

import re

import pytest
from django.core.management import get_commands, load_command_class

from tests.conftest import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
DOCS_DIR = REPO_ROOT / "templates" / "docs"
# qcluster is django-q2's worker, listed because the judges need it.
NOT_LABELING = {"qcluster"}


def _section(title: str) -> str:
    """The README's ``## title`` section, up to the next ``## `` heading."""
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def _cells(line: str) -> list[str]:
    """The cells of a Markdown table row; ``\\|`` inside a cell is a pipe, not a border."""
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def commands_table() -> list[tuple[str, list[str]]]:
    """``(command, options)`` per row of the commands table: the command is the
    first word of the first cell; the options are every ``--name`` and ``-o``
    written in the first two cells (``score --all-runs`` lists ``--all-runs``)."""
    rows = [line for line in _section("Commands").splitlines() if line.startswith("| `")]
    table = []
    for line in rows:
        command_cell, options_cell, _what = _cells(line)
        command = re.match(r"`(\w+)", command_cell).group(1)
        options = re.findall(r"(?<![\w-])(--[a-z][a-z-]*|-o)(?![\w-])", command_cell + " " + options_cell)
        table.append((command, options))
    return table


TABLE = commands_table()


def test_the_table_has_a_row_for_every_command_of_labeling_and_no_other():
    """21 commands in labeling/management/commands/, plus qcluster; ``score`` has three
    rows (a run, ``--all-runs``, ``--baseline``)."""
    listed = {command for command, _options in TABLE}
    ours = {name for name, app in get_commands().items() if app == "labeling"}
    assert len(ours) == 21
    assert listed - NOT_LABELING == ours
    assert get_commands()["qcluster"] == "django_q"
    assert [command for command, _options in TABLE].count("score") == 3
    assert len(TABLE) == 24


@pytest.mark.parametrize(("command", "options"), TABLE, ids=[f"{c}-{i}" for i, (c, _o) in enumerate(TABLE)])
def test_every_option_in_a_row_is_one_its_command_takes(command, options):
    parser = load_command_class(get_commands()[command], command).create_parser("manage.py", command)
    taken = {string for action in parser._actions for string in action.option_strings}
    assert [option for option in options if option not in taken] == []


def test_score_all_runs_is_in_the_table():
    assert ("score", ["--all-runs", "--format", "-o", "--reviewer", "--confidence"]) in TABLE


def test_the_two_commands_are_the_ones_ci_runs():
    """The two commands stay as written: CI (.ci/run) runs the test command (quietly), and
    test_security.py runs the demo the try-it command starts."""
    assert _section("Try it (one command)").split("```sh\n", 1)[1].split("\n```", 1)[0] == (
        "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/python manage.py demo")
    test_command = _section("Run the tests (one command)").split("```sh\n", 1)[1].split("\n```", 1)[0]
    assert test_command == "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/pytest"
    ci = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_command.replace("pip install -e", "pip install -q -e") in ci


def test_the_readme_links_every_help_page_and_each_link_leads_to_a_file():
    linked = re.findall(r"\]\((templates/docs/[^)#]+)(?:#[^)]*)?\)", README)
    assert sorted({path for path in linked if not (REPO_ROOT / path).is_file()}) == []
    assert {REPO_ROOT / path for path in linked} == set(DOCS_DIR.glob("*.md"))


def test_links_between_help_pages_lead_to_files():
    """A help page links another as ``name.md`` (GitHub follows it; the app points it at /docs/name/)."""
    broken = [f"{page.name}: {target}" for page in DOCS_DIR.glob("*.md")
              for target in re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", page.read_text(encoding="utf-8"))
              if not (DOCS_DIR / target).is_file()]
    assert broken == []


def test_the_help_pages_are_not_in_the_readme_anymore():
    """The README stays a page a newcomer finishes: the long topics are help pages."""
    headings = re.findall(r"^## (.+)$", README, re.M)
    assert headings == ["Try it (one command)", "Run the tests (one command)", "Commands", "Roles", "Help pages",
                        "Where each rule lives", "Layout"]
    assert len(README.splitlines()) < 200

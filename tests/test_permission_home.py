"""Who may do what has one home, ``labeling/permissions.py`` (SPEC §2 "role"): nowhere
else in ``labeling/`` (the models, which define the roles, aside) compares a role or asks
``is_superuser``, and permissions.py itself reads ``is_superuser`` once. A new twin of
the rule — ``role == Role.LEAD``, ``role in ("lead", "reviewer")``,
``filter(role=Role.LEAD)``, a rank of roles, ``user.is_superuser`` — fails here; ask
``permissions.may``/``may_on_run``/``roles_that_may``/``role_in`` instead.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import labeling
from labeling import permissions
from labeling.models import Role

LABELING_DIR = Path(labeling.__file__).parent
HOME = LABELING_DIR / "permissions.py"
ROLE_WORDS = frozenset(Role.values)  # "lead", "reviewer", "viewer"
QUERY_CALLS = frozenset({"filter", "exclude", "get", "Q", "update", "exists", "count"})


def _names_a_role(node: ast.AST) -> bool:
    """Whether ``node`` is ``Role.X`` (or ``models.Role.X``), a role's name as a literal,
    or a tuple/list/set of them."""
    if isinstance(node, ast.Attribute) and node.attr in Role.names:
        base = node.value
        return (isinstance(base, ast.Name) and base.id == "Role") or (
            isinstance(base, ast.Attribute) and base.attr == "Role")
    if isinstance(node, ast.Constant):
        return node.value in ROLE_WORDS
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_names_a_role(item) for item in node.elts)
    return False


def _call_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def rule_twins(source: str) -> list[tuple[int, str]]:
    """(line, what) for each role comparison or superuser check in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and any(map(_names_a_role, [node.left, *node.comparators])):
            found.append((node.lineno, "compares a role"))
        elif isinstance(node, ast.Dict) and sum(map(_names_a_role, filter(None, node.keys))) >= 2:
            found.append((node.lineno, "a table or rank of roles"))
        elif isinstance(node, ast.Call) and _call_name(node) in QUERY_CALLS:
            found += [(node.lineno, f"queries {kw.arg}") for kw in node.keywords
                      if kw.arg and kw.arg.split("__")[-1] in ("role", "in") and "role" in kw.arg.split("__")
                      and _names_a_role(kw.value)]
        if isinstance(node, ast.Attribute) and node.attr == "is_superuser" and isinstance(node.ctx, ast.Load):
            found.append((node.lineno, "reads is_superuser"))
        elif isinstance(node, ast.keyword) and node.arg and node.arg.startswith("is_superuser"):
            found.append((node.value.lineno, "passes is_superuser"))
    return sorted(found)


def test_the_detector_finds_each_kind_of_twin():
    source = "\n".join([
        "ok = may(role, LEAD)",
        "a = membership.role == Role.LEAD",
        "b = m.role in (Role.LEAD, Role.REVIEWER)",
        "c = role != 'viewer'",
        "d = Membership.objects.filter(reviewer=u, role=models.Role.LEAD)",
        "e = Membership.objects.filter(role__in=[Role.LEAD, Role.REVIEWER])",
        "f = {'viewer': 0, 'reviewer': 1, 'lead': 2}",
        "g = request.user.is_superuser",
        "h = Reviewer.objects.filter(is_superuser=True)",
        "account.is_superuser = False",  # writing the flag (a backup restore) is no check
        "i = create(defaults={'role': Role.LEAD})",  # giving a role is no check either
    ])
    assert rule_twins(source) == [
        (2, "compares a role"), (3, "compares a role"), (4, "compares a role"), (5, "queries role"),
        (6, "queries role__in"), (7, "a table or rank of roles"), (8, "reads is_superuser"),
        (9, "passes is_superuser"),
    ]


def test_no_permission_rule_outside_permissions_py():
    models_dir = LABELING_DIR / "models"
    found = {}
    for path in sorted(LABELING_DIR.rglob("*.py")):
        if path == HOME or models_dir in path.parents or "migrations" in path.parts:
            continue
        if twins := rule_twins(path.read_text(encoding="utf-8")):
            found[str(path.relative_to(LABELING_DIR))] = twins
    assert found == {}


def test_templates_ask_may_not_the_role():
    """Templates show lead tools by ``may_lead`` (set by ``project_for``/``run_for``), never
    by comparing ``my_role``."""
    templates = LABELING_DIR.parent / "templates"
    found = [path.name for path in templates.rglob("*.html") if "my_role ==" in path.read_text(encoding="utf-8")]
    assert found == []


def test_permissions_py_reads_is_superuser_once():
    reads = [node.lineno for node in ast.walk(ast.parse(HOME.read_text(encoding="utf-8")))
             if isinstance(node, ast.Attribute) and node.attr == "is_superuser" and isinstance(node.ctx, ast.Load)]
    assert len(reads) == 1


@pytest.mark.parametrize(("action", "roles"), [
    (permissions.LABEL, ["reviewer", "lead"]),
    (permissions.LEAD, ["lead"]),
    (permissions.QUALITY, ["viewer", "lead"]),
    (permissions.READ, ["viewer", "reviewer", "lead"]),
])
def test_roles_that_may_reads_the_role_table(action, roles):
    assert permissions.roles_that_may(action) == roles


def test_role_order_and_blind_roles():
    """viewer < reviewer < lead; only a reviewer labels a blind run blind (a lead sees
    everything, a viewer does not label)."""
    assert permissions.lower_role("lead", "viewer") == "viewer"
    assert permissions.lower_role("reviewer", "reviewer") == "reviewer"
    assert permissions.higher_role(None, "viewer") == "viewer"
    assert permissions.higher_role("lead", "reviewer") == "lead"
    assert [role for role in (*Role.values, None) if permissions.labels_blind(role)] == ["reviewer"]

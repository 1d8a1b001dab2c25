"""The API's docs page and the tokens page in Chromium under the app's
Content-Security-Policy (SPEC §6): Swagger UI comes from the app's own static
files, lists the operations and, given a token, calls the API; a lead makes a
token on the page, sees it once and revokes it. Any CSP violation or
JavaScript error fails the test (``strict_page``). Screenshots go to
``CITELAB_SCREENSHOTS`` when that is set."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from labeling.integrations.tokens import token_create
from labeling.models import ApiToken, Membership, Role
from tests.e2e.conftest import PASSWORD
from tests.factories import ProjectFactory

pytestmark = pytest.mark.e2e


def _shot(page, name: str) -> None:
    folder = os.environ.get("CITELAB_SCREENSHOTS")
    if folder:
        page.screenshot(path=str(Path(folder) / name), full_page=True)


@pytest.fixture
def team(transactional_db, reviewer):
    """Project ``team`` led by ``reviewer`` (alice)."""
    project = ProjectFactory(slug="team", name="Team")
    Membership.objects.create(project=project, reviewer=reviewer, role=Role.LEAD)
    return project


def test_docs_page_renders_offline_under_the_csp_and_calls_the_api(live_server, strict_page, team, reviewer):
    secret = token_create(project=team, reviewer=reviewer, created_by=None, name="docs").secret
    page = strict_page
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.goto(live_server.url + "/api/v1/docs")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Citelab API")
    expect(page.locator(".opblock-summary-path", has_text="/api/v1/projects/{slug}/runs/{run}/score")).to_be_visible()
    _shot(page, "api-docs.png")
    # Nothing but the app itself: no CDN.
    assert {url.split("/")[2] for url in requested} == {live_server.url.split("/")[2]}
    page.click("button.authorize")
    page.fill(".auth-container input", secret)
    page.click(".auth-btn-wrapper button.authorize")
    page.click(".btn-done")
    operation = page.locator("#operations-projects_and_runs-project_list")
    operation.locator(".opblock-summary").click()
    operation.locator("button.try-out__btn").click()
    operation.locator("button.execute").click()
    expect(operation.locator(".live-responses-table tbody .response-col_status").first).to_contain_text("200")
    expect(operation.locator(".live-responses-table .microlight").first).to_contain_text('"slug": "team"')
    _shot(page, "api-docs-tried.png")


def test_a_lead_makes_a_token_sees_it_once_and_revokes_it(live_server, strict_page, team, reviewer):
    page = strict_page
    page.goto(live_server.url + "/login/")
    page.fill("#id_username", reviewer.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.goto(live_server.url + "/p/team/")
    page.click("text=API tokens")
    page.select_option("#token-reviewer", reviewer.username)
    page.fill("#token-name", "nightly")
    page.click("text=Make token")
    secret = page.locator("#token-secret").inner_text()
    token = ApiToken.objects.get()
    assert secret.startswith("clt_") and token.prefix == secret[:12] and token.name == "nightly"
    _shot(page, "api-tokens.png")
    page.goto(live_server.url + "/p/team/tokens/")
    expect(page.locator("#token-secret")).to_have_count(0)
    page.locator(f"#token-{token.pk} button", has_text="Revoke").click()
    expect(page.locator(f"#token-{token.pk}")).to_have_class("token-revoked")
    token.refresh_from_db()
    assert token.revoked_by == reviewer


def test_a_lead_registers_a_webhook_and_sees_its_test_delivery(live_server, strict_page, team, reviewer, settings):
    from tests.test_webhooks import Receiver

    settings.CITELAB_TASKS_SYNC = True
    settings.CITELAB_WEBHOOK_ALLOW = ["127.0.0.1/32"]
    page = strict_page
    page.goto(live_server.url + "/login/")
    page.fill("#id_username", reviewer.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    with Receiver() as receiver:
        page.goto(live_server.url + "/p/team/")
        page.click("text=Webhooks")
        page.fill("#webhook-url", receiver.url)
        page.check("input[value='label.saved']")
        page.check("input[value='gate.failed']")
        # The button: "text=Register" also matches the "Register a webhook" heading, which comes first.
        page.get_by_role("button", name="Register", exact=True).click()
        expect(page.locator(".message.success")).to_contain_text("registered for gate.failed, label.saved")
        page.click("text=Send a test delivery")
        expect(page.locator("table.deliveries tbody tr").first).to_contain_text("Delivered")
        _shot(page, "webhooks.png")
    assert len(receiver.accepted) == 1 and b'"event":"webhook.test"' in receiver.accepted[0]

"""URL routes of Citelab."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, register_converter

from labeling.api.main import api
from labeling.views import agreement as agreement_views
from labeling.views import audit as audit_views
from labeling.views import auth as auth_view
from labeling.views import compare as compare_views
from labeling.views import docs as docs_views
from labeling.views import judges as judge_views
from labeling.views import label_tables as label_table_views
from labeling.views import members as member_views
from labeling.views import projects, review_edits, sso
from labeling.views import quality as quality_views
from labeling.views import review as review_views
from labeling.views import runs as run_views
from labeling.views import samples as sample_views
from labeling.views import tokens as token_views
from labeling.views import webhooks as webhook_views
from labeling.views.forms import LoginForm
from labeling.views.params import IdConverter

register_converter(IdConverter, "id")

# Everything under one run: p/<project_slug>/runs/<run_name>/…
run_urlpatterns = [
    path("", projects.run_detail, name="run_detail"),
    path("rename/", run_views.run_rename_view, name="run_rename"),
    path("delete/", run_views.run_delete_view, name="run_delete"),
    # Labeling screen
    path("next/", review_views.run_next, name="run_next"),
    path("progress/", review_views.run_progress, name="run_progress"),
    path("scatter/", projects.run_scatter, name="run_scatter"),
    path("summary/", projects.run_summary, name="run_summary"),
    path("gold/", projects.run_gold, name="run_gold"),
    path("agreement/", agreement_views.run_agreement_page, name="run_agreement"),
    # Automated labelers (judges): the run page's panel, starting a judge run, one judge's grading
    path("judges/", judge_views.run_judges_panel, name="run_judges"),
    path("judge-runs/start/", judge_views.judge_run_start, name="judge_run_start"),
    path("judge-runs/promote/", judge_views.run_judge_promote_view, name="run_judge_promote"),
    path("judge-runs/queue-order/", judge_views.run_queue_judge_view, name="run_queue_judge"),
    path("judges/<str:judge_name>/", judge_views.judge_grade_page, name="judge_grade"),
    # The probability sample and the judge-assisted estimates (SPEC §4.6)
    path("sample/", sample_views.run_sample_panel, name="run_sample"),
    path("sample/draw/", sample_views.run_sample_draw, name="run_sample_draw"),
    path("sample/target/", sample_views.run_sample_target, name="run_sample_target"),
    # Team: who works on the run, and the lead's adjudication of disputed claims
    path("reviewers/", member_views.run_reviewers, name="run_reviewers"),
    path("adjudicate/", member_views.run_adjudicate, name="run_adjudicate"),
    path("audit/", audit_views.run_audit, name="run_audit"),
    # Reviewer quality (SPEC §4.4): the dashboard, gold checks, a lead's gold mark and send-back, a reply
    path("dashboard/", quality_views.run_dashboard, name="run_dashboard"),
    path("gold-checks/", quality_views.run_gold_checks, name="run_gold_checks"),
    path("claims/<id:claim_id>/gold/", quality_views.claim_gold, name="claim_gold"),
    path("claims/<id:claim_id>/send-back/", quality_views.claim_send_back, name="claim_send_back"),
    path("claims/<id:claim_id>/reply/", review_views.claim_reply, name="claim_reply"),
    path("undo/", review_views.label_undo, name="label_undo"),
    path("answers/<id:answer_id>/", review_views.answer_review, name="answer_review"),
    path("claims/<id:claim_id>/label/", review_views.claim_label, name="claim_label"),
    path("claims/<id:claim_id>/next/", review_views.claim_next, name="claim_next"),
    path("claims/<id:claim_id>/judge/", review_views.claim_judge, name="claim_judge"),
    path("claims/<id:claim_id>/factual/", review_views.claim_factual, name="claim_factual"),
    path("claims/<id:claim_id>/split/", review_edits.claim_split, name="claim_split"),
    path("claims/<id:claim_id>/merge/", review_edits.claim_merge, name="claim_merge"),
    path("claims/<id:claim_id>/edit/", review_edits.claim_edit, name="claim_edit"),
    # Label table versions, exports and imports
    path("versions/", label_table_views.version_list, name="version_list"),
    path("versions/new/", label_table_views.version_create, name="version_create"),
    path("versions/diff/", label_table_views.version_diff_page, name="version_diff"),
    path("versions/<id:number>.jsonl", label_table_views.version_file, name="version_file"),
    path("labels/export/", label_table_views.label_export, name="label_export"),
    path("labels/import/", label_table_views.label_import, name="label_import"),
    path("labels/import/apply/", label_table_views.label_import_apply, name="label_import_apply"),
]

urlpatterns = [
    path("admin/", admin.site.urls),
    # The HTTP API (SPEC §6): /api/v1/openapi.json, /api/v1/docs, and the routes of labeling.api.
    path("api/v1/", api.urls),
    path("login/", auth_view.LoginView.as_view(authentication_form=LoginForm), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # Single sign-on (labeling.integrations.sso): 404 unless CITELAB_OIDC_CLIENT_ID is set.
    path("sso/login/", sso.sso_login, name="sso_login"),
    path("sso/callback/", sso.sso_callback, name="sso_callback"),
    # The help pages (templates/docs/*.md): open to everyone, they hold no project's data.
    path("docs/", docs_views.docs_index, name="docs_index"),
    path("docs/<slug:name>/", docs_views.docs_page, name="docs_page"),
    path("", projects.project_list, name="project_list"),
    path("p/<slug:project_slug>/", projects.project_detail, name="project_detail"),
    path("p/<slug:project_slug>/members/", member_views.project_members, name="project_members"),
    path("p/<slug:project_slug>/tokens/", token_views.project_tokens_page, name="project_tokens"),
    path("p/<slug:project_slug>/tokens/<id:token_id>/revoke/", token_views.project_token_revoke,
         name="project_token_revoke"),
    path("p/<slug:project_slug>/webhooks/", webhook_views.project_webhooks, name="project_webhooks"),
    path("p/<slug:project_slug>/webhooks/<id:hook_id>/test/", webhook_views.project_webhook_test,
         name="project_webhook_test"),
    path("p/<slug:project_slug>/webhooks/<id:hook_id>/delete/", webhook_views.project_webhook_delete,
         name="project_webhook_delete"),
    path("p/<slug:project_slug>/settings/", member_views.project_settings, name="project_settings"),
    path("p/<slug:project_slug>/summary/", projects.project_summary, name="project_summary"),
    path("p/<slug:project_slug>/guidelines/", quality_views.project_guidelines, name="project_guidelines"),
    path("p/<slug:project_slug>/dashboard/", quality_views.project_dashboard, name="project_dashboard"),
    path("p/<slug:project_slug>/runs/<str:run_name>/", include(run_urlpatterns)),
    path("p/<slug:project_slug>/compare/", compare_views.run_compare, name="run_compare"),
    path("p/<slug:project_slug>/compare.xlsx", compare_views.run_compare_xlsx, name="run_compare_xlsx"),
]

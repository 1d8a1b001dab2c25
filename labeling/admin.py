"""Admin pages for every model.

Labels, claims, citations and label table versions are view only here.
Labels and claims change only through ``labeling.review`` and ``labeling.runs`` (label history,
claim revisions and stale labels, SPEC §3); an edit or delete in the admin
would rewrite a label in place and bypass all three. Versions are immutable
artifacts.
"""

from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.auth.admin import UserAdmin
from django.http import HttpRequest

from labeling import models, permissions
from labeling.runs import claims_changed, labels_changed


class ViewOnly:
    """No add, change or delete in the admin: the model's writes go through services."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class MovesFigures:
    """An admin edit of what the runs' figures read (a reviewer's kind: whose labels count; a
    question's gold or answerability; an answer and its passages) moves the label state
    and claims version of every run it touches (``labeling.scores.figure_cache``), as the
    app's own writers do: a figure kept before the edit is never served after it.
    Each admin using it defines ``runs_of(obj)``: the ids of those runs."""

    def _moved(self, run_ids: list[int]) -> None:
        for pk in sorted(set(run_ids)):
            claims_changed(run=pk)
            labels_changed(run=pk)

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        # An answer moved to another run moves both (kept on the request: one ModelAdmin serves every thread).
        request.citelab_runs_before = self.runs_of(obj) if change and obj.pk else []
        super().save_model(request, obj, form, change)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)  # inlines: gold, passages
        self._moved(getattr(request, "citelab_runs_before", []) + self.runs_of(form.instance))

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        runs = self.runs_of(obj)
        super().delete_model(request, obj)
        self._moved([pk for pk in runs if models.Run.objects.filter(pk=pk).exists()])


@admin.register(models.Reviewer)
class ReviewerAdmin(MovesFigures, UserAdmin):
    list_display = ["username", "kind", "email", "is_staff", "is_active"]
    list_filter = ["kind", "is_staff", "is_active"]
    fieldsets = UserAdmin.fieldsets + (("Citelab", {"fields": ["kind"]}),)
    add_fieldsets = UserAdmin.add_fieldsets + (("Citelab", {"fields": ["kind"]}),)

    def runs_of(self, obj: models.Reviewer) -> list[int]:
        # The runs this reviewer labeled or judged: their kind decides whether those count (SPEC §4.4).
        labeled = models.Label.objects.filter(reviewer=obj).values_list("claim__answer__run_id", flat=True)
        judged = models.CitationJudgment.objects.filter(reviewer=obj).values_list(
            "citation__claim__answer__run_id", flat=True)
        return list(labeled.distinct()) + list(judged.distinct())


class MembershipInline(admin.TabularInline):
    """Members with their role; the project's members page also keeps the last lead."""

    model = models.Membership
    extra = 0
    autocomplete_fields = ["reviewer"]


@admin.register(models.Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "require_justification_for_supported", "judge_citations", "created_at"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]


class GoldPassageIdInline(admin.TabularInline):
    model = models.GoldPassageId
    extra = 0


class GoldReferenceInline(admin.TabularInline):
    model = models.GoldReference
    extra = 0


class ExpectedSourceInline(admin.TabularInline):
    model = models.ExpectedSource
    extra = 0


@admin.register(models.Question)
class QuestionAdmin(MovesFigures, admin.ModelAdmin):
    list_display = ["question_id", "project", "answerable"]
    list_filter = ["project", "answerable"]
    search_fields = ["question_id", "text"]
    inlines = [GoldPassageIdInline, GoldReferenceInline, ExpectedSourceInline]

    def get_readonly_fields(self, request: HttpRequest, obj: models.Question | None = None) -> list[str]:
        # A question id is how runs, imports and label tables meet the question (SPEC §2): fixed once created.
        return ["question_id"] if obj is not None else []

    def runs_of(self, obj: models.Question) -> list[int]:
        return list(models.Answer.objects.filter(question=obj).values_list("run_id", flat=True))


class ProvenanceInline(ViewOnly, admin.StackedInline):
    """Where an imported dataset's run came from (``import_dataset`` writes it)."""

    model = models.Provenance
    fields = ["source", "url", "commit", "licence", "format", "files", "note", "imported_at"]
    readonly_fields = fields


@admin.register(models.Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "overlap", "created_at"]
    list_filter = ["project"]
    # Overlap, blind labeling and assignment are set on the run's Reviewers page (leads), which checks them.
    exclude = ["overlap", "blind"]

    def get_inlines(self, request: HttpRequest, obj: models.Run | None) -> list:
        # A run being added has no provenance (import_dataset records it): no formset to post.
        return [ProvenanceInline] if obj is not None else []


class PassageInline(admin.TabularInline):
    model = models.Passage
    extra = 0


class AnswerAdminForm(forms.ModelForm):
    class Meta:
        model = models.Answer
        fields = ["run", "question", "text", "content_hash"]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        run, question = data.get("run"), data.get("question")
        if run is not None and question is not None and run.project_id != question.project_id:
            raise forms.ValidationError(
                f"Question {question.question_id!r} belongs to another project than run {run.name!r}: "
                "an answer answers a question of its run's project.")
        return data


@admin.register(models.Answer)
class AnswerAdmin(MovesFigures, admin.ModelAdmin):
    form = AnswerAdminForm
    list_display = ["id", "run", "question"]
    list_filter = ["run__project", "run"]
    list_select_related = ["run", "question"]
    search_fields = ["question__question_id", "text"]
    raw_id_fields = ["run", "question"]
    inlines = [PassageInline]

    def save_model(self, request: HttpRequest, obj: models.Answer, form: Any, change: bool) -> None:
        # The run's order key is a copy of the question id (models.Answer).
        obj.question_key = obj.question.question_id
        super().save_model(request, obj, form, change)

    def runs_of(self, obj: models.Answer) -> list[int]:
        return list(models.Answer.objects.filter(pk=obj.pk).values_list("run_id", flat=True)) + (
            [obj.run_id] if obj.run_id else [])


class CitationInline(ViewOnly, admin.TabularInline):
    model = models.Citation
    extra = 0
    raw_id_fields = ["passage"]


@admin.register(models.Claim)
class ClaimAdmin(ViewOnly, admin.ModelAdmin):
    list_display = ["id", "answer", "index", "text", "revision", "factual"]
    list_filter = ["factual"]
    list_select_related = ["answer__run", "answer__question"]
    search_fields = ["text"]
    raw_id_fields = ["answer"]
    inlines = [CitationInline]


@admin.register(models.Label)
class LabelAdmin(ViewOnly, admin.ModelAdmin):
    list_display = ["id", "claim", "reviewer", "value", "is_current", "is_stale", "created_at"]
    list_filter = ["value", "is_current", "is_stale", "reviewer"]
    list_select_related = ["claim", "reviewer"]
    raw_id_fields = ["claim", "reviewer"]

    def get_queryset(self, request: HttpRequest) -> Any:
        # Blind labeling holds here too: staff who are not superusers see their own labels and
        # those of projects they lead, never a fellow reviewer's on a run they label blind.
        return permissions.admin_rows(super().get_queryset(request), user=request.user,
                                      project="claim__answer__run__project_id", own="reviewer")


@admin.register(models.CitationJudgment)
class CitationJudgmentAdmin(ViewOnly, admin.ModelAdmin):
    """Judgments are written on the review page or imported (SPEC §4.3b): read only here,
    with the visibility of labels (blind labeling holds in the admin too)."""

    list_display = ["id", "citation", "reviewer", "judgment", "is_current", "is_stale", "created_at"]
    list_filter = ["judgment", "is_current", "is_stale"]
    list_select_related = ["citation", "reviewer"]
    raw_id_fields = ["citation", "reviewer"]
    search_fields = ["evidence"]

    def get_queryset(self, request: HttpRequest) -> Any:
        return permissions.admin_rows(super().get_queryset(request), user=request.user,
                                      project="citation__claim__answer__run__project_id", own="reviewer")


@admin.register(models.LabelTableVersion)
class LabelTableVersionAdmin(ViewOnly, admin.ModelAdmin):
    list_display = ["run", "number", "author", "created_at", "row_count", "label_count", "sha256"]
    list_select_related = ["run", "author"]


@admin.register(models.AuditEvent)
class AuditEventAdmin(ViewOnly, admin.ModelAdmin):
    """The audit log, read only: an entry is written with the change it records and never edited."""

    list_display = ["at", "actor_name", "action", "project", "run_name", "target"]
    list_filter = ["action", "project"]
    search_fields = ["actor_name", "run_name", "target"]
    list_select_related = ["project"]
    date_hierarchy = "at"
    raw_id_fields = ["actor", "run"]

    def get_queryset(self, request: HttpRequest) -> Any:
        # As the run's audit page: staff who are not superusers see the log of projects they lead.
        return permissions.admin_rows(super().get_queryset(request), user=request.user, project="project_id")

"""Run comparison page and its xlsx download (SPEC §5)."""

from __future__ import annotations

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.http import content_disposition_header
from django.utils.text import get_valid_filename, slugify
from django.views.decorators.http import require_GET

from labeling import permissions
from labeling.models import Project, Run
from labeling.scores.charts import scatter_chart
from labeling.tables.comparison import (
    NO_SHARED_QUESTIONS,
    RunComparison,
    comparison_xlsx,
    delta_class,
    display_minus,
    interval_label,
    noise_verdict,
    run_comparison,
)
from labeling.views.htmx import HtmxHttpRequest, page_or_partial
from labeling.views.projects import blind_refusal, project_for
from scoring.compare import DEFAULT_THRESHOLD

XLSX_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


class CompareForm(forms.Form):
    a = forms.ChoiceField(label="Run A (before)")
    b = forms.ChoiceField(label="Run B (after)")
    threshold = forms.FloatField(
        label="Alignment threshold", min_value=0.01, max_value=1.0, initial=DEFAULT_THRESHOLD,
        help_text="Claims whose text differs pair up when their similarity is at least this (0–1).",
        widget=forms.NumberInput(attrs={"step": "0.01"}),
    )

    def __init__(self, *args, runs: list[Run], **kwargs):
        super().__init__(*args, **kwargs)
        choices = [(run.name, run.name) for run in runs]
        self.fields["a"].choices = choices
        self.fields["b"].choices = choices

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("a") and cleaned.get("a") == cleaned.get("b"):
            raise ValidationError("Choose two different runs.")
        return cleaned


def _comparison_from(request: HttpRequest, project: Project) -> tuple[CompareForm, RunComparison | None, str]:
    """The form, the comparison when the form is valid, and the reason there is
    nothing to compare (``""`` unless the runs share no question)."""
    runs = list(Run.objects.filter(project=project).select_related("project").order_by("created_at", "name"))
    if {"a", "b"} <= set(request.GET):
        data = request.GET.copy()
        # A link naming only the runs (?a=…&b=…) compares at the default threshold.
        if not data.get("threshold"):
            data["threshold"] = str(DEFAULT_THRESHOLD)
        form = CompareForm(data, runs=runs)
    else:
        # Unbound: preselect the two newest runs, older as A; ``?b=NAME`` (the
        # run page's Compare button) picks B and the run before it as A.
        names = [run.name for run in runs]
        initial = {"threshold": DEFAULT_THRESHOLD}
        if len(runs) >= 2:
            initial |= {"a": names[-2], "b": names[-1]}
        chosen = request.GET.get("b")
        if chosen in names and len(runs) >= 2:
            position = names.index(chosen)
            initial |= {"b": chosen, "a": names[position - 1] if position else names[1]}
        form = CompareForm(initial=initial, runs=runs)
    if not form.is_bound or not form.is_valid():
        return form, None, ""
    by_name = {run.name: run for run in runs}
    for name in (form.cleaned_data["a"], form.cleaned_data["b"]):
        if permissions.blind_for(by_name[name], role=project.my_role):
            raise PermissionDenied(blind_refusal(by_name[name]))
    try:
        comparison = run_comparison(
            run_a=by_name[form.cleaned_data["a"]], run_b=by_name[form.cleaned_data["b"]],
            threshold=form.cleaned_data["threshold"],
        )
    except ValidationError as error:
        if getattr(error, "code", None) == NO_SHARED_QUESTIONS:
            # The choices are valid; the runs just have nothing in common.
            return form, None, error.messages[0]
        form.add_error(None, error)
        return form, None, ""
    return form, comparison, ""


@login_required
@require_GET
def run_compare(request: HtmxHttpRequest, project_slug: str) -> HttpResponse:
    project = project_for(request, project_slug)
    form, comparison, nothing_to_compare = _comparison_from(request, project)
    context = {"project": project, "form": form, "comparison": comparison, "nothing_to_compare": nothing_to_compare}
    if comparison is not None:
        result = comparison.result
        context |= {
            "result": result,
            "summary": [
                ({"label": row.label, "a_text": display_minus(row.a_text), "b_text": display_minus(row.b_text),
                  "delta_text": row.delta_text, "difference": row.difference, "verdict": noise_verdict(row),
                  # A wider gap is no better or worse by itself (delta_class): its verdict stays uncoloured.
                  "verdict_class": "changed" if row.key.endswith("gap") else slugify(noise_verdict(row))},
                 delta_class(row.key, row.delta))
                for row in result.summary
            ],
            "interval_label": interval_label(result.confidence),
            "headline": [(row.label, row.delta_text, row.difference, noise_verdict(row)) for row in result.summary
                         if row.key in ("coverage", "support")],
            "counts": result.counts(),
            "per_question": comparison.per_question_rows(),
            "label_flips": comparison.claim_rows("label_flips"),
            "citation_changes": comparison.claim_rows("citation_changes"),
            "added": comparison.claim_rows("added"),
            "removed": comparison.claim_rows("removed"),
            "scatter_a": scatter_chart(comparison.scatter_rows("a"), answer_url=comparison.url_a,
                                       caption=f"A: {comparison.run_a.name}"),
            "scatter_b": scatter_chart(comparison.scatter_rows("b"), answer_url=comparison.url_b,
                                       caption=f"B: {comparison.run_b.name}"),
            "query": request.GET.urlencode(),
        }
    return page_or_partial(request, "labeling/compare.html", "comparison-results", context)


@login_required
@require_GET
def run_compare_xlsx(request: HttpRequest, project_slug: str) -> HttpResponse:
    project = project_for(request, project_slug)
    form, comparison, nothing_to_compare = _comparison_from(request, project)
    if comparison is None:
        return render(request, "labeling/compare.html", {"project": project, "form": form, "comparison": None,
                                                         "nothing_to_compare": nothing_to_compare}, status=400)
    filename = get_valid_filename(f"{project.slug}-{comparison.run_a.name}-vs-{comparison.run_b.name}.xlsx")
    response = HttpResponse(comparison_xlsx(comparison), content_type=XLSX_TYPE)
    # RFC 6266: filename*=utf-8''… keeps a run name beyond ASCII readable.
    response["Content-Disposition"] = content_disposition_header(True, filename)
    return response

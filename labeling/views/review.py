"""The answer review page: label a run's claims, split/merge/edit them, undo.

With htmx (``request.htmx``) every action answers with the smallest fragment:
the claim panel plus out-of-band swaps of the answer text and the claim list
(or the whole ``#review`` block when the next claim is in another answer),
and a ``labelSaved`` client event for the run progress bar: with
``{"labeled": n}`` (a label save: +1 or 0; an undo: −1 or 0) the page adds n
to it at once, so a reviewer's label step never recounts the run; without it
(splits, merges, edits) the bar is reloaded from the server, which also
corrects any drift (a label saved in another tab).
Without JavaScript the same URLs take plain form posts and redirect.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db.models import Max
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotFound
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect, push_url, reswap, retarget, trigger_client_event

from labeling import permissions
from labeling.models import Answer, Claim, GoldClaim, Label, LabelValue, Run
from labeling.permissions import LABEL
from labeling.review import citation_judgments as judging
from labeling.review import label_writes, queue, screen, tallies
from labeling.review.neighbours import AnswerNeighbours, answer_neighbours
from labeling.scores import estimates
from labeling.team import guidelines, send_backs
from labeling.views.htmx import HtmxHttpRequest
from labeling.views.params import IdField, int_param
from labeling.views.projects import review_url, run_for

ClaimWriteView = Callable[[HtmxHttpRequest, Run, Claim], HttpResponse]

TEMPLATE = "labeling/answer_review.html"
# (value, key, text) of each citation judgment on the review page (SPEC §4.3b).
JUDGMENT_CHOICES = [("FULL", "f", "Full"), ("PARTIAL", "p", "Partial"), ("NONE", "x", "None"),
                    ("UNJUDGEABLE", "c", "Unjudgeable")]
LABEL_SAVED = "labelSaved"
# Says that a label saved while the page showed the next claim it held ready was taken (claim_next).
ACK_HEADER = "Citelab-Ack"


class LabelForm(forms.Form):
    # The value is checked by label_save, which names the allowed values.
    value = forms.CharField(max_length=32)
    # Its length is checked by label_writes.label_save, with a message that names the limit.
    justification = forms.CharField(required=False)
    # The claim and revision the page showed when the key was pressed: a save is
    # only ever for the claim on screen (the URL names it too; both must agree).
    claim = IdField()
    revision = IdField()
    base_label = IdField(required=False)


def claim_write_view(*methods: str) -> Callable[[ClaimWriteView], Callable[..., HttpResponse]]:
    """A claim-changing view (label, split, merge, edit) on ``methods``: the
    reviewer must be logged in and may label the run (403 otherwise); a claim
    that is not in the run is a plain-text 404 saying nothing was saved. The
    view gets ``(request, run, claim)``."""

    def decorate(view: ClaimWriteView) -> Callable[..., HttpResponse]:
        @login_required
        @require_http_methods(list(methods))
        @wraps(view)
        def wrapped(request: HtmxHttpRequest, project_slug: str, run_name: str, claim_id: int) -> HttpResponse:
            run = run_for(request, project_slug, run_name, LABEL)
            claim = screen.claim_in_run(run=run, claim_id=claim_id)
            if claim is None:
                return HttpResponseNotFound(
                    f"Claim {claim_id} is not a claim of run {run.name!r} in project {run.project.slug!r}: "
                    "nothing was saved.",
                    content_type="text/plain; charset=utf-8",
                )
            return view(request, run, claim)

        return wrapped

    return decorate


def _context(request: HttpRequest, run: Run, answer: Answer, claim_id: int | None, *,
             review: screen.ReviewContext | None = None, **extra: Any) -> dict[str, Any]:
    if review is None:
        # Opened on no claim, the page shows the first of the reviewer's queue there: reserve it.
        review = screen.review_context(answer=answer, reviewer=request.user, claim_id=claim_id,
                                          lease=run.may_label, with_gold=run.may_lead)
    current = review.current
    my_label = current.my_label if current is not None else None
    context = {
        "project": run.project, "run": run, "answer": answer, "question": answer.question, "review": review,
        "current": current, "my_label": my_label,
        # One reverse() for the many claim links of the answer text, claim list and panel.
        "answer_url": review_url(run, answer.pk),
        "claim_url": review_url(run, answer.pk, current.claim.pk) if current is not None else "",
        "justification": my_label.justification if my_label is not None else "",
        "require_supported": run.project.require_justification_for_supported,
        "mode": "label", "error": None, "conflict": None, "notice": None,
        "judgment_choices": JUDGMENT_CHOICES, "partials_enough": review.partials_enough,
        "read_only": read_only_reason(run), "feedback": None, "reply_text": "",
        # A lead's tools on the claim (mark it gold, send a label back): never a reviewer's.
        "lead_tools": run.may_lead,
    }
    # The claim's gold label, for the lead's tools (SPEC §4.4): leads only.
    context["current_gold"] = review.current_gold
    context.update(extra)
    if review.judging:
        # What the judging form shows: the reviewer's current judgments, or what they sent when nothing was saved.
        typed, typed_evidence = extra.get("typed_judgments"), extra.get("typed_evidence") or {}
        for view in review.passages:
            mine = view.my_judgment
            view.shown_judgment = (typed.get(view.citation.pk, "") if typed is not None
                                   else mine.judgment if mine is not None else "")
            view.shown_evidence = (typed_evidence.get(view.citation.pk, "") if typed is not None
                                   else mine.evidence if mine is not None else "")
        if "typed_partials_enough" in extra:
            context["partials_enough"] = extra["typed_partials_enough"]
    return context


def read_only_reason(run: Run) -> str:
    """Why the review page of ``run`` is read-only for this user (``run_for`` read their
    role), or ``""`` when they may label there: a viewer, or a reviewer not assigned to
    the run, sees the claims, passages and labels without a control that writes."""
    if run.may_label:
        return ""
    if not permissions.may(run.my_role, LABEL):
        return (f"Read-only: your role in project {run.project.slug} is {run.my_role}. You see the claims, "
                "their passages and labels; a lead of the project can make you a reviewer.")
    return (f"Read-only: you are not assigned to run {run.name}. A lead of project {run.project.slug} "
            "assigns the reviewers of each run.")


def _page(request: HttpRequest, context: dict[str, Any]) -> HttpResponse:
    run: Run = context["run"]
    answer: Answer = context["answer"]
    if not context["read_only"]:
        context["progress"] = tallies.run_progress(run=run, reviewer=request.user)
    context["neighbours"] = answer_neighbours(answer=answer)
    context["target_reached"] = _target_reached(run, context["neighbours"])
    # The project's guidelines behind the g key and in the ? help (SPEC §4.4): the page's
    # dialogs are outside #review, so fragments never carry them again.
    current = guidelines.guidelines_current(project=run.project_id)
    context["guidelines"] = current
    context["guidelines_html"] = guidelines.render_guidelines(current.text) if current is not None else ""
    return render(request, TEMPLATE, context)


def _target_reached(run: Run, neighbours: AnswerNeighbours) -> bool | None:
    """The queue's "target reached" (SPEC §4.6), only asked when a lead set a target."""
    return estimates.target_reached(run) if neighbours.sample_target is not None else None


def _fragment(request: HtmxHttpRequest, context: dict[str, Any], *, whole_review: bool) -> HttpResponse:
    """The claim panel with out-of-band answer text and claim list (partial
    ``claim-swap``), or (when the answer changed) the whole ``#review`` block
    retargeted, led by the new ``<title>`` and followed by the breadcrumb's
    question out of band (``review-swap``; the template says why the title leads)."""
    if whole_review:
        context["neighbours"] = answer_neighbours(answer=context["answer"])
        context["target_reached"] = _target_reached(context["run"], context["neighbours"])
        return reswap(retarget(render(request, f"{TEMPLATE}#review-swap", context), "#review"), "outerHTML")
    return render(request, f"{TEMPLATE}#claim-swap", context)


def show_review(request: HtmxHttpRequest, run: Run, answer: Answer, claim_id: int | None, *, came_from: int | None,
                saved: bool = False, labeled: int | None = None, **extra: Any) -> HttpResponse:
    """Respond with the review of ``answer`` on ``claim_id``: a fragment for htmx
    (``came_from`` is the answer the page showed), else the full page. ``saved``
    sends ``labelSaved``, with ``{"labeled": labeled}`` when that is known."""
    context = _context(request, run, answer, claim_id, **extra)
    if not request.htmx:
        return _page(request, context)
    response = _fragment(request, context, whole_review=came_from != answer.pk)
    current = context["current"]
    push_url(response, review_url(run, answer.pk, current.claim.pk if current is not None else None))
    if saved:
        trigger_client_event(response, LABEL_SAVED, {"labeled": labeled} if labeled is not None else None)
    return response


def after_write(request: HtmxHttpRequest, run: Run, claim: Claim, *, show: Claim | None, notice: str,
                saved: bool = True, labeled: int | None = None, **extra: Any) -> HttpResponse:
    """After a successful write: show ``show`` (or ``claim``) with ``notice``;
    without JS, redirect there with the notice as a message."""
    target = show or claim
    if not request.htmx:
        messages.success(request, notice)
        return redirect(review_url(run, target.answer_id, target.pk))
    return show_review(request, run, _answer_of(run, target), target.pk, came_from=claim.answer_id, saved=saved,
                       labeled=labeled, notice=notice, **extra)


def conflicted(response: HttpResponse, error: ValidationError | None = None) -> HttpResponse:
    """``response`` (the review with the conflict's message) as 409 Conflict
    when ``error`` is a conflict (the claim or label changed since the page
    was rendered) or is not given; other errors keep their status. htmx swaps
    a 409 like a 200 (static/js/app.js), so the reviewer reads why."""
    if error is None or error.code == "conflict":
        response.status_code = 409
    return response


def _answer_of(run: Run, claim: Claim) -> Answer:
    """The claim's answer with its question: the one already loaded (claim_in_run,
    next_unlabeled_claim), else one query."""
    if Claim.answer.is_cached(claim) and Answer.question.is_cached(claim.answer):
        claim.answer.run = run
        return claim.answer
    return screen.review_answer(run=run, answer_id=claim.answer_id)


def _came_from(request: HttpRequest, default: int) -> int:
    return int_param(request.POST.get("answer")) or default


@login_required
@require_GET
def answer_review(request: HtmxHttpRequest, project_slug: str, run_name: str, answer_id: int) -> HttpResponse:
    run = run_for(request, project_slug, run_name)
    answer = screen.review_answer(run=run, answer_id=answer_id)
    if answer is None:
        raise Http404(f"Run {run.name!r} has no answer {answer_id}")
    claim_id = int_param(request.GET.get("claim"))
    if request.htmx and request.htmx.target == "claim-panel":
        return show_review(request, run, answer, claim_id, came_from=answer.pk)
    if request.htmx:
        return show_review(request, run, answer, claim_id, came_from=None)
    return _page(request, _context(request, run, answer, claim_id))


@login_required
@require_GET
def run_next(request: HtmxHttpRequest, project_slug: str, run_name: str) -> HttpResponse:
    """Go to the reviewer's next unlabeled claim in the run ("Start labeling", key
    ``n``): with htmx, swap it in like a save does; else redirect to it."""
    run = run_for(request, project_slug, run_name)
    if not permissions.may(run.my_role, LABEL):
        # A viewer has no queue: the run page, saying why (no labeling screen to start).
        messages.info(request, read_only_reason(run))
        if request.htmx:
            return HttpResponseClientRedirect(run.get_absolute_url())
        return redirect(run.get_absolute_url())
    after_id = int_param(request.GET.get("after"))
    after = screen.claim_in_run(run=run, claim_id=after_id) if after_id is not None else None
    claim = queue.next_unlabeled_claim(run=run, reviewer=request.user, after=after, lease=True)
    if claim is None:
        notice = f"Every cited claim of run {run.name} carries your label: nothing left to do."
        if not run.works_on:
            notice = (f"You are not assigned to run {run.name}: nothing is in your queue there. A lead of the "
                      "project assigns its reviewers.")
        elif run.overlap > 1:
            notice = (f"Every cited claim of run {run.name} carries your label or already has its "
                      f"{run.overlap} reviewers: nothing left to do.")
        if request.htmx and after is not None:
            return show_review(request, run, after.answer, after.pk, came_from=after.answer_id, notice=notice)
        messages.success(request, notice)
        if request.htmx:
            # The claim the page showed is gone (merged in another tab): leave the page, do not swap a page in.
            return HttpResponseClientRedirect(run.get_absolute_url())
        return redirect(run.get_absolute_url())
    if not request.htmx:
        return redirect(review_url(run, claim.answer_id, claim.pk))
    return show_review(request, run, _answer_of(run, claim), claim.pk,
                       came_from=after.answer_id if after is not None else None)


@login_required
@require_GET
def run_progress(request: HttpRequest, project_slug: str, run_name: str) -> HttpResponse:
    run = run_for(request, project_slug, run_name)
    context = {"project": run.project, "run": run,
               "progress": tallies.run_progress(run=run, reviewer=request.user)}
    return render(request, f"{TEMPLATE}#run-progress", context)


@claim_write_view("POST")
def claim_label(request: HtmxHttpRequest, run: Run, claim: Claim) -> HttpResponse:
    form = LabelForm(request.POST)
    typed = request.POST.get("justification", "")

    def again(**extra: Any) -> HttpResponse:
        # The same claim again, with what the reviewer typed and why nothing was saved.
        return show_review(request, run, claim.answer, claim.pk, came_from=claim.answer_id, justification=typed,
                           **extra)

    if not form.is_valid():
        missing = ", ".join(sorted(form.errors))
        return again(error=f"The label form came back incomplete ({missing}): nothing was saved. "
                           "Reload the page and try again.")
    data = form.cleaned_data
    if data["claim"] != claim.pk:
        return again(error=f"This label form was for claim id {data['claim']}, not the claim shown here: "
                           "nothing was saved. Check the claim and label it again.")
    try:
        label = label_writes.label_save(
            claim=claim, reviewer=request.user, value=data["value"], justification=data["justification"],
            base_revision=data["revision"], base_label_id=data["base_label"],
        )
    except label_writes.LabelConflict as exc:
        # The form comes back armed with the label the reviewer chose, beside their
        # text: saving again saves exactly that, over the newer label.
        return conflicted(again(conflict={"message": exc.messages[0], "newer": exc.newer}, armed=data["value"]))
    except ValidationError as exc:
        return again(error=exc.messages[0], armed=data["value"])
    return _after_label(request, run, claim, label, first=data["base_label"] is None)


def _after_label(request: HtmxHttpRequest, run: Run, claim: Claim, label: Any, *, first: bool) -> HttpResponse:
    """After a label was saved on ``claim`` (``first``: the reviewer had none): the next
    claim to label in the answer, else the next answer with work left."""
    notice = f"Saved {label.value} on claim {claim.index}."
    # How far the run progress bar moves: a first label on this (cited) claim adds one.
    labeled = 1 if first else 0
    # Feedback mode (SPEC §4.4): after a gold claim, its gold label and the lead's reason.
    feedback = gold_feedback(run, claim, label)
    if feedback is not None and not request.htmx:
        messages.info(request, feedback["text"])
    # Most saves move on within the answer: the queue (its one home of the order)
    # names the next claim, and its review follows. The form's more_in_answer says
    # what the page knew: "0" = no claim after this one was left, so skip the look
    # (a claim another tab brought back into the queue meanwhile is reached when
    # the queue wraps around). Only a hint: any other value, or none, means look.
    # The queue reserves the claim it hands out (a lease, labeling.review.queue), so
    # reviewers working at once are never handed the same claim beyond its overlap.
    following = None
    if request.POST.get("more_in_answer") != "0":
        following = queue.next_claim_in_answer(run=run, reviewer=request.user, after=claim, lease=True)
    if following is None:
        following = queue.claim_in_next_answers(run=run, reviewer=request.user, after=claim.answer, lease=True)
    # The page showed the next claim it held ready (claim_next) while this saved: when the queue
    # hands out that very claim, unchanged, the page keeps it and takes the rest out of band.
    if following is not None and following.answer_id != claim.answer_id:
        # Not "the last one there": a gold check due elsewhere also moves on with claims left
        # here, and nothing may tell a check from any other claim (labeling.review.queue).
        notice = (f"Saved {label.value} on claim {claim.index} of {claim.answer.question.question_id}: "
                  f"your queue goes on in this answer.")
    shown_ahead = int_param(request.POST.get("prefetched")) if request.htmx else None
    moved_on = ""
    if shown_ahead is not None:
        if (following is not None and following.pk == shown_ahead
                and request.POST.get("prefetched_state") == ahead_state(run, following)):
            return _acknowledged(request, run, claim, following, notice=notice, labeled=labeled, feedback=feedback)
        # Neutral on purpose: a gold check coming due also changes the claim handed out, and
        # nothing may tell a check from any other claim (labeling.review.queue).
        moved_on = (" The claim shown while it saved is no longer the next one in your queue (another reviewer "
                    "may have taken it, or it changed): this is the next one.")
    if following is not None and following.answer_id == claim.answer_id:
        review = screen.review_context(answer=claim.answer, reviewer=request.user, claim_id=following.pk,
                                          with_gold=run.may_lead)
        if not request.htmx:
            messages.success(request, notice)
            return redirect(review_url(run, claim.answer_id, following.pk))
        response = _fragment(request, _context(request, run, claim.answer, None, review=review,
                                               notice=notice + moved_on, feedback=feedback), whole_review=False)
        push_url(response, review_url(run, claim.answer_id, following.pk))
        return trigger_client_event(response, LABEL_SAVED, {"labeled": labeled})
    # Else the next answer with work left, on its first claim to label.
    if following is None:
        notice += (" Every cited claim of this run now carries your label." if run.overlap == 1 else
                   f" Nothing is left in your queue: every cited claim of this run carries your label or has "
                   f"its {run.overlap} reviewers.")
        notice += moved_on
        return after_write(request, run, claim, show=None, notice=notice, labeled=labeled, feedback=feedback)
    answer = following.answer
    answer.run = run
    notice += moved_on
    if not request.htmx:
        messages.success(request, notice)
        return redirect(review_url(run, answer.pk, following.pk))
    return show_review(request, run, answer, following.pk, came_from=claim.answer_id, saved=True, labeled=labeled,
                       notice=notice, feedback=feedback)


def _acknowledged(request: HtmxHttpRequest, run: Run, claim: Claim, following: Claim, *, notice: str,
                  labeled: int, feedback: dict[str, Any] | None) -> HttpResponse:
    """The answer to a label saved while the page already showed ``following``, the claim
    the queue handed out after ``claim`` (static/js/app.js put it on screen from
    ``claim_next``): nothing is swapped but the partial ``claim-ack`` out of band (the
    save's notice; in the same answer, its text, claim list, progress and figures with
    ``following`` current), with the header ``Citelab-Ack: <claim id>`` that tells the
    page its claim stays. Two queries fewer than a fragment in another answer; the same
    as one in this answer (the answer's review is read for its claim list)."""
    whole = following.answer_id != claim.answer_id
    if whole:
        answer = _answer_of(run, following)
        context: dict[str, Any] = {"project": run.project, "run": run, "question": answer.question,
                                   "notice": notice, "feedback": feedback, "whole": True}
    else:
        review = screen.review_context(answer=claim.answer, reviewer=request.user, claim_id=following.pk,
                                       with_gold=run.may_lead)
        context = _context(request, run, claim.answer, None, review=review, notice=notice, feedback=feedback)
    response = reswap(render(request, f"{TEMPLATE}#claim-ack", context), "none")
    response[ACK_HEADER] = str(claim.pk)
    push_url(response, review_url(run, following.answer_id, following.pk))
    return trigger_client_event(response, LABEL_SAVED, {"labeled": labeled})


@login_required
@require_GET
def claim_next(request: HtmxHttpRequest, project_slug: str, run_name: str, claim_id: int) -> HttpResponse:
    """The review of the claim the reviewer's queue would hand out once ``claim_id``
    carries their label, for the page to hold ready: static/js/app.js shows it the
    moment a label key is pressed, while the save goes on behind it (``_after_label``
    then checks that the queue hands out that very claim, unchanged, else the page
    gets the claim it does hand out).

    The fragment is the partial ``claim-swap`` (the next claim is in the same answer)
    or ``review-swap`` (another answer), with the headers ``Citelab-Next-Claim``
    (its id), ``Citelab-Next-State`` (``ahead_state``) and ``Citelab-Next-Swap`` (``claim-panel`` or
    ``review``). Nothing is reserved: the save takes the lease. 204 when nothing
    would follow, and on a project that judges citations (its saves go through
    ``claim_judge``). Reviewers and leads who may label the run (403 otherwise); a
    claim not in the run is a 404. The queue's peek (up to five small queries) and
    the answer's review: the queries of a save without the write."""
    run = run_for(request, project_slug, run_name, LABEL)
    claim = screen.claim_in_run(run=run, claim_id=claim_id)
    if claim is None:
        raise Http404(f"Run {run.name!r} has no claim {claim_id}")
    if run.project.judge_citations:
        return HttpResponse(status=204)
    # Counting the claim on screen as labeled, as it is when its save asks the queue (gold pacing).
    following = queue.next_claim_in_answer(run=run, reviewer=request.user, after=claim, ahead=True)
    if following is None:
        following = queue.claim_in_next_answers(run=run, reviewer=request.user, after=claim.answer, skip=claim,
                                                ahead=True)
    if following is None or following.pk == claim.pk:
        return HttpResponse(status=204)
    answer = _answer_of(run, following)
    review = screen.review_context(answer=answer, reviewer=request.user, claim_id=following.pk,
                                   with_gold=run.may_lead)
    context = _context(request, run, answer, None, review=review)
    whole = following.answer_id != claim.answer_id
    if whole:
        context["neighbours"] = answer_neighbours(answer=answer)
        context["target_reached"] = _target_reached(run, context["neighbours"])
    response = render(request, f"{TEMPLATE}#{'review-swap' if whole else 'claim-swap'}", context)
    response["Citelab-Next-Claim"] = str(following.pk)
    response["Citelab-Next-State"] = ahead_state(run, following, newest=max(
        (label.pk for label in review.current.claim.all_labels), default=0))
    response["Citelab-Next-Swap"] = "review" if whole else "claim-panel"
    response["Cache-Control"] = "no-store"
    return response


def ahead_state(run: Run, claim: Claim, *, newest: int | None = None) -> str:
    """What the panel of ``claim`` held ready shows, as a token the save compares
    (``_after_label`` acknowledges only an unchanged one): the claim's revision, the
    run's ``claims_version`` (a split or merge elsewhere in the answer changes the
    claim count and the neighbours) and the newest label on the claim (its label
    history). ``newest``: that label's id when the caller read the claim's labels
    (0 for none); else one query."""
    if newest is None:
        newest = Label.objects.filter(claim_id=claim.pk).aggregate(newest=Max("id"))["newest"] or 0
    return f"{claim.revision}.{run.claims_version}.{newest}"


def gold_feedback(run: Run, claim: Claim, label: Any) -> dict[str, Any] | None:
    """What feedback mode shows after ``label`` was saved on ``claim`` (SPEC §4.4): the
    claim's gold label and the lead's reason, when the run has feedback on and the
    claim is gold; else ``None`` (no query when feedback is off)."""
    if not run.feedback:
        return None
    gold = GoldClaim.objects.filter(claim_id=claim.pk, is_current=True).first()
    if gold is None:
        return None
    agreed = gold.value == label.value
    text = (f"Claim {claim.index} was a gold check: its gold label is {gold.value}"
            f"{', as you said' if agreed else f', you said {label.value}'}. Reason: {gold.reason}")
    return {"claim_index": claim.index, "value": gold.value, "reason": gold.reason, "agreed": agreed,
            "given": label.value, "text": text}


class ReplyForm(forms.Form):
    reply = forms.CharField(max_length=10_000)


@claim_write_view("POST")
def claim_reply(request: HtmxHttpRequest, run: Run, claim: Claim) -> HttpResponse:
    """The reviewer answers a lead's send-back with a reply and keeps their label (SPEC §4.4)."""
    try:
        send_backs.send_back_reply(claim=claim, reviewer=request.user, reply=request.POST.get("reply", ""))
    except ValidationError as exc:
        return show_review(request, run, _answer_of(run, claim), claim.pk,
                           came_from=_came_from(request, claim.answer_id), error=exc.messages[0],
                           reply_text=request.POST.get("reply", ""))
    return after_write(request, run, claim, show=claim, saved=False,
                       notice=f"Replied to the lead about claim {claim.index}: your label stays.")


class JudgeForm(forms.Form):
    # Empty: confirm the label the judgments propose; a value overrules it (with a justification).
    value = forms.CharField(max_length=32, required=False)
    justification = forms.CharField(required=False)
    partials_enough = forms.BooleanField(required=False)
    claim = IdField()
    revision = IdField()
    base_label = IdField(required=False)


@claim_write_view("POST")
def claim_judge(request: HtmxHttpRequest, run: Run, claim: Claim) -> HttpResponse:
    """Judge each citation of the claim and confirm (or overrule) the proposed label (SPEC §4.3b)."""
    form = JudgeForm(request.POST)
    citation_ids = list(claim.citations.order_by("position").values_list("pk", flat=True))
    judgments = {pk: request.POST.get(f"judgment-{pk}", "") for pk in citation_ids}
    evidence = {pk: request.POST.get(f"evidence-{pk}", "") for pk in citation_ids}
    typed = {"justification": request.POST.get("justification", ""), "typed_judgments": judgments,
             "typed_evidence": evidence, "typed_partials_enough": request.POST.get("partials_enough") == "on"}

    def again(**extra: Any) -> HttpResponse:
        return show_review(request, run, claim.answer, claim.pk, came_from=claim.answer_id, **typed, **extra)

    if not form.is_valid() or form.cleaned_data["claim"] != claim.pk:
        return again(error="The judging form came back incomplete or for another claim: nothing was saved. "
                           "Reload the page and try again.")
    data = form.cleaned_data
    try:
        judged = judging.claim_judge(
            claim=claim, reviewer=request.user, judgments=judgments, evidence=evidence,
            partials_enough=data["partials_enough"], value=data["value"] or None,
            justification=data["justification"], base_revision=data["revision"], base_label_id=data["base_label"])
    except label_writes.LabelConflict as exc:
        return conflicted(again(conflict={"message": exc.messages[0], "newer": exc.newer}))
    except ValidationError as exc:
        return again(error=exc.messages[0], armed=data["value"] or None)
    return _after_label(request, run, claim, judged.label, first=data["base_label"] is None)


@claim_write_view("POST")
def claim_factual(request: HtmxHttpRequest, run: Run, claim: Claim) -> HttpResponse:
    """Mark the claim "not a factual claim", or factual again (key ``0``, SPEC §4.3b)."""
    factual = request.POST.get("factual") == "1"
    try:
        changed = judging.claim_set_factual(claim=claim, factual=factual, actor=request.user,
                                            base_revision=int_param(request.POST.get("revision")))
    except ValidationError as exc:
        return conflicted(show_review(request, run, claim.answer, claim.pk, came_from=claim.answer_id,
                                      error=exc.messages[0]), exc)
    notice = (f"Claim {changed.index} is a factual claim again." if changed.factual else
              f"Claim {changed.index} marked not a factual claim: it leaves every count (0 undoes).")
    return after_write(request, run, changed, show=changed, notice=notice)


@login_required
@require_POST
def label_undo(request: HtmxHttpRequest, project_slug: str, run_name: str) -> HttpResponse:
    """Undo the reviewer's most recent current label in the run (key ``u``)."""
    run = run_for(request, project_slug, run_name, LABEL)
    last = screen.last_label(run=run, reviewer=request.user)
    shown = int_param(request.POST.get("claim"))
    if last is None:
        notice = f"Nothing to undo: you have no label in run {run.name}."
        if not request.htmx:
            messages.info(request, notice)
            return redirect(run.get_absolute_url())
        claim = screen.claim_in_run(run=run, claim_id=shown) if shown is not None else None
        if claim is None:
            return HttpResponse(status=204)
        return show_review(request, run, claim.answer, claim.pk, came_from=_came_from(request, claim.answer_id),
                           notice=notice)
    restored = label_writes.label_undo(claim=last.claim, reviewer=request.user)
    notice = f"Undid your {last.value} on claim {last.claim.index}"
    notice += (f"; your earlier {restored.value} is current again." if restored is not None
               else "; it is back in your queue.")
    if not request.htmx:
        messages.success(request, notice)
        return redirect(review_url(run, last.claim.answer_id, last.claim.pk))
    answer = _answer_of(run, last.claim)
    # Undoing a first label takes one off the bar; restoring an earlier one leaves it.
    labeled = -1 if restored is None and last.value != LabelValue.UNCITED else 0
    return show_review(request, run, answer, last.claim.pk, came_from=_came_from(request, answer.pk), saved=True,
                       labeled=labeled, notice=notice)

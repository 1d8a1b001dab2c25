"""``python manage.py autolabel --run NAME --reviewer JUDGE_NAME --model MODEL
[--base-url URL] [--limit N] [--relabel] [--temperature T] [--timeout S] [--max-retries N]``.

An LLM judge labels every cited claim of the run as the reviewer
``JUDGE_NAME`` of kind ``model`` (created if new), one request per answer to
an OpenAI-compatible chat endpoint (SPEC §4.4; protocol in
``labeling.judges.protocol``). The key comes from ``CITELAB_OPENAI_API_KEY`` or
``OPENAI_API_KEY``, the endpoint from ``--base-url`` or
``CITELAB_OPENAI_BASE_URL`` (a vLLM, Ollama or llama.cpp server works). Running
it again asks only about the claims the judge has not labeled; ``--relabel``
asks again about all of them. The run happens in this process; the run page's
button hands the same work to the task queue.
"""

from __future__ import annotations

import math

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from labeling.judges.protocol import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TEMPERATURE,
    DEFAULT_TIMEOUT_SECONDS,
    JudgeEndpoint,
    base_url_from_env,
)
from labeling.judges.runs import MAX_PROBLEMS_KEPT, judge_run_create, judge_run_execute
from labeling.management import DATA_COMMAND_CHECKS
from labeling.management.lookup import find_project, find_run, reviewer_name
from labeling.models import JudgeRun, JudgeRunStatus


def judge_run_summary(judge_run: JudgeRun) -> list[str]:
    """The lines that report a judge run: answers, claims labeled, and every claim left unlabeled and why."""
    lines = [
        f"judge {judge_run.reviewer.username} ({judge_run.model}, prompt sha256 {judge_run.prompt_sha256[:12]}…, "
        f"temperature {judge_run.temperature:g}) on run {judge_run.run.name!r}: {judge_run.status}",
        f"  answers: {judge_run.answers_done} judged, {judge_run.answers_failed} failed (nothing written for "
        f"them), of {judge_run.answers_total}",
        f"  claims labeled: {judge_run.claims_labeled}",
        f"  claims left unlabeled: {judge_run.claims_missing} missing verdict, {judge_run.claims_duplicated} "
        f"duplicated verdict, {judge_run.claims_malformed} malformed verdict, {judge_run.claims_changed} edited "
        f"meanwhile",
        f"  verdicts for unknown ids (ignored): {judge_run.verdicts_unknown}",
    ]
    if judge_run.error:
        lines.append(f"  last error: {judge_run.error}")
    problems = (judge_run.details or {}).get("problems", [])
    if problems:
        lines.append(f"  problems ({len(problems)}{'+' if len(problems) >= MAX_PROBLEMS_KEPT else ''}):")
        lines.extend(f"    {problem}" for problem in problems[:20])
        if len(problems) > 20:
            lines.append(f"    … and {len(problems) - 20} more (on the judge's grading page)")
    return lines


class Command(BaseCommand):
    help = ("Label the cited claims of a run with an LLM judge (a reviewer of kind 'model') through an "
            "OpenAI-compatible endpoint; re-running fills only what is missing.")
    requires_system_checks = DATA_COMMAND_CHECKS

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--run", required=True)
        parser.add_argument("--project")
        parser.add_argument("--reviewer", type=reviewer_name, required=True,
                            help="the judge's reviewer name (kind 'model')")
        parser.add_argument("--model", required=True, help="the model name the endpoint serves")
        parser.add_argument("--base-url", default=None,
                            help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 "
                                 "(default: CITELAB_OPENAI_BASE_URL, else OpenAI's)")
        parser.add_argument("--limit", type=int, help="judge at most N answers")
        parser.add_argument("--relabel", action="store_true",
                            help="ask again about claims the judge already labeled")
        parser.add_argument("--temperature", type=float, default=DEFAULT_TEMPERATURE)
        parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_SECONDS,
                            help="seconds to wait for one reply (default %(default)s)")
        parser.add_argument("--max-retries", type=int, default=DEFAULT_MAX_RETRIES,
                            help="retries after a 429, a 5xx or a timeout, with backoff (default %(default)s)")

    def handle(self, *args, run: str, project: str | None, reviewer: str, model: str, base_url: str | None,
               limit: int | None, relabel: bool, temperature: float, timeout: float, max_retries: int,
               **options) -> None:
        if not (timeout > 0 and math.isfinite(timeout)):
            raise CommandError(f"--timeout {timeout:g}: must be a positive number of seconds")
        if max_retries < 0:
            raise CommandError(f"--max-retries {max_retries}: must be 0 or more")
        target = find_run(find_project(project), run)
        endpoint = JudgeEndpoint(model=model, base_url=(base_url if base_url is not None else base_url_from_env()),
                                 temperature=temperature, timeout=timeout, max_retries=max_retries)
        try:
            judge_run = judge_run_create(run=target, reviewer_name=reviewer, endpoint=endpoint, answer_limit=limit,
                                         relabel=relabel)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        if not judge_run.answers_total:
            self.stdout.write(f"nothing to judge: judge {judge_run.reviewer.username!r} has labeled every cited "
                              f"claim of run {target.name!r} (pass --relabel to ask again)")
        judge_run = judge_run_execute(judge_run.pk)
        text = "\n".join(judge_run_summary(judge_run))
        if judge_run.status == JudgeRunStatus.FAILED:
            raise CommandError(text)
        self.stdout.write(self.style.SUCCESS(text) if not judge_run.answers_failed else text)

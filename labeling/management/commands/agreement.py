"""``python manage.py agreement --run NAME [--reviewer A --reviewer B] [--format json|table]
[--min-alpha X] [--min-kappa X]``.

Without ``--reviewer``: every pair of the run's reviewers (raw agreement,
Cohen's kappa, per-label agreement, confusion) and Krippendorff's alpha and
Gwet's AC1 across the human reviewers (a judge is graded in its pairs only).
With two ``--reviewer``: that pair (a human or an automated labeler of kind
``model``) with its disagreements, and alpha and AC1 across the run's human
reviewers. Each figure comes with its n
and a 95 % bootstrap interval over claims (SPEC §4.4; method in
``scoring.agreement``). Only cited claims count (``labeling.team.agreement``).

On a run with assigned reviewers alpha, AC1 and the disputed claims are the
assigned reviewers' (``counted``: ``"assigned reviewers"``); the same figures
over every human reviewer, imported ``external`` ones included, are under
``all_human_reviewers`` (``null`` when nobody else labeled, or nobody is
assigned: the headline is then every human's, ``counted``: ``"human
reviewers"``). ``--min-alpha`` gates the headline alpha.

``--min-alpha`` / ``--min-kappa`` make it a CI gate: exit status 1 naming the
figure, its interval and n when it falls below (kappa: the named pair, or
every pair that shares claims).
"""

from __future__ import annotations

import json

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from labeling.management import DATA_COMMAND_CHECKS
from labeling.management.lookup import find_project, find_run, reviewer_name
from labeling.models import Claim
from labeling.names import normalize_name
from labeling.team.agreement import RunAgreement
from labeling.team.agreement_report import agreement_report
from scoring.agreement import Agreement, Coefficient, Interval
from scoring.judgment_agreement import JudgmentAgreement
from scoring.ratio import format_value


def figure_text(name: str, value: float | None, ci95: Interval | None, n: int) -> str:
    """``"Cohen's kappa 0.52 (95% CI 0.41–0.63, n = 200)"``; ``—`` when undefined."""
    interval = "no interval" if ci95 is None else f"95% CI {format_value(ci95[0])}–{format_value(ci95[1])}"
    return f"{name} {format_value(value)} ({interval}, n = {n})"


class Command(BaseCommand):
    help = ("Agreement of a run's reviewers on its cited claims: per pair (raw, Cohen's kappa, confusion), "
            "Krippendorff's alpha and Gwet's AC1 overall, with 95% bootstrap intervals; optional CI gate.")
    requires_system_checks = DATA_COMMAND_CHECKS

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--run", required=True)
        parser.add_argument("--project")
        parser.add_argument("--reviewer", type=reviewer_name, action="append", default=[],
                            help="give none (every reviewer) or exactly two (one pair)")
        parser.add_argument("--format", choices=["json", "table"], default="table")
        parser.add_argument("--min-alpha", type=float, help="exit 1 when Krippendorff's alpha is below this")
        parser.add_argument("--min-kappa", type=float,
                            help="exit 1 when Cohen's kappa of the pair (of any pair, without --reviewer) is below")

    def handle(self, *args, run: str, project: str | None, reviewer: list[str], format: str,
               min_alpha: float | None, min_kappa: float | None, **options) -> None:
        if len(reviewer) not in (0, 2):
            raise CommandError("give --reviewer exactly twice (reviewer A and reviewer B), or not at all for "
                               "every reviewer of the run")
        for flag, value in (("--min-alpha", min_alpha), ("--min-kappa", min_kappa)):
            if value is not None and not -1 <= value <= 1:
                raise CommandError(f"{flag} {value}: must be between -1 and 1")
        # Names are stored in their normal form (labeling.names); typed ones meet them there.
        reviewer = [normalize_name(name) for name in reviewer]
        target = find_run(find_project(project), run)
        if reviewer and reviewer[0] == reviewer[1]:
            raise CommandError(f"--reviewer {reviewer[0]!r} given twice: name two different reviewers")
        try:
            report = agreement_report(run=target, reviewers=reviewer)
        except ValidationError as exc:
            raise CommandError(exc.messages[0]) from None
        result, pairs, judged, payload = report.result, report.pairs, report.judged, report.payload
        overall = result.overall
        if format == "json":
            self.stdout.write(json.dumps(payload, indent=2, ensure_ascii=False))
        else:
            self.stdout.write(self._table(target.name, pairs, result, with_disagreements=bool(reviewer)))
            if judged.citations:
                self.stdout.write(self._judgments_table(judged))
        failures = self._gate(min_alpha, min_kappa, overall.alpha, pairs)
        if failures:
            raise CommandError("agreement gate failed on run " + repr(target.name) + ":\n" + "\n".join(failures),
                               returncode=1)
        if min_alpha is not None or min_kappa is not None:
            self.stderr.write(self.style.SUCCESS(f"agreement gate passed on run {target.name!r}"))

    def _gate(self, min_alpha: float | None, min_kappa: float | None, alpha: Coefficient,
              pairs: list[Agreement]) -> list[str]:
        failures = []
        if min_alpha is not None:
            text = figure_text("Krippendorff's alpha", alpha.value, alpha.ci95, alpha.n)
            if alpha.value is None:
                failures.append(f"  {text} is undefined (no claim with two labels that differ in kind), "
                                f"so it cannot reach --min-alpha {min_alpha}")
            elif alpha.value < min_alpha:
                failures.append(f"  {text} is below --min-alpha {min_alpha}")
        if min_kappa is not None:
            shared = [pair for pair in pairs if pair.n]
            if not shared:
                failures.append(f"  no pair of reviewers labeled a cited claim in common: --min-kappa {min_kappa} "
                                "has nothing to check")
            for pair in shared:
                text = figure_text(f"Cohen's kappa of {pair.reviewer_a} vs {pair.reviewer_b}", pair.kappa,
                                   pair.kappa_ci95, pair.n)
                if pair.kappa is None:
                    failures.append(f"  {text} is undefined (both gave one and the same label throughout), "
                                    f"so it cannot reach --min-kappa {min_kappa}")
                elif pair.kappa < min_kappa:
                    failures.append(f"  {text} is below --min-kappa {min_kappa}")
        return failures

    def _judgments_table(self, judged: JudgmentAgreement) -> str:
        return "\n".join([
            "", f"Citation judgments of {len(judged.reviewers)} reviewer(s), FULL > PARTIAL > NONE "
                f"({judged.unjudgeable} UNJUDGEABLE left out)",
            *(f"  {figure_text(f'Krippendorff alpha, {level}', figure.value, figure.ci95, figure.n)}"
              for level, figure in (("nominal", judged.nominal), ("ordinal", judged.ordinal))),
        ])

    def _table(self, run: str, pairs: list[Agreement], result: RunAgreement, *, with_disagreements: bool) -> str:
        lines = [f"Run {run}: {len(result.reviewers)} reviewer(s) on its cited claims "
                 "(95% intervals: percentile bootstrap over claims, 2000 resamples, fixed seed)"]
        groups = [("assigned reviewers" if result.assigned else "reviewers", result.overall, result.disputed)]
        if result.every_human is not None:
            groups.append(("human reviewers, imported ones included", result.every_human,
                           result.every_human_disputed or []))
        for title, figures, disputed in groups:
            over = f"over {len(figures.reviewers)} {title}"
            if result.assigned:
                over += f" ({', '.join(figures.reviewers)})"
            alpha, ac1 = figures.alpha, figures.ac1
            fleiss = figures.fleiss_kappa
            lines += [f"  {figure_text(f'Krippendorff alpha {over}', alpha.value, alpha.ci95, alpha.n)}",
                      f"  {figure_text(f'Gwet AC1 {over}', ac1.value, ac1.ci95, ac1.n)}",
                      f"  {figure_text(f'Fleiss kappa {over}', fleiss.value, fleiss.ci95, fleiss.n)}",
                      f"  disputed claims {over}: {len(disputed)}"]
        for pair in pairs:
            lines += [
                "",
                f"{pair.reviewer_a} (A) vs {pair.reviewer_b} (B) on {pair.n} claims both labeled",
                f"  raw agreement  {pair.agreement}",
                f"  {figure_text('Cohen kappa', pair.kappa, pair.kappa_ci95, pair.n)}",
                "  per label      " + ", ".join(f"{label} {ratio}" for label, ratio in pair.per_label.items()),
                "  confusion (rows A, columns B)",
                "  " + pair.confusion.to_string().replace("\n", "\n  "),
                f"  {len(pair.disagreements)} disagreement(s)" + (":" if with_disagreements else ""),
            ]
            if with_disagreements:
                ids = pair.disagreements["claim_id"].tolist()
                texts = dict(Claim.objects.filter(pk__in=ids).values_list("pk", "text"))
                for claim_id, a, b in pair.disagreements.itertuples(index=False):
                    lines.append(f"    claim {claim_id}: A {a}, B {b}: {texts.get(claim_id, '')[:100]}")
        return "\n".join(lines)


"""``python manage.py agreement --run NAME [--reviewer A --reviewer B] [--format json|table]
[--min-alpha X] [--min-kappa X]``.

Without ``--reviewer``: every pair of the run's reviewers (raw agreement,
Cohen's kappa, per-label agreement, confusion) and Krippendorff's alpha and
Gwet's AC1 across the human reviewers (a judge is graded in its pairs only).
With two ``--reviewer``: that pair (a human or an automated labeler of kind
``model``) with its disagreements, and alpha and AC1 across the run's human
reviewers. Each figure comes with its n
and a 95 % bootstrap interval over claims (SPEC §4.4; method in
``scoring.agreement``). Only cited claims count (``labeling.agreement``).

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
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from labeling.agreement import CATEGORIES, RunAgreement, run_agreement, run_judgment_agreement
from labeling.judge_grades import claim_texts, judge_labels
from labeling.management import DATA_COMMAND_CHECKS
from labeling.management.lookup import find_project, find_run, reviewer_name
from labeling.models import Claim, Reviewer, ReviewerKind, Run
from labeling.names import normalize_name
from scoring.agreement import Agreement, Coefficient, Interval, Reliability, pairwise_agreement
from scoring.judge_grading import JudgeGrade, grade_judge
from scoring.judgment_agreement import JudgmentAgreement
from scoring.labels import LABEL_VALUES
from scoring.ratio import format_value


def figure_text(name: str, value: float | None, ci95: Interval | None, n: int) -> str:
    """``"Cohen's kappa 0.52 (95% CI 0.41–0.63, n = 200)"``; ``—`` when undefined."""
    interval = "no interval" if ci95 is None else f"95% CI {ci95[0]:.2f}–{ci95[1]:.2f}"
    return f"{name} {format_value(value)} ({interval}, n = {n})"


def confusion_dict(pair: Agreement) -> dict[str, dict[str, int]]:
    """The pair's confusion over all three label values (UNCITED row and column
    zero: only cited claims count), the shape this command always printed."""
    return {row: {col: int(pair.confusion.at[row, col]) if row in CATEGORIES and col in CATEGORIES else 0
                  for col in LABEL_VALUES} for row in LABEL_VALUES}


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
        result = run_agreement(run=target)
        overall = result.overall
        for name in reviewer:
            if name not in result.reviewers:
                raise CommandError(f"reviewer {name!r} has no current label on a cited claim of run {run!r}")
        if reviewer:
            pairs = [pairwise_agreement(result.labels, reviewer[0], reviewer[1], categories=CATEGORIES)]
        else:
            pairs = result.pairs
        judged = run_judgment_agreement(run=target)
        figures: dict[str, Any] = {
            **_reliability(overall, result.disputed),
            "counted": "assigned reviewers" if result.assigned else "human reviewers",
            "counted_reviewers": overall.reviewers,
            "all_human_reviewers": (None if result.every_human is None else
                                    _reliability(result.every_human, result.every_human_disputed or [])
                                    | {"counted_reviewers": result.every_human.reviewers}),
            "reviewers": result.reviewers,
            # Krippendorff's alpha of the citation judgments, nominal and ordinal (issue 26).
            "citation_judgments": judged.to_dict(),
        }
        if reviewer:
            pair = pairs[0]
            payload = pair.to_dict() | {"confusion": confusion_dict(pair), "run": target.name} | figures
            grade = self._judge_grade(target, reviewer, result.kinds)
            if grade is not None:
                payload["judge"] = grade.to_dict()
        else:
            payload = {"run": target.name, **figures, "per_label": _values(overall.per_label),
                       "pairs": [p.to_dict() | {"confusion": confusion_dict(p)} for p in pairs]}
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

    def _judge_grade(self, run: Run, names: list[str], kinds: dict[str, str]) -> JudgeGrade | None:
        """When exactly one of the pair is a judge (kind ``model``): the judge graded
        against the other reviewer's labels (``scoring.judge_grading``)."""
        judges = [name for name in names if kinds.get(name) == ReviewerKind.MODEL]
        if len(judges) != 1:
            return None
        judge = Reviewer.objects.get(username=judges[0])
        human = Reviewer.objects.get(username=next(name for name in names if name != judges[0]))
        reference = judge_labels(run, human).rename(columns={"reason": "justification"})
        return grade_judge(reference, judge_labels(run, judge), claims=claim_texts(run), judge_name=judge.username,
                           reference_name=human.username)

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


def _reliability(figures: Reliability, disputed: list[int]) -> dict[str, Any]:
    """Alpha and AC1 with their intervals and n, and the disputed claims' count, as the JSON keys say."""
    return {
        "krippendorff_alpha": figures.alpha.value, "alpha_ci95": _listed(figures.alpha.ci95),
        "alpha_n": figures.alpha.n,
        "gwet_ac1": figures.ac1.value, "ac1_ci95": _listed(figures.ac1.ci95), "ac1_n": figures.ac1.n,
        "fleiss_kappa": figures.fleiss_kappa.value, "fleiss_kappa_ci95": _listed(figures.fleiss_kappa.ci95),
        "fleiss_kappa_n": figures.fleiss_kappa.n,
        "disputed": len(disputed),
    }


def _listed(interval: Interval | None) -> list[float] | None:
    return None if interval is None else [interval[0], interval[1]]


def _values(ratios: dict) -> dict[str, float | None]:
    return {label: ratio.value for label, ratio in ratios.items()}

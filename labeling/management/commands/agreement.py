"""``python manage.py agreement --run NAME --reviewer A --reviewer B [--format json|table]``.

Grades two reviewers (human or an imported automated labeler of kind
``model``) on the claims both labeled: raw agreement, Cohen's kappa, confusion
matrix and the disagreements; Krippendorff's alpha across every reviewer of the
run (SPEC §4.4).
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError, CommandParser

from labeling.exports import frames
from labeling.management.lookup import find_project, find_run
from labeling.models import Claim
from scoring.agreement import krippendorff_alpha, pairwise_agreement
from scoring.ratio import format_value


class Command(BaseCommand):
    help = "Agreement between two reviewers on a run's claims (raw, Cohen's kappa, confusion), and alpha."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--run", required=True)
        parser.add_argument("--project")
        parser.add_argument("--reviewer", action="append", required=True, help="give exactly two")
        parser.add_argument("--format", choices=["json", "table"], default="table")

    def handle(self, *args, run: str, project: str | None, reviewer: list[str], format: str, **options) -> None:
        if len(reviewer) != 2:
            raise CommandError("give --reviewer exactly twice (reviewer A and reviewer B)")
        if reviewer[0] == reviewer[1]:
            raise CommandError(f"--reviewer {reviewer[0]!r} given twice: name two different reviewers")
        target = find_run(find_project(project), run)
        labels = frames.labels_frame(target)[["claim_id", "reviewer", "label"]]
        for name in reviewer:
            if not (labels["reviewer"] == name).any():
                raise CommandError(f"reviewer {name!r} has no current label in run {run!r}")
        result = pairwise_agreement(labels, reviewer[0], reviewer[1])
        alpha = krippendorff_alpha(labels)
        payload = result.to_dict() | {"run": target.name, "krippendorff_alpha": alpha,
                                      "reviewers": sorted(labels["reviewer"].unique().tolist())}
        if format == "json":
            self.stdout.write(json.dumps(payload, indent=2, ensure_ascii=False))
            return
        texts = dict(Claim.objects.filter(pk__in=result.disagreements["claim_id"].tolist()).values_list("pk", "text"))
        lines = [
            f"Run {target.name}: {reviewer[0]} (A) vs {reviewer[1]} (B) on {result.n} claims both labeled",
            f"  raw agreement  {result.agreement}",
            f"  Cohen's kappa  {format_value(result.kappa, 3)}",
            f"  Krippendorff's alpha over {len(payload['reviewers'])} reviewers  {format_value(alpha, 3)}",
            "",
            "  confusion (rows A, columns B)",
            "  " + result.confusion.to_string().replace("\n", "\n  "),
            "",
            f"  {len(result.disagreements)} disagreement(s):",
        ]
        for claim_id, a, b in result.disagreements.itertuples(index=False):
            lines.append(f"    claim {claim_id}: A {a}, B {b}: {texts.get(claim_id, '')[:100]}")
        self.stdout.write("\n".join(lines))

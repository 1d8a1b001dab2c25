"""``python manage.py sample --run NAME --answers N [--seed S] [--project SLUG]``: draw
the run's probability sample of answers for human labels, or grow it (SPEC §4.6)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from labeling.management.lookup import find_project, find_run
from labeling.scores.samples import sample_draw, sample_status


class Command(BaseCommand):
    help = ("Draw a uniform random sample of a run's answers from a seeded permutation (seed stored), or grow "
            "it keeping its earlier members; reviewers' queues serve its answers first.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--run", required=True, help="run name")
        parser.add_argument("--project", help="project slug (default: the only project)")
        parser.add_argument("--answers", required=True, type=int, help="answers the sample holds (it only grows)")
        parser.add_argument("--seed", type=int, help="seed of the permutation (default: a random one, stored; "
                                                     "growing keeps the stored seed)")

    def handle(self, *args, run: str, project: str | None, answers: int, seed: int | None, **options) -> None:
        target = find_run(find_project(project), run)
        try:
            result = sample_draw(run=target, answers=answers, seed=seed)
        except ValidationError as exc:
            raise CommandError("; ".join(f"--{field}: {message}" for field, messages in exc.message_dict.items()
                                         for message in messages)) from None
        status = sample_status(target)
        done = f"{result.added} drawn now" if result.added else "nothing drawn: it already holds that many"
        self.stdout.write(self.style.SUCCESS(
            f"{target.project.slug}/{target.name}: sample {status.size} answers (seed {status.seed}; {done}): "
            f"{status.fully_labeled} fully labeled"
        ))

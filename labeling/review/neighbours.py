"""Where an answer sits in its run: the answers before and after it in question
order, its position, and its place in the run's probability sample (SPEC §4.6).
The review page's header and its previous/next answer links read it."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection

from labeling.models import Answer, Sample, SampleMember


def _tables() -> dict[str, str]:
    quote = connection.ops.quote_name
    return {name: quote(model._meta.db_table)
            for name, model in (("answer", Answer), ("sample", Sample), ("member", SampleMember))}


_NEIGHBOURS_SQL = """
SELECT
  (SELECT id FROM {answer} WHERE run_id = %s AND question_key < %s ORDER BY question_key DESC LIMIT 1),
  (SELECT id FROM {answer} WHERE run_id = %s AND question_key > %s ORDER BY question_key LIMIT 1),
  (SELECT COUNT(*) FROM {answer} WHERE run_id = %s AND question_key < %s),
  (SELECT COUNT(*) FROM {answer} WHERE run_id = %s),
  (SELECT m.position FROM {member} m JOIN {sample} sa ON sa.id = m.sample_id
   WHERE sa.run_id = %s AND m.answer_id = %s),
  (SELECT COUNT(*) FROM {member} m JOIN {sample} sa ON sa.id = m.sample_id WHERE sa.run_id = %s),
  (SELECT sa.target_half_width FROM {sample} sa WHERE sa.run_id = %s)
"""


@dataclass(frozen=True)
class AnswerNeighbours:
    """Where an answer sits in its run: the ids of the answers before and after
    it (``None`` at either end), its 1-based ``position`` and the run's answer
    count ``total``; in the run's probability sample (SPEC §4.6): its
    ``sample_position`` (``None`` when not sampled), the sample's size
    ``sample_size`` (0 without one) and target half-width ``sample_target``."""

    previous_id: int | None
    next_id: int | None
    position: int
    total: int
    sample_position: int | None = None
    sample_size: int = 0
    sample_target: float | None = None


def answer_neighbours(*, answer: Answer) -> AnswerNeighbours:
    """The answers before and after ``answer`` in its run (``question_id``
    order), its position and the run's answer count, and its place in the run's
    sample. One query: two index lookups and two index-only counts on ``(run,
    question_key)``, and three lookups in the sample."""
    run_id, key = answer.run_id, answer.question_key
    with connection.cursor() as cursor:
        cursor.execute(_NEIGHBOURS_SQL.format(**_tables()),
                       [run_id, key, run_id, key, run_id, key, run_id, run_id, answer.pk, run_id, run_id])
        previous_id, next_id, before, total, sample_position, sample_size, target = cursor.fetchone()
    return AnswerNeighbours(previous_id, next_id, before + 1, total, sample_position, sample_size, target)

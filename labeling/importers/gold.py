"""Gold of an answers import (SPEC §6): a question's gold ids, references and
expected sources, replaced by what the file gives (the file is the source of
truth). Shared by every run answering the question."""

from __future__ import annotations

from labeling.importers.records import AnswerRecord
from labeling.models import ExpectedSource, GoldPassageId, GoldReference, Question


def write_gold(batch: list[AnswerRecord], questions: dict[str, Question], *, written: set[str]) -> bool:
    """Store the gold the lines of ``batch`` give for their questions
    (``questions``: question id → Question, saved), once per question per
    import (``written``: the question ids already done, updated). Returns
    whether the stored gold changed (then every run answering those
    questions has new figures). Three reads (the gold stored) and the writes; nothing without gold."""
    records = {}
    for record in batch:
        if record.gold is not None and record.question_id not in written:
            records[record.question_id] = record
    if not records:
        return False
    targets = [questions[qid] for qid in records]
    ids, refs, sources = [], [], []
    for qid, record in records.items():
        question, gold = questions[qid], record.gold
        if gold.supporting_ids is not None:
            question.gold_ids_given = True
            ids.extend(GoldPassageId(question=question, passage_id=i) for i in gold.supporting_ids)
        if gold.references is not None:
            question.gold_references_given = True
            refs.extend(GoldReference(question=question, position=k, source=s, text=t)
                        for k, (s, t) in enumerate(gold.references))
        if gold.expected_sources is not None:
            question.gold_sources_given = True
            sources.extend(ExpectedSource(question=question, source=s) for s in gold.expected_sources)
    # Gold given again replaces what was stored: the file is the source of truth.
    changed = _gold_rows(targets) != (
        {(g.question.pk, g.passage_id) for g in ids},
        {(g.question.pk, g.position, g.source, g.text) for g in refs},
        {(g.question.pk, g.source) for g in sources})
    GoldPassageId.objects.filter(question__in=targets).delete()
    GoldReference.objects.filter(question__in=targets).delete()
    ExpectedSource.objects.filter(question__in=targets).delete()
    GoldPassageId.objects.bulk_create(ids)
    GoldReference.objects.bulk_create(refs)
    ExpectedSource.objects.bulk_create(sources)
    Question.objects.bulk_update(targets, ["gold_ids_given", "gold_references_given", "gold_sources_given"])
    written.update(records)
    return changed


def _gold_rows(questions: list[Question]) -> tuple[set, set, set]:
    """The gold stored for ``questions``, as :func:`write_gold` compares it
    with a file's (ids, references, expected sources). Three queries."""
    return (set(GoldPassageId.objects.filter(question__in=questions).values_list("question_id", "passage_id")),
            set(GoldReference.objects.filter(question__in=questions)
                .values_list("question_id", "position", "source", "text")),
            set(ExpectedSource.objects.filter(question__in=questions).values_list("question_id", "source")))

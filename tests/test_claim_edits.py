"""Claim split, merge and edit (SPEC §3: claims are atomic before they are
labeled; a changed claim's labels become stale and it returns to the queue).
Indexes are renumbered without ever colliding (PostgreSQL checks the unique
(answer, index) constraint row by row) and offsets are recomputed."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from labeling.models import Citation, Claim, Label
from labeling.review.claim_edits import claim_edit, claim_merge, claim_split
from tests.factories import AnswerFactory, CitationFactory, ClaimFactory, LabelFactory, PassageFactory

pytestmark = pytest.mark.django_db

ANSWER = "Paris is the capital of France and it has two million inhabitants. The Seine crosses it. It rains."
#         0         1         2         3         4         5         6         7         8         9
#         0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789


@pytest.fixture
def answer():
    """An answer with three located claims; claim 1 cites P1 and P2, claim 2 cites P2, claim 3 nothing."""
    answer = AnswerFactory(text=ANSWER)
    p1 = PassageFactory(answer=answer, passage_id="P1", text="Paris is the capital of France.")
    p2 = PassageFactory(answer=answer, passage_id="P2", text="Paris has about two million inhabitants.")
    texts = ["Paris is the capital of France and it has two million inhabitants.", "The Seine crosses it.",
             "It rains."]
    for index, text in enumerate(texts, start=1):
        start = ANSWER.index(text)
        ClaimFactory(answer=answer, index=index, text=text, start=start, end=start + len(text))
    first, second, _third = claims_of(answer)
    CitationFactory(claim=first, passage=p1, position=0, cited_id="P1")
    CitationFactory(claim=first, passage=p2, position=1, cited_id="P2", span="two million inhabitants")
    CitationFactory(claim=second, passage=p2, position=0, cited_id="P2")
    return answer


def claims_of(answer):
    return list(Claim.objects.filter(answer=answer).order_by("index"))


def rows(answer):
    """(index, text, start, end, revision, cited ids) per claim, in index order."""
    return [
        (c.index, c.text, c.start, c.end, c.revision, [x.cited_id for x in c.citations.order_by("position")])
        for c in claims_of(answer)
    ]


def test_split_at_an_offset_makes_two_located_claims_and_shifts_the_rest(answer, reviewer):
    claim = claims_of(answer)[0]
    label = LabelFactory(claim=claim, reviewer=reviewer, value="SUPPORTED")
    assert [r[0] for r in rows(answer)] == [1, 2, 3]

    # "Paris is the capital of France" | " and it has two million inhabitants."
    first, second = claim_split(claim=claim, at=30)

    assert rows(answer) == [
        (1, "Paris is the capital of France", 0, 30, 2, ["P1", "P2"]),
        (2, "and it has two million inhabitants.", 31, 66, 1, ["P1", "P2"]),
        (3, "The Seine crosses it.", 67, 88, 1, ["P2"]),
        (4, "It rains.", 89, 98, 1, []),
    ]
    assert first.pk == claim.pk and second.index == 2
    label.refresh_from_db()
    assert (label.is_current, label.is_stale) == (False, True)
    # The copied citation keeps its span.
    assert Citation.objects.get(claim=second, cited_id="P2").span == "two million inhabitants"


def test_split_by_texts_assigns_citations_to_each_part(answer):
    claim = claims_of(answer)[0]
    p1, p2 = [c.pk for c in claim.citations.order_by("position")]

    claim_split(claim=claim, first_text="Paris is the capital of France.",
                second_text="Paris has two million inhabitants.", first_citation_ids=[p1], second_citation_ids=[p2])

    assert rows(answer)[:2] == [
        # The rewritten parts are not verbatim answer text: no offsets, listed instead of marked.
        (1, "Paris is the capital of France.", None, None, 2, ["P1"]),
        (2, "Paris has two million inhabitants.", None, None, 1, ["P2"]),
    ]


def test_split_part_without_citations_becomes_uncited(answer):
    claim = claims_of(answer)[0]
    p1, p2 = [c.pk for c in claim.citations.order_by("position")]

    claim_split(claim=claim, at=30, first_citation_ids=[p1, p2], second_citation_ids=[])

    assert rows(answer)[1][5] == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"at": 0}, "between 1 and 65"),
        ({"at": 66}, "between 1 and 65"),  # the claim has 66 characters
        ({"first_text": "Paris is the capital.", "second_text": "  "}, "Both parts"),
        ({"first_text": "", "second_text": ""}, "Both parts"),
        ({"at": 30, "first_citation_ids": [], "second_citation_ids": []}, r"\[P1, P2\] would be lost"),
        ({"at": 30, "first_citation_ids": [999999]}, "do not belong"),
        ({"at": 30, "base_revision": 7}, "changed by someone else"),
    ],
)
def test_bad_split_changes_nothing(answer, kwargs, message):
    before = rows(answer)

    with pytest.raises(ValidationError, match=message):
        claim_split(claim=claims_of(answer)[0], **kwargs)

    assert rows(answer) == before


def test_merge_joins_neighbours_with_their_citations_and_history(answer, reviewer):
    first, second, third = claims_of(answer)
    on_first = LabelFactory(claim=first, reviewer=reviewer, value="SUPPORTED")
    on_second = LabelFactory(claim=second, reviewer=reviewer, value="UNSUPPORTED", justification="no")

    merged = claim_merge(claim=first, other=second)

    assert rows(answer) == [
        (1, "Paris is the capital of France and it has two million inhabitants. The Seine crosses it.", 0, 88, 2,
         # P2 twice: once with a span, once without — two different citations.
         ["P1", "P2", "P2"]),
        (2, "It rains.", 89, 98, 1, []),
    ]
    assert merged.pk == first.pk
    assert not Claim.objects.filter(pk=second.pk).exists()
    # Both labels are kept, stale, in the merged claim's history.
    assert sorted(Label.objects.filter(claim=merged).values_list("pk", "is_current", "is_stale")) == sorted(
        [(on_first.pk, False, True), (on_second.pk, False, True)])


def test_merge_keeps_a_duplicate_citation_once(answer):
    first, second, _third = claims_of(answer)
    Citation.objects.filter(claim=first, cited_id="P2").update(span="")

    claim_merge(claim=second, other=first)  # either order

    assert rows(answer)[0][5] == ["P1", "P2"]


@pytest.mark.parametrize("which", ["not_adjacent", "other_answer", "same"])
def test_bad_merge_changes_nothing(answer, which):
    first, _second, third = claims_of(answer)
    other = {"not_adjacent": third, "other_answer": ClaimFactory(index=2), "same": first}[which]
    before = rows(answer)

    with pytest.raises(ValidationError):
        claim_merge(claim=first, other=other)

    assert rows(answer) == before


def test_edit_rewords_the_claim_and_stales_its_labels(answer, reviewer):
    _first, second, _third = claims_of(answer)
    label = LabelFactory(claim=second, reviewer=reviewer, value="SUPPORTED")

    claim_edit(claim=second, text="  The Seine crosses it.  It rains.  ")

    second.refresh_from_db()
    assert (second.text, second.start, second.end, second.revision) == (
        "The Seine crosses it.  It rains.", None, None, 2)
    label.refresh_from_db()
    assert (label.is_current, label.is_stale) == (False, True)


def test_edit_to_verbatim_text_finds_the_offsets(answer):
    _first, second, _third = claims_of(answer)

    claim_edit(claim=second, text="The Seine crosses it")

    second.refresh_from_db()
    assert (second.start, second.end) == (67, 87)


def test_edit_with_the_same_text_is_a_no_op(answer, reviewer):
    _first, second, _third = claims_of(answer)
    label = LabelFactory(claim=second, reviewer=reviewer, value="SUPPORTED")

    claim_edit(claim=second, text="The Seine crosses it. ")

    second.refresh_from_db()
    label.refresh_from_db()
    assert (second.revision, label.is_current) == (1, True)


def test_edit_refuses_an_empty_text(answer):
    with pytest.raises(ValidationError, match="needs text"):
        claim_edit(claim=claims_of(answer)[1], text="   ")
    assert rows(answer)[1][1] == "The Seine crosses it."


def test_renumbering_many_claims_keeps_indexes_unique_and_ordered():
    answer = AnswerFactory(text="x")
    Claim.objects.bulk_create([Claim(answer=answer, index=i, text=f"claim {i}") for i in range(1, 41)])
    tenth = Claim.objects.get(answer=answer, index=10)

    claim_split(claim=tenth, first_text="claim 10a", second_text="claim 10b")
    claim_merge(claim=Claim.objects.get(answer=answer, index=20), other=Claim.objects.get(answer=answer, index=21))

    texts = list(Claim.objects.filter(answer=answer).order_by("index").values_list("index", "text"))
    assert [i for i, _ in texts] == list(range(1, 41))
    assert texts[9:11] == [(10, "claim 10a"), (11, "claim 10b")]
    assert texts[19] == (20, "claim 19 claim 20")
    assert texts[-1] == (40, "claim 40")

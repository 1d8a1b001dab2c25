"""The small project the review page tests work on (:class:`Site`), and helpers
that read the page's fragments. Shared by the modules of the review page:
test_review_page.py, test_review_label.py, test_review_claim_edits.py,
test_queue.py, and test_params.py."""

from __future__ import annotations

from django.urls import reverse

from labeling.models import Answer, Citation, Claim, Label, Passage, Question
from tests.factories import (
    AnswerFactory,
    CitationFactory,
    ClaimFactory,
    PassageFactory,
    ProjectFactory,
    QuestionFactory,
    RunFactory,
)

HX = {"HTTP_HX_REQUEST": "true"}


class Site:
    """Project ``demo`` (alice is a member), run ``r1`` with two answers:

    - q1: claims 1 (cites P1 with span "capital of France"), 2 (no citation),
      3 (cites P2, no span);
    - q2: claim 1 (cites P3), claim 2 (cites an id that was not sent: fabricated).
    """

    def __init__(self, reviewer):
        self.project = ProjectFactory(slug="demo", name="Demo")
        self.project.members.add(reviewer)
        self.run = RunFactory(project=self.project, name="r1")
        text1 = "Paris is the capital of France. It is old. The Seine flows through Paris."
        self.a1 = AnswerFactory(run=self.run, question=QuestionFactory(project=self.project, question_id="q1",
                                                                       text="Tell me about Paris?"), text=text1)
        self.a2 = AnswerFactory(run=self.run, question=QuestionFactory(project=self.project, question_id="q2"),
                                text="Lyon is big. Lyon has a moon.")
        p1 = PassageFactory(answer=self.a1, passage_id="P1", source="https://example.org/paris",
                            text="Paris is the capital of France since 508.")
        p2 = PassageFactory(answer=self.a1, passage_id="P2", source="atlas.pdf",
                            text="The river Seine flows through the city of Paris.")
        p3 = PassageFactory(answer=self.a2, passage_id="P3", text="Lyon is a big city.")
        self.c1 = ClaimFactory(answer=self.a1, index=1, text="Paris is the capital of France.", start=0, end=31)
        self.c2 = ClaimFactory(answer=self.a1, index=2, text="It is old.", start=32, end=42)
        self.c3 = ClaimFactory(answer=self.a1, index=3, text="The Seine flows through Paris.", start=43, end=73)
        self.d1 = ClaimFactory(answer=self.a2, index=1, text="Lyon is big.", start=0, end=12)
        self.d2 = ClaimFactory(answer=self.a2, index=2, text="Lyon has a moon.", start=13, end=29)
        CitationFactory(claim=self.c1, passage=p1, position=0, cited_id="P1", span="capital of France")
        CitationFactory(claim=self.c3, passage=p2, position=0, cited_id="P2")
        CitationFactory(claim=self.d1, passage=p3, position=0, cited_id="P3")
        CitationFactory(claim=self.d2, passage=None, position=0, cited_id="P9", fabricated=True)

    def review(self, answer, claim=None):
        url = reverse("answer_review", kwargs={"project_slug": "demo", "run_name": "r1", "answer_id": answer.pk})
        return f"{url}?claim={claim.pk}" if claim else url

    def label_url(self, claim):
        return reverse("claim_label", kwargs={"project_slug": "demo", "run_name": "r1", "claim_id": claim.pk})

    def url(self, name, **kwargs):
        return reverse(name, kwargs={"project_slug": "demo", "run_name": "r1", **kwargs})


def my_labels(reviewer):
    """``reviewer``'s current labels, oldest first, as ``(claim text, value, justification)``."""
    return list(Label.objects.filter(reviewer=reviewer, is_current=True).order_by("pk")
                .values_list("claim__text", "value", "justification"))


def label_form_html(html: str) -> str:
    """The label form of a page or fragment ``html``, up to its ``</form>``."""
    return html.split('id="label-form"', 1)[1].split("</form>", 1)[0]


def panel_claim(html: str) -> int:
    """The id of the claim the claim panel of ``html`` shows."""
    return int(html.split('id="claim-panel"', 1)[1].split('data-claim="', 1)[1].split('"', 1)[0])


def budget_run(reviewer, answers: int) -> list[Claim]:
    """Project ``budget``, run ``big`` of ``answers`` answers of two cited claims each."""
    project = ProjectFactory(slug="budget")
    project.members.add(reviewer)
    run = RunFactory(project=project, name="big")
    questions = Question.objects.bulk_create(
        [Question(project=project, question_id=f"q{i:04d}", text="?") for i in range(answers)])
    made = Answer.objects.bulk_create([Answer(run=run, question=q, question_key=q.question_id, text="One. Two.",
                                              content_hash=f"{n:064x}") for n, q in enumerate(questions)])
    passages = Passage.objects.bulk_create([Passage(answer=a, passage_id="P1", position=0) for a in made])
    claims = Claim.objects.bulk_create([Claim(answer=a, index=i, text=f"claim {i}") for a in made for i in (1, 2)])
    Citation.objects.bulk_create([Citation(claim=c, passage=passages[n // 2], position=0, cited_id="P1")
                                  for n, c in enumerate(claims)])
    return claims

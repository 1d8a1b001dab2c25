"""factory_boy factories for Citelab's models (STYLE §6)."""

from __future__ import annotations

import factory

from labeling import models


class ReviewerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Reviewer
        django_get_or_create = ["username"]

    username = factory.Sequence(lambda n: f"reviewer{n}")
    password = factory.django.Password("pw-for-tests-1")


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Project
        django_get_or_create = ["slug"]

    slug = factory.Sequence(lambda n: f"project-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.replace("-", " ").title())


class QuestionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Question

    project = factory.SubFactory(ProjectFactory)
    question_id = factory.Sequence(lambda n: f"q{n}")
    text = factory.LazyAttribute(lambda o: f"Question {o.question_id}?")


class RunFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Run

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"run-{n}")


class AnswerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Answer

    run = factory.SubFactory(RunFactory)
    question = factory.SubFactory(QuestionFactory, project=factory.SelfAttribute("..run.project"))
    question_key = factory.SelfAttribute("question.question_id")
    text = "An answer."
    content_hash = factory.Sequence(lambda n: f"{n:064x}")


class PassageFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Passage

    answer = factory.SubFactory(AnswerFactory)
    passage_id = factory.Sequence(lambda n: f"P{n}")
    position = factory.Sequence(lambda n: n)
    source = factory.LazyAttribute(lambda o: f"doc-{o.passage_id}.pdf")
    text = "Passage text."


class ClaimFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Claim

    answer = factory.SubFactory(AnswerFactory)
    index = factory.Sequence(lambda n: n + 1)
    text = factory.Sequence(lambda n: f"Claim number {n}.")


class CitationFactory(factory.django.DjangoModelFactory):
    """A citation to an existing passage of the claim's answer (pass ``passage``)."""

    class Meta:
        model = models.Citation

    claim = factory.SubFactory(ClaimFactory)
    passage = factory.SubFactory(PassageFactory, answer=factory.SelfAttribute("..claim.answer"))
    position = factory.Sequence(lambda n: n)
    cited_id = factory.LazyAttribute(lambda o: o.passage.passage_id if o.passage else "X")
    fabricated = factory.LazyAttribute(lambda o: o.passage is None)


class LabelFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Label

    claim = factory.SubFactory(ClaimFactory)
    reviewer = factory.SubFactory(ReviewerFactory)
    value = models.LabelValue.SUPPORTED
    justification = ""
    claim_revision = factory.LazyAttribute(lambda o: o.claim.revision)

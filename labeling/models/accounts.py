"""Reviewer accounts (SPEC §2 "reviewer"): people, automated labelers and external names."""

from __future__ import annotations

from django.contrib.auth.models import AbstractUser
from django.db import models

from labeling.names import normalize_name


class ReviewerKind(models.TextChoices):
    HUMAN = "human", "Human reviewer"
    EXTERNAL = "external", "External annotator (imported)"
    MODEL = "model", "Automated labeler (model)"


# Whose current labels make a claim's label (SPEC §4.4): people, including
# imported human experts (kind ``external``); an automated labeler (kind
# ``model``) is graded against them and never counts as a human label.
COUNTED_KINDS = (ReviewerKind.HUMAN, ReviewerKind.EXTERNAL)


class Reviewer(AbstractUser):
    """A person or an imported labeler who gives labels (SPEC §2 "reviewer").

    Imported labelers (a dataset's annotators, an automated judge) are users of
    kind ``external`` or ``model`` with an unusable password.
    """

    kind = models.CharField(max_length=16, choices=ReviewerKind.choices, default=ReviewerKind.HUMAN)

    class Meta:
        verbose_name = "reviewer"

    def __str__(self) -> str:
        return self.username

    @classmethod
    def normalize_username(cls, username: str) -> str:
        # Django applies NFKC here (create_user, admin forms); the project's
        # normal form also drops invisible characters, so "rev01" typed at
        # login is the account that add_reviewer made from "ｒｅｖ０１".
        return normalize_name(username) if isinstance(username, str) else username

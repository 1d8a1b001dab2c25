"""Citelab's data model (SPEC §2): projects, questions with gold, runs, answers,
passages, claims, citations, labels and label table versions.

Invariants live in the database (named constraints); writes go through
``labeling.services``; ``save()`` stays plain.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.db import models
from django.db.models import F, Q
from django.urls import reverse
from django.utils import timezone

from labeling.names import normalize_name, validate_project_slug, validate_question_id, validate_run_name
from scoring import judgments, labels


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


class Project(models.Model):
    """A question set with its members; runs belong to it (SPEC §2)."""

    # Every URL reads it with <slug:…>: the rules are labeling.names'.
    slug = models.SlugField(max_length=64, unique=True, validators=[validate_project_slug])
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    # Each member has a role (Membership): "members" alone answers "may open", the role "may do what".
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="projects",
                                     through="Membership")
    # Some teams want the reason for every verdict, not only for UNSUPPORTED ones.
    require_justification_for_supported = models.BooleanField(default=False)
    # Judge each citation of a claim (FULL/PARTIAL/NONE/UNJUDGEABLE) before its label
    # (SPEC §4.3b); off keeps the one-key SUPPORTED/UNSUPPORTED flow.
    judge_citations = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.name or self.slug

    def get_absolute_url(self) -> str:
        return reverse("project_detail", kwargs={"project_slug": self.slug})


class Role(models.TextChoices):
    """A member's role in a project (SPEC §2): what they may do there (``selectors.may``)."""

    LEAD = "lead", "Lead"
    REVIEWER = "reviewer", "Reviewer"
    VIEWER = "viewer", "Viewer"


class Membership(models.Model):
    """``reviewer`` is a member of ``project`` with ``role`` (SPEC §2 "role").

    The default role is ``lead``: every member had a lead's rights before roles
    existed, so ``project.members.add(user)`` keeps meaning what it meant. The
    members page and ``add_reviewer`` always name the role.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.LEAD)

    class Meta:
        ordering = ["project_id", "reviewer_id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "reviewer"], name="one_membership_per_reviewer"),
            models.CheckConstraint(condition=Q(role__in=Role.values), name="membership_role_known"),
        ]

    def __str__(self) -> str:
        return f"{self.reviewer_id} {self.role} of {self.project_id}"


class Question(models.Model):
    """A user query, stable across runs by ``question_id`` (SPEC §2), with gold.

    Gold is optional and comes in three parts, each either absent or given
    (possibly empty): supporting passage ids (``GoldPassageId``), reference
    passages (``GoldReference``), expected sources (``ExpectedSource``). The
    ``*_given`` flags tell "absent" from "given but empty", which the metrics
    need (SPEC §4.2, §4.3).
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="questions")
    question_id = models.CharField(max_length=200, validators=[validate_question_id])
    text = models.TextField()
    answerable = models.BooleanField(null=True, blank=True)
    gold_ids_given = models.BooleanField(default=False)
    gold_references_given = models.BooleanField(default=False)
    gold_sources_given = models.BooleanField(default=False)

    class Meta:
        ordering = ["project_id", "question_id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "question_id"], name="question_id_unique_per_project"),
        ]

    def __str__(self) -> str:
        return self.question_id


class GoldPassageId(models.Model):
    """One gold supporting passage id of a question (SPEC §4.2)."""

    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="gold_ids")
    passage_id = models.CharField(max_length=200)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["question", "passage_id"], name="gold_id_unique_per_question"),
        ]

    def __str__(self) -> str:
        return self.passage_id


class GoldReference(models.Model):
    """One gold reference passage (source + text) of a question (SPEC §4.3).

    An empty ``text`` is matched by any citation of the same source.
    """

    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="gold_references")
    position = models.PositiveIntegerField()
    source = models.CharField(max_length=1000, blank=True)
    text = models.TextField(blank=True)

    class Meta:
        ordering = ["question_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["question", "position"], name="gold_reference_position_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.source}: {self.text[:40]}"


class ExpectedSource(models.Model):
    """One expected source document of a question (SPEC §4.3)."""

    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="expected_sources")
    source = models.CharField(max_length=1000)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["question", "source"], name="expected_source_unique"),
        ]

    def __str__(self) -> str:
        return self.source


class Run(models.Model):
    """One system configuration answering the project's questions (SPEC §2)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="runs")
    # One URL path segment: no "/", see labeling.names.
    name = models.CharField(max_length=200, validators=[validate_run_name])
    # Free metadata (prompt, model, chunking…): never scored, so JSON is fine here.
    metadata = models.JSONField(default=dict, blank=True)
    # How many human reviewers each claim needs (SPEC §4.4): a claim with this many
    # current human labels leaves every other reviewer's queue.
    overlap = models.PositiveSmallIntegerField(default=1)
    # Whether a reviewer sees others' labels on a claim before giving their own;
    # None follows the overlap (blind when overlap > 1), see ``is_blind``.
    blind = models.BooleanField(null=True, blank=True)
    # Who works on the run; nobody assigned: every member who may label.
    reviewers = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="assigned_runs",
                                       through="Assignment")
    # A lead may promote one judge (a reviewer of kind ``model``) whose labels then
    # count as a human's on this run (SPEC §4.4), and choose a judge whose
    # UNSUPPORTED verdicts come first in every reviewer's queue (issue 12).
    promoted_judge = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                       related_name="+")
    queue_judge = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    # A versioned cache of how many cited claims the run has (the denominator of every
    # progress bar), so a page need not count a 50k-claim run: ``claims_version`` goes up
    # in the transaction of every write that adds, removes or re-cites claims
    # (``services.claims_changed``); ``cited_claims`` is valid only while
    # ``cited_claims_version`` equals it (``selectors.run_cited_claims``). Not a counter
    # kept up by hand: a stale or missing value is recounted, never trusted.
    claims_version = models.PositiveIntegerField(default=0, editable=False)
    cited_claims = models.PositiveIntegerField(null=True, blank=True, editable=False)
    cited_claims_version = models.PositiveIntegerField(null=True, blank=True, editable=False)
    # Reviewer quality (issue 25, ``labeling.quality``): the share of each assigned
    # reviewer's work the queue gives to hidden gold checks (0–1, default 5 %);
    # feedback shows a reviewer the gold label and reason once they labeled a gold
    # claim; the qualification rule (both set, or neither: no rule) is "the lower
    # bound of the Wilson 95 % interval of gold accuracy ≥ qualify_min_lower after
    # ≥ qualify_min_gold gold claims"; with ``exclude_unqualified`` the labels of a
    # reviewer below it do not count in the run's figures until they qualify.
    gold_rate = models.FloatField(default=0.05)
    feedback = models.BooleanField(default=False)
    qualify_min_lower = models.FloatField(null=True, blank=True)
    qualify_min_gold = models.PositiveIntegerField(null=True, blank=True)
    exclude_unqualified = models.BooleanField(default=False)

    class Meta:
        ordering = ["project_id", "created_at", "name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="run_name_unique_per_project"),
            models.CheckConstraint(condition=Q(overlap__gte=1, overlap__lte=5), name="run_overlap_1_to_5"),
            models.CheckConstraint(condition=Q(gold_rate__gte=0, gold_rate__lte=1), name="run_gold_rate_0_to_1"),
            models.CheckConstraint(
                condition=Q(qualify_min_lower__isnull=True, qualify_min_gold__isnull=True)
                | Q(qualify_min_lower__gte=0, qualify_min_lower__lte=1, qualify_min_gold__gte=1),
                name="run_qualification_rule_whole"),
        ]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("run_detail", kwargs={"project_slug": self.project.slug, "run_name": self.name})

    @property
    def is_blind(self) -> bool:
        """Blind labeling: on when set, else on exactly when each claim needs more than one reviewer."""
        return self.blind if self.blind is not None else self.overlap > 1


class Provenance(models.Model):
    """Where a run's answers and labels came from, when they are a public
    dataset's (issue 26, ``import_dataset``): the dataset, the repository
    commit, its licence, and the imported files with their SHA-256. Shown on
    the dataset card of ``export_dataset`` and kept by backups. One per run;
    a re-import replaces it."""

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="provenance")
    # The importer's format name (``expertqa``, ``ragtruth`` …).
    format = models.CharField(max_length=32)
    # The dataset as its paper names it, e.g. "ExpertQA (Malaviya et al., NAACL 2024)".
    source = models.CharField(max_length=300)
    url = models.CharField(max_length=1000)
    # The commit of ``url`` the files come from (as the importer was told, or the one it was written against).
    commit = models.CharField(max_length=64, blank=True)
    licence = models.CharField(max_length=200)
    # [{"name": file name, "sha256": hex}] of the imported files: free metadata, never scored.
    files = models.JSONField(default=list, blank=True)
    # What the import keeps and what it loses (how the source's labels became Citelab's).
    note = models.TextField(blank=True)
    imported_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "provenances"

    def __str__(self) -> str:
        return f"{self.source} @ {self.commit[:12] or '?'} ({self.licence})"


class Assignment(models.Model):
    """``reviewer`` works on ``run`` (their queue holds its claims)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="assignments")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments")

    class Meta:
        ordering = ["run_id", "reviewer_id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "reviewer"], name="one_assignment_per_reviewer"),
        ]

    def __str__(self) -> str:
        return f"{self.reviewer_id} on run {self.run_id}"


class Answer(models.Model):
    """One run's response to one question (SPEC §2).

    ``question_key`` is a copy of the question's ``question_id`` (which never
    changes), set by whoever creates the answer: a run's answers are listed
    and walked in that order, and the copy lets one index
    ``(run, question_key)`` serve it without a join.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="answers")
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="answers")
    question_key = models.CharField(max_length=200, editable=False)
    text = models.TextField()
    # SHA-256 of the imported content: re-importing the same answer is a no-op.
    content_hash = models.CharField(max_length=64)
    # The answer's id where it came from (a trace id of import_traces); "" when none. Not part of its content.
    external_id = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run_id", "question_key"]
        constraints = [
            models.UniqueConstraint(fields=["run", "question"], name="one_answer_per_run_and_question"),
            models.UniqueConstraint(fields=["run", "question_key"], name="question_key_unique_per_run"),
            models.CheckConstraint(condition=~Q(question_key=""), name="answer_question_key_set"),
        ]

    def __str__(self) -> str:
        return f"{self.run_id}:{self.question_key}"


class Passage(models.Model):
    """One retrieved passage sent to the model with an answer (SPEC §2)."""

    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="passages")
    passage_id = models.CharField(max_length=200)
    position = models.PositiveIntegerField()
    source = models.CharField(max_length=1000, blank=True)
    text = models.TextField(blank=True)

    class Meta:
        ordering = ["answer_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["answer", "passage_id"], name="passage_id_unique_per_answer"),
        ]

    def __str__(self) -> str:
        return self.passage_id


class Claim(models.Model):
    """One atomic assertion of an answer, ordered by ``index`` (SPEC §2, §3).

    ``revision`` grows each time the claim's text or citations change; labels
    given on an older revision are stale. ``start``/``end`` locate the claim in
    the answer text when it is a verbatim substring (for marking it in place).
    """

    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="claims")
    index = models.PositiveIntegerField()
    text = models.TextField()
    start = models.PositiveIntegerField(null=True, blank=True)
    end = models.PositiveIntegerField(null=True, blank=True)
    revision = models.PositiveIntegerField(default=1)
    # False: "not a factual claim" (a greeting, a hedge, the question restated). It
    # leaves every denominator, as an abstention's claims do (SPEC §4.1, §4.3b).
    factual = models.BooleanField(default=True)

    class Meta:
        ordering = ["answer_id", "index"]
        constraints = [
            models.UniqueConstraint(fields=["answer", "index"], name="claim_index_unique_per_answer"),
            models.CheckConstraint(
                condition=Q(start__isnull=True, end__isnull=True)
                | Q(start__isnull=False, end__isnull=False, end__gte=F("start")),
                name="claim_offsets_ordered",
            ),
        ]

    def __str__(self) -> str:
        return self.text[:80]


class Citation(models.Model):
    """A link from a claim to a passage, optionally with a quoted span (SPEC §2).

    A cited id absent from the answer's passages is kept with ``passage`` null
    and ``fabricated`` true (SPEC §4.2): never silently dropped.
    """

    claim = models.ForeignKey(Claim, on_delete=models.CASCADE, related_name="citations")
    passage = models.ForeignKey(Passage, null=True, blank=True, on_delete=models.CASCADE, related_name="citations")
    position = models.PositiveIntegerField()
    # The passage id exactly as the answer cites it (kept for fabricated ids);
    # a citation given by source alone keeps its source here, hence 1000.
    cited_id = models.CharField(max_length=1000)
    span = models.TextField(blank=True)
    fabricated = models.BooleanField(default=False)

    class Meta:
        ordering = ["claim_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["claim", "position"], name="citation_position_unique"),
            models.CheckConstraint(
                condition=Q(fabricated=True, passage__isnull=True) | Q(fabricated=False, passage__isnull=False),
                name="citation_fabricated_iff_no_passage",
            ),
        ]

    def __str__(self) -> str:
        return self.cited_id


class LabelValue(models.TextChoices):
    """The label values of SPEC §3, as ``scoring.labels`` (their one home) spells them."""

    SUPPORTED = labels.SUPPORTED
    UNSUPPORTED = labels.UNSUPPORTED
    UNCITED = labels.UNCITED


class Label(models.Model):
    """One reviewer's verdict on one claim, with a justification (SPEC §2, §3).

    Every label is kept as history. ``is_current`` marks the one current label
    per (claim, reviewer); a label given on an older claim revision is stale
    (``is_stale``) and no longer current, so the claim is back in the queue.
    """

    claim = models.ForeignKey(Claim, on_delete=models.CASCADE, related_name="labels")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="labels")
    value = models.CharField(max_length=16, choices=LabelValue.choices)
    justification = models.TextField(blank=True)
    claim_revision = models.PositiveIntegerField()
    is_current = models.BooleanField(default=True)
    is_stale = models.BooleanField(default=False)
    # The reviewer's label this one replaced as current: what undo brings back.
    supersedes = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # The judge run that gave this label (a reviewer of kind ``model``): two runs of
    # one judge are compared through it (self-agreement, issue 12).
    judge_run = models.ForeignKey("JudgeRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="labels")
    # The number of the project's guidelines version in force when the label was saved
    # (``Guidelines``; null: the project had none, or the label came from a file).
    guidelines_version = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["claim_id", "-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["claim", "reviewer"], condition=Q(is_current=True), name="one_current_label_per_reviewer"
            ),
            models.CheckConstraint(condition=~Q(is_current=True, is_stale=True), name="stale_label_not_current"),
        ]
        indexes = [
            models.Index(fields=["reviewer", "is_current"], name="label_reviewer_current"),
        ]

    def __str__(self) -> str:
        return f"{self.value} by {self.reviewer_id} on claim {self.claim_id}"


class ClaimLease(models.Model):
    """A short reservation of one claim for one reviewer in a run (issue 20 §3).

    The queue (``labeling.queue``) takes it when it hands ``claim`` to
    ``reviewer``, so reviewers working at once get different claims: a claim
    counts toward its run's ``overlap`` with its current human labels plus the
    unexpired leases of other reviewers. One lease per reviewer and run (the
    unique constraint): handing the reviewer another claim moves it there,
    which releases the last one (a skip); their label on the claim releases
    it (``services.label_save``); else it ends at ``expires_at``
    (``settings.CITELAB_LEASE_SECONDS`` after it was taken). Expired rows
    are left to be overwritten: at most one per reviewer and run.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    claim = models.ForeignKey(Claim, on_delete=models.CASCADE, related_name="leases")
    expires_at = models.DateTimeField()

    class Meta:
        ordering = ["run_id", "reviewer_id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "reviewer"], name="one_lease_per_reviewer_and_run"),
        ]

    def __str__(self) -> str:
        return f"claim {self.claim_id} for {self.reviewer_id} until {self.expires_at:%H:%M:%S}"


class Judgment(models.TextChoices):
    """How far one cited passage carries its claim (SPEC §4.3b; Liu, Zhang & Liang 2023), as
    ``scoring.judgments`` (their one home) spells them."""

    FULL = judgments.FULL, "FULL: this passage alone entails the claim"
    PARTIAL = judgments.PARTIAL, "PARTIAL: it carries part of the claim"
    NONE = judgments.NONE, "NONE: it does not support the claim"
    UNJUDGEABLE = judgments.UNJUDGEABLE, "UNJUDGEABLE: passage inaccessible or claim unclear"


class CitationJudgment(models.Model):
    """One reviewer's judgment of one citation of a claim, with optional evidence (SPEC §4.3b).

    Kept like labels: every judgment stays as history; ``is_current`` marks the
    one current judgment per (citation, reviewer); one given on an older claim
    revision is stale (``is_stale``) and no longer current. ``evidence`` holds
    the passage words that carry the claim (may be blank).
    """

    citation = models.ForeignKey(Citation, on_delete=models.CASCADE, related_name="judgments")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="judgments")
    judgment = models.CharField(max_length=16, choices=Judgment.choices)
    evidence = models.TextField(blank=True)
    claim_revision = models.PositiveIntegerField()
    is_current = models.BooleanField(default=True)
    is_stale = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["citation_id", "-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["citation", "reviewer"], condition=Q(is_current=True),
                                    name="one_current_judgment_per_reviewer"),
            models.CheckConstraint(condition=~Q(is_current=True, is_stale=True), name="stale_judgment_not_current"),
            models.CheckConstraint(condition=Q(judgment__in=judgments.JUDGMENTS), name="judgment_value_known"),
        ]

    def __str__(self) -> str:
        return f"{self.judgment} by {self.reviewer_id} on citation {self.citation_id}"


class Adjudication(models.Model):
    """A lead's final label for a claim its reviewers disagree on, with a reason (SPEC §4.4).

    It is the label that counts for the claim, whatever the reviewers say. Like
    labels it is kept as history: ``is_current`` marks the one in force; a claim
    edit (split, merge, reword) ends it, as it makes the labels stale.
    """

    claim = models.ForeignKey(Claim, on_delete=models.CASCADE, related_name="adjudications")
    lead = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="adjudications")
    value = models.CharField(max_length=16, choices=LabelValue.choices)
    reason = models.TextField()
    claim_revision = models.PositiveIntegerField()
    is_current = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["claim_id", "-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["claim"], condition=Q(is_current=True),
                                    name="one_current_adjudication_per_claim"),
            models.CheckConstraint(condition=Q(value__in=[labels.SUPPORTED, labels.UNSUPPORTED]),
                                   name="adjudication_value_judged"),
        ]

    def __str__(self) -> str:
        return f"{self.value} adjudicated by {self.lead_id} on claim {self.claim_id}"


class LabelTableVersion(models.Model):
    """An immutable, content-hashed snapshot of a run's label table (SPEC §2).

    ``sha256`` is the hash of the canonical serialization stored in ``file``;
    reading the file back verifies it. Versions are numbered 1, 2, … per run.
    """

    run = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="versions")
    number = models.PositiveIntegerField()
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                               related_name="label_table_versions")
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    row_count = models.PositiveIntegerField()
    label_count = models.PositiveIntegerField()
    sha256 = models.CharField(max_length=64)
    # label_tables/<project slug, ≤ 64>/run-<id>/v<n>-<hash>.jsonl: 100 (the default) is too short.
    file = models.FileField(upload_to="label_tables/", max_length=255)

    class Meta:
        ordering = ["run_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["run", "number"], name="version_number_unique_per_run"),
            models.CheckConstraint(condition=Q(number__gte=1), name="version_number_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.run} v{self.number}"


class AuditAction(models.TextChoices):
    """What an audit event records someone did (issue 14: who labeled, edited,
    split, merged, adjudicated, snapshotted, imported, exported what and when)."""

    LABEL = "label", "labeled"
    JUDGE = "judge", "judged citations"
    UNDO = "undo", "undid a label"
    EDIT = "edit", "edited a claim"
    SPLIT = "split", "split a claim"
    MERGE = "merge", "merged claims"
    ADJUDICATE = "adjudicate", "adjudicated"
    SNAPSHOT = "snapshot", "saved a version"
    IMPORT_ANSWERS = "import_answers", "imported answers"
    IMPORT_LABELS = "import_labels", "imported labels"
    EXPORT = "export", "exported"
    RENAME = "rename", "renamed the run"
    DELETE = "delete", "deleted the run"
    CREATE = "create", "created the run"
    SAMPLE = "sample", "drew a sample"
    GOLD = "gold", "marked gold claims"
    SEND_BACK = "send_back", "sent a label back"
    REWORK = "rework", "answered a send-back"


class AuditEvent(models.Model):
    """One thing someone did to a run, recorded by the service (or view) that
    did it, in the same transaction (``labeling.audit``); never changed after.

    The log outlives what it names: ``actor_name`` and ``run_name`` are the
    names at the time (a deleted run's events keep its name, ``run`` null), and
    ``claim_id`` is a plain id, as a merge deletes claims. ``actor`` is null
    for the command line. ``detail`` is free metadata for the reader (the label
    value and the one it replaced, counts, file names): never scored.
    """

    at = models.DateTimeField(default=timezone.now, editable=False)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="+")
    actor_name = models.CharField(max_length=150, blank=True)
    action = models.CharField(max_length=16, choices=AuditAction.choices)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="audit_events")
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit_events")
    run_name = models.CharField(max_length=200)
    claim_id = models.PositiveBigIntegerField(null=True, blank=True)
    target = models.CharField(max_length=300, blank=True)
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(action__in=AuditAction.values), name="audit_action_known"),
        ]
        indexes = [
            models.Index(fields=["run", "-at", "-id"], name="audit_run_time"),
            models.Index(fields=["project", "run_name", "-at"], name="audit_project_run_name"),
        ]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_name or 'command line'} {self.action} {self.target}"


class Sample(models.Model):
    """The run's probability sample of answers for human labels (SPEC §4.6):
    ``members`` are the first answers of a permutation of the run's answers
    (``question_id`` order) seeded with ``seed``, in that order. Growing it takes
    the next answers of the same permutation: earlier members stay.
    ``target_half_width``: a lead's stopping point for the support estimate's
    interval (issue 23 §5), null when none is set."""

    # One sample per run (a constraint, not a OneToOneField: the backup follows foreign keys).
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="samples")
    seed = models.PositiveBigIntegerField()
    target_half_width = models.FloatField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run"], name="one_sample_per_run"),
            models.CheckConstraint(condition=Q(target_half_width__gt=0, target_half_width__lt=0.5)
                                   | Q(target_half_width__isnull=True), name="sample_target_half_width_range"),
        ]

    def __str__(self) -> str:
        return f"sample of run {self.run_id} (seed {self.seed})"


class SampleMember(models.Model):
    """One answer of a run's sample, at 1-based ``position`` in sample order."""

    sample = models.ForeignKey(Sample, on_delete=models.CASCADE, related_name="members")
    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="sample_memberships")
    position = models.PositiveIntegerField()

    class Meta:
        ordering = ["sample_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["sample", "position"], name="sample_position_unique"),
            models.UniqueConstraint(fields=["sample", "answer"], name="sample_answer_once"),
        ]

    def __str__(self) -> str:
        return f"answer {self.answer_id} at {self.position} of sample {self.sample_id}"


class JudgeRunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class JudgeSource(models.TextChoices):
    ENDPOINT = "endpoint", "OpenAI-compatible endpoint"
    IMPORT = "import", "Imported verdicts"


class JudgeRun(models.Model):
    """One pass of an automated labeler (a reviewer of kind ``model``) over a
    run: what it was (model, prompt and its SHA-256, temperature, endpoint, or
    the imported file) so two passes can be compared, and what it did.

    The counts are the pass's own record, written by the job as it goes (a
    job log, not a figure derived from labels): ``answers_total`` answers to
    judge, ``answers_done`` judged, ``answers_failed`` whose request or reply
    failed (nothing written for them); per claim ``claims_labeled``,
    ``claims_missing`` (no verdict for its id), ``claims_duplicated`` (two
    verdicts for its id), ``claims_malformed`` (a verdict that is not a
    valid label) and ``claims_changed`` (edited while the judge read it);
    ``verdicts_unknown`` counts verdicts for ids that were not asked about.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="judge_runs")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="judge_runs")
    started_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    source = models.CharField(max_length=16, choices=JudgeSource.choices, default=JudgeSource.ENDPOINT)
    model = models.CharField(max_length=200, blank=True)
    base_url = models.CharField(max_length=1000, blank=True)
    prompt = models.TextField(blank=True)
    prompt_sha256 = models.CharField(max_length=64, blank=True)
    temperature = models.FloatField(null=True, blank=True)
    answer_limit = models.PositiveIntegerField(null=True, blank=True)
    relabel = models.BooleanField(default=False)
    # Free description of an import (file name, format, threshold): never scored.
    details = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=JudgeRunStatus.choices, default=JudgeRunStatus.QUEUED)
    error = models.TextField(blank=True)
    answers_total = models.PositiveIntegerField(default=0)
    answers_done = models.PositiveIntegerField(default=0)
    answers_failed = models.PositiveIntegerField(default=0)
    claims_labeled = models.PositiveIntegerField(default=0)
    claims_missing = models.PositiveIntegerField(default=0)
    claims_duplicated = models.PositiveIntegerField(default=0)
    claims_malformed = models.PositiveIntegerField(default=0)
    claims_changed = models.PositiveIntegerField(default=0)
    verdicts_unknown = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run_id", "created_at", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=JudgeRunStatus.values), name="judge_run_status_known"),
            models.CheckConstraint(condition=Q(answers_done__lte=F("answers_total") - F("answers_failed")),
                                   name="judge_run_processed_within_total"),
        ]

    def __str__(self) -> str:
        return f"{self.reviewer_id} on run {self.run_id} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status in (JudgeRunStatus.DONE, JudgeRunStatus.FAILED)

    @property
    def answers_processed(self) -> int:
        """Answers judged or failed: the progress bar's value."""
        return self.answers_done + self.answers_failed


class Guidelines(models.Model):
    """One version of a project's labeling guidelines (issue 25 §1): Markdown that the
    pages render with raw HTML off (``labeling.guidelines``). Every edit is a new
    version, numbered 1, 2, … per project; the latest is in force, and each label
    records the number it was made under (``Label.guidelines_version``)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="guidelines")
    number = models.PositiveIntegerField()
    text = models.TextField()
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["project", "number"], name="guidelines_number_unique_per_project"),
            models.CheckConstraint(condition=Q(number__gte=1), name="guidelines_number_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.project_id} guidelines v{self.number}"


class GoldSource(models.TextChoices):
    """Where a gold label came from (issue 25 §2)."""

    ADJUDICATION = "adjudication", "the lead's adjudication"
    LABEL = "label", "a lead's own label"
    FILE = "file", "a gold file (import_gold)"


class GoldClaim(models.Model):
    """A hidden gold check: a lead's known-right label for ``claim`` with a reason
    (issue 25 §2). The queue mixes gold claims into each assigned reviewer's work
    at ``Run.gold_rate`` (``labeling.queue``) and never shows them as gold; a
    reviewer's current label on one is scored against ``value``
    (``labeling.quality``). Kept like adjudications: ``is_current`` marks the one
    in force; unmarking, or a change of the claim (its labels go stale), ends it.
    ``run`` is the claim's run (the queue and the dashboard read a run's gold
    claims by it)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="gold_claims")
    claim = models.ForeignKey(Claim, on_delete=models.CASCADE, related_name="gold")
    value = models.CharField(max_length=16, choices=LabelValue.choices)
    reason = models.TextField()
    source = models.CharField(max_length=16, choices=GoldSource.choices)
    lead = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="+")
    claim_revision = models.PositiveIntegerField()
    is_current = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["claim_id", "-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["claim"], condition=Q(is_current=True), name="one_current_gold_per_claim"),
            models.CheckConstraint(condition=Q(value__in=[labels.SUPPORTED, labels.UNSUPPORTED]),
                                   name="gold_value_judged"),
            models.CheckConstraint(condition=Q(source__in=GoldSource.values), name="gold_source_known"),
        ]
        indexes = [models.Index(fields=["run", "is_current"], name="gold_run_current")]

    def __str__(self) -> str:
        return f"gold {self.value} on claim {self.claim_id}"


class Resolution(models.TextChoices):
    """How a send-back ended (issue 25 §4)."""

    RELABEL = "relabel", "relabeled"
    REPLY = "reply", "replied"
    CLAIM_CHANGED = "claim_changed", "the claim changed"


class SendBack(models.Model):
    """A lead sends ``reviewer``'s label on ``claim`` back for rework with a comment
    (issue 25 §4). While open (``resolved_at`` null) the claim comes first in that
    reviewer's queue with the comment shown; it is resolved when they relabel the
    claim (``services.label_save``) or reply, or when the claim changes (its labels
    go stale). One open send-back per claim and reviewer."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="send_backs")
    claim = models.ForeignKey(Claim, on_delete=models.CASCADE, related_name="send_backs")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="send_backs")
    label = models.ForeignKey(Label, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    lead = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="+")
    comment = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolution = models.CharField(max_length=16, choices=Resolution.choices, blank=True)
    reply = models.TextField(blank=True)

    class Meta:
        ordering = ["run_id", "created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["claim", "reviewer"], condition=Q(resolved_at__isnull=True),
                                    name="one_open_send_back_per_claim_and_reviewer"),
            models.CheckConstraint(
                condition=Q(resolved_at__isnull=True, resolution="")
                | Q(resolved_at__isnull=False, resolution__in=Resolution.values),
                name="send_back_resolution_whole"),
        ]
        indexes = [models.Index(fields=["run", "reviewer", "resolved_at"], name="send_back_open")]

    def __str__(self) -> str:
        return f"claim {self.claim_id} sent back to {self.reviewer_id}"


class ApiToken(models.Model):
    """A project token (issue 27): ``Authorization: Bearer <token>`` on the HTTP
    API acts as ``reviewer`` in ``project`` with ``role`` at most (never more
    than the reviewer's membership role at the time of the request).

    The token itself is shown once, when it is made, and never stored: only
    its SHA-256 (``digest``, hex) and its first characters (``prefix``, to
    tell tokens apart in a list). A token carries 256 random bits, so a fast
    hash is enough (there is nothing to brute-force). It stops working at
    ``expires_at`` or when revoked; ``last_used_at`` is refreshed at most once
    a minute. ``name`` labels every audit event of the writes made with it.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="api_tokens")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    role = models.CharField(max_length=16, choices=Role.choices)
    prefix = models.CharField(max_length=16)
    digest = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["project_id", "-created_at", "-id"]
        constraints = [
            # A revoked token keeps its name in the audit log; a new token may take it.
            models.UniqueConstraint(fields=["project", "name"], condition=Q(revoked_at__isnull=True),
                                    name="token_name_unique_while_active"),
            models.CheckConstraint(condition=Q(role__in=Role.values), name="token_role_known"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"


class WebhookEvent(models.TextChoices):
    """What a webhook can be told about (issue 27 §3)."""

    LABEL_SAVED = "label.saved", "a label was saved"
    CLAIM_ADJUDICATED = "claim.adjudicated", "a lead adjudicated a claim"
    RUN_FULLY_LABELED = "run.fully_labeled", "every cited claim of a run has its label"
    VERSION_SAVED = "version.saved", "a label table version was saved"
    JUDGE_RUN_FINISHED = "judge_run.finished", "a judge run finished"
    GATE_FAILED = "gate.failed", "a CI gate failed"


class Webhook(models.Model):
    """A URL of a project told about ``events`` (a list of ``WebhookEvent``
    values: configuration, never scored), each delivery signed with
    ``secret`` (HMAC-SHA256; kept in clear: it is needed to sign)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=2000)
    events = models.JSONField(default=list)
    secret = models.CharField(max_length=100)
    active = models.BooleanField(default=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project_id", "created_at", "id"]

    def __str__(self) -> str:
        return self.url


class DeliveryStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    DELIVERED = "delivered", "Delivered"
    FAILED = "failed", "Failed"
    REFUSED = "refused", "Refused (not allowed)"


class WebhookDelivery(models.Model):
    """One event sent (or to be sent) to one webhook: the body as sent, and its
    log: ``attempts`` made, the last HTTP ``response_status`` or ``error``."""

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=32)
    payload = models.JSONField(default=dict)
    status = models.CharField(max_length=16, choices=DeliveryStatus.choices, default=DeliveryStatus.QUEUED)
    attempts = models.PositiveSmallIntegerField(default=0)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["webhook_id", "-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=DeliveryStatus.values), name="delivery_status_known"),
        ]

    def __str__(self) -> str:
        return f"{self.event} to {self.webhook_id} ({self.status})"


class SsoIdentity(models.Model):
    """The account at the single sign-on provider of a reviewer it created
    (``labeling.sso``): ``subject`` is ``"<issuer>|<sub>"``, what later logins
    find the reviewer by (never their name or e-mail)."""

    reviewer = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_identity")
    subject = models.CharField(max_length=300, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "single sign-on identity"
        verbose_name_plural = "single sign-on identities"

    def __str__(self) -> str:
        return self.subject

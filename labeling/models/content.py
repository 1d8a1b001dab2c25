"""What is labeled (SPEC §2): projects and their members, questions with gold, runs,
answers, passages, claims and citations."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Count, F, OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce
from django.urls import reverse
from django.utils import timezone

from labeling.names import validate_project_slug, validate_question_id, validate_run_name


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
    """A member's role in a project (SPEC §2): what they may do there (``permissions.may``)."""

    LEAD = "lead", "Lead"
    REVIEWER = "reviewer", "Reviewer"
    VIEWER = "viewer", "Viewer"


class Membership(models.Model):
    """``reviewer`` is a member of ``project`` with ``role`` (SPEC §2 "role").

    The default role is ``lead``: every member had a lead's rights before roles
    existed, so ``project.members.add(user)`` keeps meaning what it meant. The
    members page and ``add_reviewer`` always name the role.
    """

    project = models.ForeignKey("labeling.Project", on_delete=models.CASCADE, related_name="memberships")
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

    project = models.ForeignKey("labeling.Project", on_delete=models.CASCADE, related_name="questions")
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

    question = models.ForeignKey("labeling.Question", on_delete=models.CASCADE, related_name="gold_ids")
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

    question = models.ForeignKey("labeling.Question", on_delete=models.CASCADE, related_name="gold_references")
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

    question = models.ForeignKey("labeling.Question", on_delete=models.CASCADE, related_name="expected_sources")
    source = models.CharField(max_length=1000)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["question", "source"], name="expected_source_unique"),
        ]

    def __str__(self) -> str:
        return self.source


class Run(models.Model):
    """One system configuration answering the project's questions (SPEC §2)."""

    project = models.ForeignKey("labeling.Project", on_delete=models.CASCADE, related_name="runs")
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
    # UNSUPPORTED verdicts come first in every reviewer's queue (SPEC §4.4).
    promoted_judge = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                       related_name="+")
    queue_judge = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    # A versioned cache of how many cited claims the run has (the denominator of every
    # progress bar), so a page need not count a 50k-claim run: ``claims_version`` goes up
    # in the transaction of every write that adds, removes or re-cites claims
    # (``runs.claims_changed``); ``cited_claims`` is valid only while
    # ``cited_claims_version`` equals it (``tallies.run_cited_claims``). Not a counter
    # kept up by hand: a stale or missing value is recounted, never trusted.
    claims_version = models.PositiveIntegerField(default=0, editable=False)
    cited_claims = models.PositiveIntegerField(null=True, blank=True, editable=False)
    cited_claims_version = models.PositiveIntegerField(null=True, blank=True, editable=False)
    # Reviewer quality (SPEC §4.4, ``labeling.team.quality``): the share of each assigned
    # reviewer's work the queue gives to hidden gold checks (0–1, default 5 %);
    # feedback shows a reviewer the gold label and reason once they labeled a gold
    # claim; the qualification rule (both set, or neither: no rule) is "the lower
    # bound of the Wilson 95 % interval of gold accuracy ≥ qualify_min_lower after
    # ≥ qualify_min_gold gold claims"; with ``exclude_unqualified`` the labels of a
    # reviewer below it do not count in the run's figures until they qualify
    # (``labeling.models.counted.run_exclusion``).
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
    dataset's (SPEC §6, ``import_dataset``): the dataset, the repository
    commit, its licence, and the imported files with their SHA-256. Shown on
    the dataset card of ``export_dataset`` and kept by backups. One per run;
    a re-import replaces it."""

    run = models.OneToOneField("labeling.Run", on_delete=models.CASCADE, related_name="provenance")
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


class LabelStateStamp(models.Model):
    """One step of a run's label state (SPEC §7): a row is added in the
    transaction of every write that can change a figure of the run — labels,
    citation judgments, adjudications, factual marks, gold checks,
    send-backs, samples, members and assignments, a claim's text
    (``labeling.runs.labels_changed``). The run's state is its newest
    stamp's id; with the run's own row it keys the figures computed once per
    state (``labeling.scores.figure_cache``). ``claim``: the one claim whose
    labels the write may have changed (a label, an undo, a stale mark), or
    null when it may have changed any (an import, a judge run, a project-wide
    write): the run's label table is brought up to date from it
    (``labeling.exports.current_labels``). A plain id, not a foreign key: a
    stamp locks nothing beyond its run, and outlives a merged-away claim.
    ``labels``: False when the write changed no label and no claim's factual
    mark (members, roles, assignments, samples, project settings): the label
    table has nothing to read again for it.

    Rows added, never updated: a label save adds its stamp after locking its
    claim while splits, merges and imports lock the run's row and then the
    claims, and a counter updated in place (on the run's row, or a row of its
    own) made them wait for each other in a circle. Inserting a row waits
    for no one (its run is only key-share locked). A stamp becomes visible
    when its write commits, with the write."""

    run = models.ForeignKey("labeling.Run", on_delete=models.CASCADE, related_name="label_stamps")
    claim = models.BigIntegerField(null=True, blank=True)
    labels = models.BooleanField(db_default=True)

    class Meta:
        indexes = [models.Index(fields=["run", "-id"], name="label_stamp_run_newest")]

    def __str__(self) -> str:
        return f"run {self.run_id} label state {self.pk}"


# Stamps counted below the newest (``labeling.scores.figure_cache``' docstring): a write committing
# later than this many newer stamps of its run would go unseen until the next write.
LATE_STAMP_WINDOW = 10_000


def label_state() -> dict[str, Subquery]:
    """The label state of the run at ``OuterRef("pk")`` as two annotations for
    :func:`labeling.scores.figure_cache.run_state_of`: ``label_state``, its
    newest stamp's id (None before the first), and ``label_window``, how many
    of its stamps lie within :data:`LATE_STAMP_WINDOW` ids below that one, it
    included (0 before the first). Annotate the runs a page loads with ``**label_state()``: an index
    probe and a short index range a run."""
    newest = LabelStateStamp.objects.filter(run=OuterRef("pk")).order_by("-id").values("id")[:1]
    newest_of_outer = LabelStateStamp.objects.filter(run=OuterRef(OuterRef("pk"))).order_by("-id").values("id")[:1]
    window = (LabelStateStamp.objects.filter(run=OuterRef("pk"), id__gt=Subquery(newest_of_outer) - LATE_STAMP_WINDOW)
              .order_by().values("run").annotate(n=Count("id")).values("n"))
    return {"label_state": Subquery(newest), "label_window": Coalesce(Subquery(window), Value(0))}


class Answer(models.Model):
    """One run's response to one question (SPEC §2).

    ``question_key`` is a copy of the question's ``question_id`` (which never
    changes), set by whoever creates the answer: a run's answers are listed
    and walked in that order, and the copy lets one index
    ``(run, question_key)`` serve it without a join.
    """

    run = models.ForeignKey("labeling.Run", on_delete=models.CASCADE, related_name="answers")
    question = models.ForeignKey("labeling.Question", on_delete=models.CASCADE, related_name="answers")
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

    answer = models.ForeignKey("labeling.Answer", on_delete=models.CASCADE, related_name="passages")
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

    answer = models.ForeignKey("labeling.Answer", on_delete=models.CASCADE, related_name="claims")
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

    claim = models.ForeignKey("labeling.Claim", on_delete=models.CASCADE, related_name="citations")
    passage = models.ForeignKey("labeling.Passage", null=True, blank=True, on_delete=models.CASCADE,
                                related_name="citations")
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

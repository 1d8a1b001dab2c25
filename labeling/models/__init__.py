"""Citelab's data model (SPEC §2), one module per area; every model is importable from
``labeling.models`` as Django expects.

Invariants live in the database (named constraints); writes go through the services
(``labeling.review``, ``labeling.runs``, ...); ``save()`` stays plain.
"""

from labeling.models.accounts import (  # noqa: F401
    COUNTED_KINDS,
    Reviewer,
    ReviewerKind,
)
from labeling.models.audit import (  # noqa: F401
    AuditAction,
    AuditEvent,
)
from labeling.models.content import (  # noqa: F401
    Answer,
    Citation,
    Claim,
    ExpectedSource,
    GoldPassageId,
    GoldReference,
    LabelStateStamp,
    Membership,
    Passage,
    Project,
    Provenance,
    Question,
    Role,
    Run,
)
from labeling.models.integrations import (  # noqa: F401
    ApiToken,
    DeliveryStatus,
    SsoIdentity,
    Webhook,
    WebhookDelivery,
    WebhookEvent,
)
from labeling.models.judges import (  # noqa: F401
    JudgeRun,
    JudgeRunStatus,
    JudgeSource,
)
from labeling.models.labels import (  # noqa: F401
    Adjudication,
    Assignment,
    CitationJudgment,
    ClaimLease,
    Judgment,
    Label,
    LabelTableVersion,
    LabelValue,
)
from labeling.models.team import (  # noqa: F401
    GoldClaim,
    GoldSource,
    Guidelines,
    Resolution,
    Sample,
    SampleMember,
    SendBack,
)

"""The SQL of the reviewer's queue (``labeling.review.queue``, whose docstring says the
rule and why these statements are written by hand): the queue rule's fragments and
the statements built from them. ``{name}`` placeholders are table names and the SQL
expressions of ``queue``, never user input.
"""

from __future__ import annotations

# The queue rule in SQL (the twins of works_on, awaits and unlabeled_claims), as fragments
# the statements below share. {run_id} and {claim_id} are SQL expressions of this module,
# never user input. Whether reviewer %s works on the run {run_id}:
_WORKS_ON_SQL = """(NOT EXISTS (SELECT 1 FROM {assignment} s WHERE s.run_id = {run_id})
       OR EXISTS (SELECT 1 FROM {assignment} s WHERE s.run_id = {run_id} AND s.reviewer_id = %s))"""


# Whether claim c awaits reviewer %s: factual, cited, no current label of theirs.
_AWAITS_SQL = """c.factual
      AND EXISTS (SELECT 1 FROM {citation} ci WHERE ci.claim_id = c.id)
      AND NOT EXISTS (SELECT 1 FROM {label} l WHERE l.claim_id = c.id AND l.reviewer_id = %s AND l.is_current)"""


# Whether claim {claim_id} still needs a reviewer: its current labels of kind %s plus the
# unexpired leases of reviewers other than %s (at %s) are fewer than the overlap %s.
_NEEDS_REVIEWER_SQL = """(SELECT COUNT(*) FROM {label} h JOIN {reviewer} r ON r.id = h.reviewer_id
           WHERE h.claim_id = {claim_id} AND h.is_current AND r.kind = %s)
        + (SELECT COUNT(*) FROM {lease} e WHERE e.claim_id = {claim_id} AND e.reviewer_id <> %s AND e.expires_at > %s)
        < %s"""


def _fragment(sql: str, **expressions: str) -> str:
    """``sql`` with its ``{run_id}``/``{claim_id}`` expressions filled in, table names left
    for ``str.format``."""
    for name, value in expressions.items():
        sql = sql.replace("{" + name + "}", value)
    return sql


# Answer a's run has a claim of reviewer %s's queue (unlabeled_claims); params: _queue_params.
_IN_QUEUE_SQL = f"""{_fragment(_WORKS_ON_SQL, run_id="a.run_id")}
  AND EXISTS (
    SELECT 1 FROM {{claim}} c
    WHERE c.answer_id = a.id AND {_AWAITS_SQL}
      AND {_fragment(_NEEDS_REVIEWER_SQL, claim_id="c.id")}
    {{fence}})"""


# The first answer of a run, in question order from a key on, with a claim of the
# reviewer's queue. {where} is one of _KEY_CONDITIONS, never user input.
_NEXT_ANSWER_SQL = f"""
SELECT a.id FROM {{answer}} a
WHERE a.run_id = %s {{where}}
  AND {_IN_QUEUE_SQL}
ORDER BY a.question_key
LIMIT 1
"""


_KEY_CONDITIONS = {"": "", "gt": "AND a.question_key > %s", "lte": "AND a.question_key <= %s"}


# The first answer of the run's probability sample (SPEC §4.6), in sample order,
# with a claim of the reviewer's queue (the test of _NEXT_ANSWER_SQL): sampled
# answers are served first. {where} is one of _POSITION_CONDITIONS: from the
# start, or after the sampled answer %s (none when it is not sampled).
_NEXT_SAMPLED_SQL = f"""
SELECT a.id FROM {{member}} m JOIN {{sample}} sa ON sa.id = m.sample_id JOIN {{answer}} a ON a.id = m.answer_id
WHERE sa.run_id = %s {{where}}
  AND {_IN_QUEUE_SQL}
ORDER BY m.position
LIMIT 1
"""


_AFTER_POSITION = "(SELECT p.position FROM {member} p WHERE p.sample_id = sa.id AND p.answer_id = %s)"


_POSITION_CONDITIONS = {"": "", "gt": f"AND m.position > {_AFTER_POSITION}"}


# The answer the walks {walks} (statements of _walk_sql, tried in turn: _first_of) find, with its
# question.
_WALK_ANSWER_SQL = """
SELECT {answer_cols}, {question_cols}
FROM {answer} a JOIN {question} q ON q.id = a.question_id
WHERE a.id = {walks}
"""


# What comes before the walk (_PRIORITY_SQL, {priority}) beside the answer the walks {walks}
# find (_WALK_ANSWER_SQL; NULLs when they find none), in one round trip.
_PRIORITY_WALK_SQL = """
SELECT p.sent_back, p.gold_open, {answer_cols}, {question_cols}
FROM ({priority}) p LEFT JOIN {answer} a ON a.id = {walks} LEFT JOIN {question} q ON q.id = a.question_id
"""


# The claims of answer %s in reviewer %s's queue (unlabeled_claims) with an index above %s, in
# index order: the queue of a run without a queue judge within one answer. {index} is the
# quoted column name, {select} the columns; params: _in_answer_params.
_IN_ANSWER_SQL = f"""
SELECT {{select}} FROM {{claim}} c JOIN {{answer}} a ON a.id = c.answer_id
WHERE c.answer_id = %s AND c.{{index}} > %s
  AND {_fragment(_WORKS_ON_SQL, run_id="a.run_id")}
  AND {_AWAITS_SQL}
  AND {_fragment(_NEEDS_REVIEWER_SQL, claim_id="c.id")}
ORDER BY c.{{index}}
LIMIT %s
"""


# What comes before the walk (_PRIORITY_SQL) and the claims of one answer in the queue
# (_IN_ANSWER_SQL) in one round trip: the one row of the first beside each claim of the
# second (NULLs when there is none). {priority} and {in_answer} are those statements.
_PRIORITY_IN_ANSWER_SQL = """
SELECT p.sent_back, p.gold_open, q.* FROM ({priority}) p LEFT JOIN ({in_answer}) q ON 1 = 1
ORDER BY q.{index}
"""


# Lease ``claim`` to a reviewer when it still exists (a merge may have deleted it since
# the queue read it) and its human labels plus other reviewers' unexpired leases are
# below the overlap; else write nothing. One lease per reviewer and run: taking one
# moves it (the last claim is released).
_LEASE_SQL = f"""
INSERT INTO {{lease}} (run_id, reviewer_id, claim_id, expires_at)
SELECT %s, %s, %s, %s
WHERE EXISTS (SELECT 1 FROM {{claim}} c WHERE c.id = %s)
  AND {_fragment(_NEEDS_REVIEWER_SQL, claim_id="%s")}
ON CONFLICT (run_id, reviewer_id) DO UPDATE SET claim_id = excluded.claim_id, expires_at = excluded.expires_at
"""


# The row lock of lease_take on PostgreSQL: a claim another transaction holds is skipped.
_LOCK_SQL = "SELECT c.id FROM {claim} c WHERE c.id = %s FOR NO KEY UPDATE SKIP LOCKED"


# A lease taken whatever the claim's overlap: a claim sent back to the reviewer, or a
# gold check (module docstring). One per reviewer and run, as every lease.
_LEASE_FORCE_SQL = """
INSERT INTO {lease} (run_id, reviewer_id, claim_id, expires_at) VALUES (%s, %s, %s, %s)
ON CONFLICT (run_id, reviewer_id) DO UPDATE SET claim_id = excluded.claim_id, expires_at = excluded.expires_at
"""


# What may come before the walk, in one round trip: the reviewer's oldest open
# send-back in the run (but the claim they skip), and how many gold claims of the run
# are still checks for them (cited, factual, not theirs, not labeled by them), when
# they work on the run.
_PRIORITY_SQL = f"""
SELECT
  (SELECT sb.claim_id FROM {{send_back}} sb
   WHERE sb.run_id = %s AND sb.reviewer_id = %s AND sb.resolved_at IS NULL AND sb.claim_id <> %s
   ORDER BY sb.created_at, sb.id LIMIT 1) AS sent_back,
  CASE WHEN {_fragment(_WORKS_ON_SQL, run_id="%s")}
  THEN (SELECT COUNT(*) FROM {{gold}} g JOIN {{claim}} c ON c.id = g.claim_id
        WHERE g.run_id = %s AND g.is_current AND (g.lead_id IS NULL OR g.lead_id <> %s)
          AND {_AWAITS_SQL})
  ELSE 0 END AS gold_open
"""


# The reviewer's current labels on the cited factual claims of the run, and how many of
# them are on current gold claims: how far their gold checks are behind the rate.
_GOLD_PACE_SQL = """
SELECT COUNT(*), COUNT(g.id)
FROM {label} l JOIN {claim} c ON c.id = l.claim_id JOIN {answer} a ON a.id = c.answer_id
LEFT JOIN {gold} g ON g.claim_id = c.id AND g.is_current
WHERE l.reviewer_id = %s AND l.is_current AND a.run_id = %s AND c.factual
  AND EXISTS (SELECT 1 FROM {citation} ci WHERE ci.claim_id = c.id {fence})
"""

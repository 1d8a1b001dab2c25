"""Names, slugs and ids that people type or files carry: one normal form and
one set of rules, applied the same way on every path (importers, commands,
admin, login form).

Normal form (:func:`normalize_name`): Unicode NFKC (so fullwidth ``ｒｅｖ０１``
is ``rev01`` and NFD ``é`` is NFC ``é``), format characters (Unicode category
Cf: zero-width space, soft hyphen, byte-order mark …) removed, surrounding
whitespace stripped. Two ids that look alike are then one id.

Rules (each ``validate_*`` raises ``ValidationError`` naming the value and the
reason; none of them touches the database):

- project slug: ASCII letters, digits, ``-`` and ``_`` (Django's
  ``validate_slug``, the ``<slug:…>`` of every URL), at most 64 characters;
- run name: 1–200 characters, no ``/`` or ``\\`` (a run name is one URL path
  segment; ``gpt4o/prompt-v2`` is refused, ``gpt4o-prompt-v2`` is fine), not
  ``.`` or ``..`` (browsers resolve those as paths), no control characters;
- question id: 1–200 characters, no control characters;
- imported reviewer name: 1–140 characters (room for the ``@imported``
  suffix, see ``labeling.importers.load``), no control characters;
- a login name (``add_reviewer``) also follows Django's username rule.

Free text (answers, claims, passages, justifications) is not normalized, but
must not hold what cannot be stored or written back to a workbook: see
:func:`text_problem`.
"""

from __future__ import annotations

import re
import unicodedata

from django.core.exceptions import ValidationError
from django.core.validators import MaxLengthValidator, validate_slug

MAX_SLUG_CHARS = 64
MAX_RUN_NAME_CHARS = 200
MAX_QUESTION_ID_CHARS = 200
MAX_IMPORTED_REVIEWER_CHARS = 140

# Tab, line feed and carriage return are ordinary in text; every other C0
# control character is refused: PostgreSQL cannot store NUL, and XML (hence
# XLSX) cannot hold the others, so such text could never be exported again.
_TEXT_CONTROLS = frozenset(chr(c) for c in range(0x20) if chr(c) not in "\t\n\r")


# What text_problem refuses, found by one regex search before its per-character walk
# (a 50k-claim import checks ~200k texts: the walk alone took a third of the import).
_TEXT_REFUSED = re.compile("[\x00\ud800-\udfff]")
_TEXT_REFUSED_IN_WRITING = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff]")


def normalize_name(value: str) -> str:
    """``value`` in normal form: NFKC, format characters (Cf) removed, stripped."""
    if value.isascii():
        # NFKC leaves ASCII as it is and no ASCII character is a format character.
        return value.strip()
    text = unicodedata.normalize("NFKC", value)
    text = "".join(char for char in text if unicodedata.category(char) != "Cf")
    return text.strip()


def text_problem(value: str, *, document: bool = False) -> str:
    """Why free text cannot be stored as it is, or "" when it can.

    Refused everywhere: NUL (PostgreSQL cannot store it; a spreadsheet's
    ``_x0000_`` escape decodes to it) and lone UTF-16 surrogates
    (``\\ud800``: not a character, cannot be encoded). Refused in what people
    write (questions, answers, claims, spans, justifications) but kept in a
    ``document`` text (a passage as it was sent to the model, which real
    scraped pages fill with stray BEL characters): the other C0 control
    characters except tab and line breaks.
    """
    if (_TEXT_REFUSED if document else _TEXT_REFUSED_IN_WRITING).search(value) is None:
        return ""
    for position, char in enumerate(value, start=1):
        if char == "\x00" or (char in _TEXT_CONTROLS and not document):
            return (f"contains the control character U+{ord(char):04X} at character {position}, "
                    "which cannot be stored: remove it")
        if "\ud800" <= char <= "\udfff":
            return (f"contains a lone surrogate U+{ord(char):04X} at character {position} (not a character): "
                    "fix the file's encoding")
    return ""


def _identifier(value: str, *, what: str, limit: int) -> None:
    if not value:
        raise ValidationError(f"the {what} is blank", code="blank")
    if value != normalize_name(value):
        raise ValidationError(
            f"the {what} {value!r} has look-alike or invisible characters: write it as {normalize_name(value)!r}",
            code="not_normalized")
    MaxLengthValidator(limit, message=f"the {what} is %(show_value)d characters long; the limit is "
                                      "%(limit_value)d")(value)
    if value.isascii() and value.isprintable():
        return
    for char in value:
        if unicodedata.category(char) in ("Cc", "Cs"):
            raise ValidationError(f"the {what} {value!r} contains the control character U+{ord(char):04X}",
                                  code="control_character")


def validate_project_slug(value: str) -> None:
    """A project slug as every URL reads it (module docstring)."""
    _identifier(value, what="project slug", limit=MAX_SLUG_CHARS)
    try:
        validate_slug(value)
    except ValidationError:
        raise ValidationError(
            f"the project slug {value!r} may hold only ASCII letters, digits, '-' and '_'", code="invalid_slug",
        ) from None


def validate_run_name(value: str) -> None:
    """A run name, one URL path segment (module docstring)."""
    _identifier(value, what="run name", limit=MAX_RUN_NAME_CHARS)
    if "/" in value or "\\" in value:
        raise ValidationError(
            f"the run name {value!r} contains '/' or '\\': a run name is one part of the run's address; "
            f"use '-' instead, e.g. {value.replace('/', '-').replace(chr(92), '-')!r}", code="run_name_slash")
    if value in (".", ".."):
        raise ValidationError(f"the run name {value!r} is reserved (it reads as a folder in an address)",
                              code="run_name_dots")


def validate_question_id(value: str) -> None:
    """A question id (module docstring)."""
    _identifier(value, what="question id", limit=MAX_QUESTION_ID_CHARS)


def validate_reviewer_name(value: str) -> None:
    """The name of an imported reviewer (module docstring)."""
    _identifier(value, what="reviewer name", limit=MAX_IMPORTED_REVIEWER_CHARS)


def clean(value: str, validator) -> str:
    """``value`` in normal form, checked by ``validator``; ValidationError else."""
    normal = normalize_name(value)
    validator(normal)
    return normal

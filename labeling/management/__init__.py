"""Citelab's management commands (``labeling.management.commands``)."""

from __future__ import annotations

from django.core.checks import Tags

# The system checks a data command runs before its work: every tag but
# ``urls``. Checking the URLconf imports every view, most of a command's
# start-up (SPEC §7), and a command serves no URL; ``manage.py check``,
# ``runserver`` and the demo still check it.
DATA_COMMAND_CHECKS = [tag for name, tag in vars(Tags).items() if not name.startswith("_") and tag != Tags.urls]

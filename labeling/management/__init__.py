"""Citelab's management commands (``labeling.management.commands``)."""

from __future__ import annotations

from django.core.checks import Tags

# The system checks a data command runs before its work: every tag but
# ``urls``, ``admin`` and ``templates``. Checking the URLconf imports every
# view, most of a command's start-up (SPEC §7); the admin's checks load the
# template engines to check the admin's pages. A command serves no URL and
# renders no page; ``manage.py check``, ``runserver`` and the demo still check them.
_PAGE_TAGS = {Tags.urls, Tags.admin, Tags.templates}
DATA_COMMAND_CHECKS = [tag for name, tag in vars(Tags).items() if not name.startswith("_") and tag not in _PAGE_TAGS]

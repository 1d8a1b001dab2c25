#!/usr/bin/env python
"""Django's command-line utility for Citelab."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "labeling.settings")
    if sys.argv[1:2] == ["demo"]:
        # The demo is a local try-out (README "Try it"): DEBUG on, so it needs no SECRET_KEY.
        # Everything else defaults to DEBUG off (labeling/settings.py).
        os.environ.setdefault("DEBUG", "1")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()

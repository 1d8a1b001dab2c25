"""``python manage.py import_project FILE [--keep-account-rights] [--keep-passwords]``:
restore a project from export_project's archive."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from labeling.backup.project import project_import
from labeling.management import DATA_COMMAND_CHECKS


class Command(BaseCommand):
    help = ("Restore a project archived by export_project, with its ids, labels, versions and files, all or "
            "nothing. Refused when the project or any of its ids already exists here, when any row of the archive "
            "points outside its project, or when the archive is damaged or too large (CITELAB_MAX_UNZIPPED_MB, "
            "CITELAB_MAX_IMPORT_ROWS). Reviewers are matched by login name to existing accounts, which are never "
            "changed; the others are created without staff or superuser rights and with an unusable password "
            "(set one with changepassword) unless --keep-account-rights / --keep-passwords.")
    requires_system_checks = DATA_COMMAND_CHECKS

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="archive written by export_project")
        parser.add_argument("--keep-account-rights", action="store_true",
                            help="give the accounts this restore creates the staff and superuser rights the "
                                 "archive records (default: none; existing accounts are never changed)")
        parser.add_argument("--keep-passwords", action="store_true",
                            help="give the accounts this restore creates the password hashes the archive records "
                                 "(default: an unusable password; existing accounts are never changed)")

    def handle(self, *args, file: str, keep_account_rights: bool, keep_passwords: bool, **options) -> None:
        try:
            with open(file, "rb") as source:
                summary = project_import(source=source, keep_account_rights=keep_account_rights,
                                         keep_passwords=keep_passwords)
        except FileNotFoundError:
            raise CommandError(f"no file {file!r}") from None
        except OSError as exc:
            raise CommandError(f"{file} cannot be read: {exc.strerror or exc}") from None
        except ValidationError as exc:
            reason = " ".join(exc.messages)
            raise CommandError(f"{file}: {reason}{'' if reason.endswith('.') else '.'} Nothing was imported.") from None
        self.stdout.write(self.style.SUCCESS(f"Imported {summary.describe()} from {file}"))
        if summary.accounts_matched:
            self.stdout.write(f"Used existing accounts (unchanged): {', '.join(summary.accounts_matched)}")
        if summary.accounts_created:
            how = ("with their archived passwords" if keep_passwords
                   else "without passwords: set one with `manage.py changepassword NAME`")
            rights = "" if keep_account_rights else ", no staff or superuser rights"
            self.stdout.write(f"Created accounts ({how}{rights}): {', '.join(summary.accounts_created)}")

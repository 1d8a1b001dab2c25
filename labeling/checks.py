"""System checks of Citelab's deployment settings (``manage.py check``)."""

from __future__ import annotations

from importlib.util import find_spec
from typing import Any

from django.conf import settings
from django.core.checks import Error, Tags, register


@register(Tags.files)  # tagged, so the data commands (DATA_COMMAND_CHECKS) run it too
def storage_backend_installed(app_configs: Any, **kwargs: Any) -> list[Error]:
    """``CITELAB_STORAGE=s3`` needs django-storages and boto3 (the ``s3`` extra):
    say so at start, not at the first snapshot."""
    backend = settings.STORAGES["default"]["BACKEND"]
    if backend.startswith("storages.") and (find_spec("storages") is None or find_spec("boto3") is None):
        return [Error(f"The file storage is {backend} (CITELAB_STORAGE=s3), but django-storages or boto3 is "
                      "not installed.", hint="pip install -e '.[s3]'", id="citelab.E001")]
    return []

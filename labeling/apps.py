from django.apps import AppConfig


class LabelingConfig(AppConfig):
    name = "labeling"
    verbose_name = "Citelab labeling"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from labeling import checks  # noqa: F401  (registers the system checks)
        from labeling.integrations import webhooks  # noqa: F401  (listens to the audit trail)



"""Forms shared by several views."""

from __future__ import annotations

from django.contrib.auth.forms import AuthenticationForm, UsernameField

from labeling.models import Reviewer


class ReviewerNameField(UsernameField):
    """A login name in the project's normal form (``labeling.names``): what
    ``add_reviewer`` stored is what the reviewer can type, fullwidth or not."""

    def to_python(self, value):
        value = super().to_python(value)
        return Reviewer.normalize_username(value) if isinstance(value, str) else value


class LoginForm(AuthenticationForm):
    username = ReviewerNameField(widget=AuthenticationForm.base_fields["username"].widget)

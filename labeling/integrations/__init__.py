"""Outside systems: API tokens, webhooks, single sign-on."""

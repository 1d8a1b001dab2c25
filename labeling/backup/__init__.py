"""A project's backup: export to one archive, restore from it."""

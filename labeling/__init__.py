"""Citelab's Django project package and its one app (STYLE §1)."""

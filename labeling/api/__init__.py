"""Citelab's HTTP API, ``/api/v1/`` (SPEC §6), built with django-ninja.

``labeling.api.main`` holds the API object (bearer-token auth, the rate
limit per token, JSON errors); each resource lives in its own module, as
thin as the page views: parse, check the token's role, call the service or
selector the pages and commands call, shape the JSON.
"""

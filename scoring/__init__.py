"""Citelab scoring: citation metrics from label tables (framework-free).

pandas/numpy in, dataclasses/DataFrames out. This package never imports
Django (``tests/test_layers.py``); ``labeling.exports.frames`` turns ORM rows
into the frames documented in each module (SPEC §4).
"""

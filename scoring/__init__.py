"""Citelab scoring: citation metrics from label tables (framework-free).

pandas/numpy in, dataclasses/DataFrames out. This package never imports
Django; ``labeling.exports`` is the one bridge that turns ORM rows into the
frames documented in each module (SPEC §4).
"""

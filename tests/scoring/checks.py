"""Assertions shared by the scoring tests."""

from __future__ import annotations

import math

import pandas as pd


def assert_no_nan(value: object) -> None:
    """Walk a ``to_dict()`` result: undefined values must be ``None``, never NaN or pd.NA (SPEC §4)."""
    if isinstance(value, dict):
        for item in value.values():
            assert_no_nan(item)
    elif isinstance(value, list):
        for item in value:
            assert_no_nan(item)
    else:
        assert not (isinstance(value, float) and math.isnan(value))
        assert value is not pd.NA

"""The metadata of result files: a JSON object, written with NumPy scalars and arrays and paths
converted to JSON values."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def json_default(o):
    """The JSON value of a NumPy scalar (its Python number), array (nested lists) or Path (its
    string); ``json.dumps(..., default=json_default)``.

    Raises TypeError for any other object."""
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON-serialisable: {type(o).__name__}")


def to_json(metadata) -> str:
    """``metadata`` as a JSON string (:func:`json_default` for NumPy values and paths).

    Raises TypeError for a value that has no JSON form."""
    return json.dumps(metadata, default=json_default)

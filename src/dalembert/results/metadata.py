"""The metadata of result files: a JSON object, written with NumPy scalars and arrays and paths
converted to JSON values."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import InputError

#: The longest metadata text a result file may hold (characters): a bound on what a crafted file
#: can make :func:`parse_json` do.
MAX_METADATA_CHARS = 64 << 20


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


def parse_json(text, where: str):
    """The JSON value of a file's metadata text; ``where`` names the file and the entry in
    messages.

    Raises InputError (one line) for text that is not JSON, longer than
    :data:`MAX_METADATA_CHARS`, or nested too deeply for the parser."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if not isinstance(text, str):
        raise InputError(f"{where} is not JSON text (a {type(text).__name__})")
    if len(text) > MAX_METADATA_CHARS:
        raise InputError(f"{where} is {len(text):,} characters of JSON, more than the "
                         f"{MAX_METADATA_CHARS:,} a dalembert file holds")
    try:
        return json.loads(text)
    except RecursionError:
        raise InputError(f"{where} is nested too deeply to be read (not metadata dalembert writes)") from None
    except ValueError as exc:
        raise InputError(f"{where} is not valid JSON ({exc})") from None


def checked_metadata(metadata, where: str = "metadata") -> dict:
    """A user's ``metadata=`` argument checked at the call: None (→ {}) or a dict with string
    keys whose values have a JSON form (:func:`to_json`), so that saving the result later cannot
    fail on it.

    Raises InputError (one line) naming the argument or the key that is not."""
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise InputError(f"{where} must be a dict of JSON values, e.g. {where}={{\"note\": ...}}; "
                         f"got {type(metadata).__name__} {_short(metadata)}")
    for key, value in metadata.items():
        if not isinstance(key, str):
            raise InputError(f"{where}: the key {_short(key)} is a {type(key).__name__}; keys must be strings")
        try:
            to_json(value)
        except (TypeError, ValueError) as exc:
            raise InputError(f"{where}[{key!r}] has no JSON form ({exc}): "
                             f"use numbers, strings, lists, dicts, NumPy arrays or paths") from None
        except RecursionError:
            raise InputError(f"{where}[{key!r}] is nested too deeply (or contains itself)") from None
    return metadata


def _short(x, n: int = 60) -> str:
    r = repr(x).replace("\n", " ")
    return r if len(r) <= n else r[:n - 1] + "…"

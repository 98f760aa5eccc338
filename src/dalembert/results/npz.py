"""The ``.npz`` result format: one array per node array (``t``, ``q``, …) and ``metadata``, a
JSON string; NumPy alone reads it back, no pickle."""
from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from .._io import atomic_path
from ..errors import InputError
from .metadata import parse_json, to_json


def save_arrays(path, arrays: dict, metadata: dict) -> Path:
    """Write named arrays and a JSON metadata object to ``path`` (``.npz`` appended if missing),
    atomically. Returns the path written."""
    path = Path(path)
    if path.suffix != ".npz":
        path = path.with_suffix(path.suffix + ".npz") if path.suffix else path.with_suffix(".npz")
    md = np.array(to_json(metadata))
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        np.savez(f, metadata=md, **arrays)
    return path


def read_npz(path):
    """(metadata, {name: array}) of an ``.npz`` result file (``t`` among the arrays, in the
    file's order), read into memory.

    Raises InputError for a file that is not a readable ``.npz`` with ``t`` and ``metadata``."""
    bad = f"{path} is not a dalembert trajectory file"
    try:
        z = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise InputError(f"{bad} (not a readable .npz, truncated or damaged: {exc})") from None
    if not hasattr(z, "files"):  # a plain .npy array
        raise InputError(f"{bad} (a single array, not an .npz)")
    try:
        with z:
            if "metadata" not in z or "t" not in z:
                raise InputError(f"{bad} (no 't'/'metadata')")
            md = parse_json(str(z["metadata"]), f"{path}: the metadata")
            arrays = {k: np.array(z[k]) for k in z.files if k != "metadata"}
    except InputError:
        raise
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, KeyError) as exc:
        raise InputError(f"{bad} (an array or the metadata cannot be read, truncated or damaged: "
                         f"{exc})") from None
    return md, arrays

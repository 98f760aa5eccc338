"""What a run returns and writes: the result objects and their file formats.

Modules (imports go down the list, never up; none imports :mod:`dalembert.engine`):

* :mod:`~dalembert.results.metadata` — the JSON form of the metadata (:func:`json_default`);
* :mod:`~dalembert.results.npz` — the ``.npz`` format (NumPy reads it without dalembert);
* :mod:`~dalembert.results.hdf5` — the HDF5 format (saved and streamed runs) and
  :class:`~dalembert.results.hdf5.DiskArray`;
* :mod:`~dalembert.results.trajectory` — :class:`Trajectory`, the nodes of one run;
* :mod:`~dalembert.results.ensemble` — :class:`Ensemble`, the nodes of B members;
* :mod:`~dalembert.results.files` — :func:`load`, either format, either object.
"""
from .ensemble import Ensemble
from .files import load
from .hdf5 import DiskArray
from .metadata import json_default
from .npz import save_arrays
from .trajectory import Trajectory

__all__ = ["Trajectory", "Ensemble", "load", "DiskArray", "json_default", "save_arrays"]

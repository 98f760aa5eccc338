"""The engine: the only time loop of dalembert.

It returns and writes its results through :mod:`dalembert.results` (Trajectory, Ensemble, the
``.npz`` and HDF5 formats), which imports nothing of the engine.

Modules, one job each (imports go down the list, never up):

* :mod:`~dalembert.engine.xla` — XLA options of dalembert's own programs (per executable), the
  opt-in process settings (:func:`configure`: small-loop kernels, CPU devices) and the devices an
  ensemble runs on;
* :mod:`~dalembert.engine.progress` — the progress bar;
* :mod:`~dalembert.engine.interrupts` — SIGINT/SIGTERM between chunks, :class:`RunInterrupted`;
* :mod:`~dalembert.engine.checkpoint` — the checkpoint file of a single run (atomic writes);
* :mod:`~dalembert.engine.loop` — the compiled chunk of saved nodes (one guarded step function,
  three nested loops) and the driver that runs chunks until done or failed;
* :mod:`~dalembert.engine.programs` — binding a method to a system through the system-kind
  protocol (kinds and views resolved before tracing) and the compiled programs of single runs,
  kept with the system object;
* :mod:`~dalembert.engine.run` — :func:`integrate` (validated runs, Trajectory, errors)
  and :func:`solve` (the pure functional core for ``jax.jit``/``vmap``/``grad``);
* :mod:`~dalembert.engine.ensembles` — :func:`ensemble` (vmapped members, batched parameters,
  devices);
* :mod:`~dalembert.engine.stream` — where the nodes go: memory, or an HDF5 file appended chunk by
  chunk (streamed runs);
* :mod:`~dalembert.engine.sweep` — :func:`sweep`: an ensemble as tasks on a Dask cluster, each
  task's result a file, resumable.
"""
from .ensembles import Ensemble, ensemble
from .run import integrate, resume, solve
from .sweep import sweep
from .loop import CHUNK_SAVES, CHUNK_STEPS, ENSEMBLE_CHUNK_MEMBER_STEPS, step_count
from .xla import configure, ensemble_devices

__all__ = ["integrate", "resume", "solve", "sweep", "ensemble", "Ensemble", "configure", "ensemble_devices",
           "step_count", "CHUNK_STEPS", "CHUNK_SAVES", "ENSEMBLE_CHUNK_MEMBER_STEPS"]

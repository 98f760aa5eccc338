"""What the benchmark scripts share: their markdown (a note under the heading, print, write) and
interleaved timing."""
from __future__ import annotations

import os
import statistics
import time
from pathlib import Path


def publish(md: str, note: str = "", out: Path | None = None, out_heading: str = "",
            append: Path | None = None) -> str:
    """Insert ``note`` (a paragraph) after the first paragraph of ``md`` (its heading), print
    the result, write it to ``out`` (under ``out_heading``) and append it to ``append``."""
    if note:
        head, rest = md.split("\n\n", 1)
        md = head + "\n\n" + note.strip() + "\n\n" + rest
    print(md)
    if out:
        Path(out).write_text(out_heading + md, encoding="utf-8")
    if append:
        with open(append, "a", encoding="utf-8") as f:
            f.write("\n" + md)
    return md


def interleaved_times(runs: dict, repeats: int, per: float = 1.0, clock=time.perf_counter) -> dict:
    """``{name: [seconds / per, ...]}``: each callable of ``runs`` called once (it compiles), then
    ``repeats`` rounds calling every one in turn, so that a change of the machine's load falls on
    all of them alike (report min / median / max). ``clock``: wall time by default,
    ``time.process_time`` for CPU time."""
    for fn in runs.values():
        fn()
    times = {k: [] for k in runs}
    for _ in range(repeats):
        for k, fn in runs.items():
            t0 = clock()
            fn()
            times[k].append((clock() - t0) / per)
    return times


def cpu_step_table(runs: dict, repeats: int, steps: int, heading: str, notes=(), width: int = 34) -> dict:
    """Time ``runs`` (callables of ``steps`` steps each) by :func:`interleaved_times` in CPU time
    (``time.process_time``), µs per step, and print ``# {heading}; CPU µs per step min / median /
    max of {repeats} interleaved; load a → b`` (the 1-minute load average before and after), the
    lines ``notes``, and a row ``name  min / median / max`` per run (the name padded to ``width``).
    Returns the medians ``{name: µs per step}``."""
    load = os.getloadavg()
    times = interleaved_times(runs, repeats, per=steps / 1e6, clock=time.process_time)
    load1 = os.getloadavg()
    print(f"# {heading}; CPU µs per step min / median / max of {repeats} interleaved; "
          f"load {load[0]:.2f} → {load1[0]:.2f}")
    for line in notes:
        print(line)
    for k, t in times.items():
        print(f"{k:{width}s} {min(t):8.2f} / {statistics.median(t):8.2f} / {max(t):8.2f}")
    return {k: statistics.median(t) for k, t in times.items()}


def first_call_seconds(script: str, args, repeats: int) -> float:
    """The smallest of ``repeats`` times printed by ``script`` (Python source whose last output line
    is a number of seconds) run in fresh processes with ``args``: a first call with nothing cached."""
    import subprocess
    import sys
    out = []
    for _ in range(repeats):
        r = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, check=True)
        out.append(float(r.stdout.strip().splitlines()[-1]))
    return min(out)

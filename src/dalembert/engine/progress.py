"""A progress bar for long runs (rich, on stderr), shown only when a run is expected to last > 1 s."""
from __future__ import annotations

import sys


class ProgressBar:
    """A rich progress bar on stderr, started only when the run is long enough to need one."""

    def __init__(self, progress, total, md):
        self.want = progress
        self.total = total
        self.label = f"{md['system']} · {md['method']}"
        self.bar = None
        self.task = None

    def update(self, done, elapsed):
        if self.bar is None:
            show = self.want if self.want is not None else sys.stderr.isatty()
            expected = elapsed * self.total / max(done, 1)
            if not show or expected < 1.0 or done >= self.total:
                return
            from rich.progress import (BarColumn, Progress, TextColumn, TimeElapsedColumn,
                                       TimeRemainingColumn)
            from rich.console import Console
            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>5.1f}%"),
                                TimeElapsedColumn(), TimeRemainingColumn(),
                                console=Console(stderr=True), transient=True)
            self.bar.start()
            self.task = self.bar.add_task(self.label, total=self.total)
        self.bar.update(self.task, completed=done)

    def close(self):
        if self.bar is not None:
            self.bar.stop()

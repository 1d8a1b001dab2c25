"""Peak memory of a block of code for the benchmarks (tracemalloc would slow them several times)."""

from __future__ import annotations

import os
import threading


class RssPeak:
    """Samples this process's resident set size every 20 ms in a thread while
    the ``with`` block runs. ``peak`` and ``start`` are bytes; ``peak_mb`` is
    the growth over the start in MiB."""

    def __init__(self) -> None:
        self.page = os.sysconf("SC_PAGE_SIZE")
        self.start = self.peak = self._rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _rss(self) -> int:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * self.page

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, self._rss())

    def __enter__(self) -> RssPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._rss())

    @property
    def peak_mb(self) -> float:
        return (self.peak - self.start) / 2**20

    def report(self) -> str:
        return f"peak RSS {self.peak / 2**20:.0f} MiB (+{self.peak_mb:.0f} MiB)"

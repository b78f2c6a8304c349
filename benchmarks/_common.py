"""Shared helpers for the benchmark scripts (timing, JSON output). Not collected by pytest."""
from __future__ import annotations

import json
import platform
import statistics
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results"


def timed(fn, repeat: int = 3):
    """Median wall time of ``repeat`` calls and the last return value."""
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def write_json(name: str, payload: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    payload = {"python": platform.python_version(), "machine": platform.machine(), **payload}
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2))
    print(f"wrote {path}")
    return path


class ResourceMonitor:
    """Peak resident memory and CPU use of this process and its children (the embedder worker), sampled in a
    background thread while a ``with`` block runs. ``cores_busy``: CPU seconds over wall seconds (2.0 = both
    cores of this machine busy the whole time), split into this process (``main``) and its children
    (``children``: the embedder worker), so a build shows which side bounds it. ``idle_seconds``: the sampled
    intervals in which the whole tree used less than ``IDLE_CORES`` of a core (everything waiting at once).
    ``peak_rss_mb_by_process``: the peak of this process and of its children, each on its own."""

    IDLE_CORES = 0.25

    def __init__(self, interval: float = 0.5):
        import threading

        import psutil

        self.process, self.interval = psutil.Process(), interval
        self.peak_rss_mb, self.cpu_seconds, self.wall_seconds = 0.0, 0.0, 0.0
        self.peak_main_rss_mb = self.peak_children_rss_mb = 0.0  # each side's own peak (not at the same moment)
        self.idle_seconds, self._last = 0.0, None  # (time, tree CPU) of the previous sample
        self._stop, self._thread = threading.Event(), None
        self._cpu: dict[int, float] = {}

    def _tree(self):
        return [self.process] + self.process.children(recursive=True)

    def _sample(self) -> None:
        import psutil

        rss = main_rss = 0
        for proc in self._tree():
            try:
                proc_rss = proc.memory_info().rss
                rss += proc_rss
                if proc.pid == self.process.pid:
                    main_rss = proc_rss
                times = proc.cpu_times()
                self._cpu[proc.pid] = times.user + times.system
            except psutil.Error:
                continue
        self.peak_rss_mb = max(self.peak_rss_mb, rss / 2**20)
        self.peak_main_rss_mb = max(self.peak_main_rss_mb, main_rss / 2**20)
        self.peak_children_rss_mb = max(self.peak_children_rss_mb, (rss - main_rss) / 2**20)
        now, cpu = time.perf_counter(), sum(self._cpu.values())
        if self._last is not None and cpu - self._last[1] < self.IDLE_CORES * (now - self._last[0]):
            self.idle_seconds += now - self._last[0]
        self._last = (now, cpu)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def __enter__(self):
        import threading

        self._sample()
        self._start_cpu, self._start = sum(self._cpu.values()), time.perf_counter()
        self._start_main = self._cpu.get(self.process.pid, 0.0)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self._sample()
        self.wall_seconds = time.perf_counter() - self._start
        self.cpu_seconds = sum(self._cpu.values()) - self._start_cpu
        self.main_cpu_seconds = self._cpu.get(self.process.pid, 0.0) - self._start_main

    def report(self) -> dict:
        return {"peak_rss_mb": round(self.peak_rss_mb),
                "peak_rss_mb_by_process": {"main": round(self.peak_main_rss_mb),
                                           "children": round(self.peak_children_rss_mb)},
                "cpu_seconds": round(self.cpu_seconds, 1),
                "wall_seconds": round(self.wall_seconds, 1),
                "cores_busy": self._cores(self.cpu_seconds),
                "cores_busy_by_process": {"main": self._cores(self.main_cpu_seconds),
                                          "children": self._cores(self.cpu_seconds - self.main_cpu_seconds)},
                "idle_seconds": round(self.idle_seconds, 1)}

    def _cores(self, cpu_seconds: float) -> float:
        return round(cpu_seconds / self.wall_seconds, 2) if self.wall_seconds else 0.0

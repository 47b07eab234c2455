"""Runtime traces: per-event and per-window timings, exported to Chrome's trace format."""

from __future__ import annotations

import json
import os

import numpy as np

TRACE_EVENT_DTYPE = np.dtype(
    [("start_ns", np.int64), ("end_ns", np.int64), ("time", np.float64), ("entity", np.int32),
     ("kind", np.int32), ("worker", np.int32), ("window", np.int32)]
)
TRACE_WINDOW_DTYPE = np.dtype(
    [("start_ns", np.int64), ("end_ns", np.int64), ("busy_ns", np.int64), ("python_ns", np.int64),
     ("events", np.int64), ("empty_polls", np.int64), ("t0", np.float64), ("t1", np.float64),
     ("window", np.int32), ("worker", np.int32)]
)


class Trace:
    """What a traced :class:`seer.Runtime` recorded.

    Attributes:
        events: One row per handled event: worker, entity, kind, simulated
            time, wall start and end (ns, CLOCK_MONOTONIC).
        windows: One row per (window, worker): the worker's wall start and end
            of the window, time inside handlers (``busy_ns``) and inside Python
            handlers (``python_ns``, GIL held), events, and polls of an empty
            ready set (claim contention).
        dropped: Records lost because a worker's buffer was full.
    """

    def __init__(self, kind_names, workers: int):
        self.kind_names = list(kind_names)
        self.num_workers = workers
        self._events: list[np.ndarray] = []
        self._windows: list[np.ndarray] = []
        self.dropped = 0

    def add(self, events: np.ndarray, windows: np.ndarray, dropped: int) -> None:
        if len(events):
            self._events.append(events)
        if len(windows):
            self._windows.append(windows)
        self.dropped += dropped

    @property
    def events(self) -> np.ndarray:
        if len(self._events) > 1:
            self._events = [np.concatenate(self._events)]
        return self._events[0] if self._events else np.zeros(0, TRACE_EVENT_DTYPE)

    @property
    def windows(self) -> np.ndarray:
        if len(self._windows) > 1:
            self._windows = [np.concatenate(self._windows)]
        return self._windows[0] if self._windows else np.zeros(0, TRACE_WINDOW_DTYPE)

    def idle_ns(self) -> np.ndarray:
        """Per (window, worker) row of :attr:`windows`: time the worker spent
        not running handlers between the window's first start and last end."""
        win = self.windows
        if not len(win):
            return np.zeros(0, np.int64)
        span = {}
        for w in np.unique(win["window"]):
            rows = win[win["window"] == w]
            span[int(w)] = int(rows["end_ns"].max() - rows["start_ns"].min())
        total = np.array([span[int(w)] for w in win["window"]], np.int64)
        return np.maximum(total - win["busy_ns"], 0)

    def summary(self) -> dict:
        """Totals used by STPA's trace features."""
        win = self.windows
        busy = int(win["busy_ns"].sum()) if len(win) else 0
        idle = int(self.idle_ns().sum()) if len(win) else 0
        return {
            "events": int(len(self.events)),
            "windows": int(len(np.unique(win["window"]))) if len(win) else 0,
            "busy_ns": busy,
            "idle_ns": idle,
            "python_ns": int(win["python_ns"].sum()) if len(win) else 0,
            "empty_polls": int(win["empty_polls"].sum()) if len(win) else 0,
            "dropped": self.dropped,
        }

    def to_chrome(self, path: str | os.PathLike | None = None) -> dict:
        """The trace in Chrome's Trace Event Format (opens in Perfetto and
        chrome://tracing); written as JSON to ``path`` when given.

        Each worker is a thread of process 0, each handled event a complete
        ("X") event named after its kind; windows appear on a track of their own.

        The file is written atomically (a temporary file beside it, then a
        rename). An existing symbolic link at ``path`` is refused, not
        written through, and a missing folder is not created.

        Raises:
            seer.errors.OutputPathError: ``path`` is a symbolic link, a
                directory, or in a folder that does not exist.
        """
        ev, win = self.events, self.windows
        starts = [int(a["start_ns"].min()) for a in (ev, win) if len(a)]
        t0 = min(starts) if starts else 0
        out = [{"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "seer.Runtime"}}]
        for w in range(self.num_workers):
            out.append({"ph": "M", "name": "thread_name", "pid": 0, "tid": w, "args": {"name": f"worker {w}"}})
        out.append({"ph": "M", "name": "thread_name", "pid": 0, "tid": self.num_workers, "args": {"name": "windows"}})
        for row in ev:
            kind = int(row["kind"])
            out.append({
                "ph": "X", "pid": 0, "tid": int(row["worker"]), "cat": "event",
                "name": self.kind_names[kind] if 0 <= kind < len(self.kind_names) else str(kind),
                "ts": (int(row["start_ns"]) - t0) / 1000.0,
                "dur": max(int(row["end_ns"] - row["start_ns"]), 1) / 1000.0,
                "args": {"entity": int(row["entity"]), "time": float(row["time"]), "window": int(row["window"])},
            })
        for w in (np.unique(win["window"]) if len(win) else []):
            rows = win[win["window"] == w]
            start, end = int(rows["start_ns"].min()), int(rows["end_ns"].max())
            out.append({
                "ph": "X", "pid": 0, "tid": self.num_workers, "cat": "window", "name": f"window {int(w)}",
                "ts": (start - t0) / 1000.0, "dur": max(end - start, 1) / 1000.0,
                "args": {"t0": float(rows["t0"][0]), "t1": float(rows["t1"][0]),
                         "events": int(rows["events"].sum())},
            })
        doc = {"traceEvents": out, "displayTimeUnit": "ns"}
        if path is not None:
            from seer._io import atomic_writer

            with atomic_writer(path, "w", what="trace file") as f:
                json.dump(doc, f)
        return doc

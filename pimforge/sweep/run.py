"""Run a sweep's points as tasks on Dask distributed, or one by one in this process.

Each finished point is stored at once as ``OUT/points/<key>.json`` (``key`` hashes the unit or
system, the point's whole config and the metric settings), so a rerun skips it: resume after an
interruption, or extend a grid.  A failed point is reported and not stored; a rerun tries it
again.  A task whose worker process dies is run again by Dask (``allowed-failures``) on a fresh
worker; when its workers have died more than ``retries`` times it is reported as failed, like
any other point.
"""
from __future__ import annotations

import json
import logging
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import dask
from distributed import Client, LocalCluster, as_completed

from pimforge.base.errors import UserError
from pimforge.base.files import check_out_dir, write_atomic
from pimforge.software.report import Progress
from pimforge.sweep.evaluate import evaluate_point
from pimforge.synth.run import cache_root

__all__ = ["SweepRun", "run_sweep", "check_scheduler"]


@dataclass
class SweepRun:
    """Rows in point order: ``{"point", "key", "values", "status", "metrics" | "error", ...}``
    with ``status`` ``ok`` (run now), ``resumed`` (stored by an earlier run) or ``failed``."""

    rows: list
    wall_s: float
    workers: int
    scheduler: str
    ran: int = 0
    resumed: int = 0
    startup_s: float = 0.0          # starting (or reaching) the cluster
    failed: list = field(default_factory=list)


def check_scheduler(address: str | None) -> str | None:
    """``tcp://HOST:PORT`` (or another Dask protocol), else a one-line error."""
    if address is None:
        return None
    proto, sep, rest = address.partition("://")
    host, _, port = rest.rpartition(":")
    if not sep or proto not in ("tcp", "tls", "inproc", "ws", "wss") or not host or \
            not port.isdigit():
        raise UserError(f"--scheduler: got {address!r}; allowed: tcp://HOST:PORT (a running "
                        f"Dask scheduler)")
    return address


def _stored(points_dir: Path, point) -> dict | None:
    path = points_dir / f"{point.key}.json"
    if not path.exists():
        return None
    try:
        row = json.loads(path.read_text())
    except (OSError, ValueError):
        return None            # unreadable: run the point again
    return row if row.get("key") == point.key and "metrics" in row else None


def _store(points_dir: Path, point, res: dict) -> dict:
    row = {"point": point.index, "key": point.key, "values": point.values,
           "config": point.config, "metrics": res["metrics"], "seconds": res.get("seconds"),
           "worker": res.get("worker")}
    write_atomic({points_dir / f"{point.key}.json": json.dumps(row, indent=1, default=str)})
    return row


def _label(point) -> str:
    return ", ".join(f"{k}={v}" for k, v in point.values.items())


class _Reporter:
    """The progress bar plus one line per failed point on stderr."""

    def __init__(self, total: int, enabled: bool, stream=None):
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.bar = Progress(total, "sweep", enabled=enabled, stream=self.stream)

    def done(self, point, row: dict):
        if row["status"] == "failed" and self.enabled:
            self.stream.write(f"\npoint {point.index} ({_label(point)}): FAILED: {row['error']}\n")
        self.bar.step(f"{_label(point)}: {row['status']}")


def _serial(todo, task, cache, evaluate, finish):
    for point in todo:
        finish(point, evaluate(task, point.config, cache))


def _distributed(todo, task, cache, evaluate, finish, client, retries, slots):
    """Keep ``slots`` points in flight (one per worker thread) and submit the next as one
    finishes: a worker that dies then takes only its own point with it.  (Dask would hand
    every task to a worker at once and blame all of a dead worker's tasks.)"""
    pending = iter(todo)
    futures = {}
    done = as_completed()

    def submit():
        point = next(pending, None)
        if point is not None:
            fut = client.submit(evaluate, task, point.config, cache, key=f"sweep-{point.key}",
                                retries=retries, pure=False)
            futures[fut] = point
            done.add(fut)

    for _ in range(max(1, slots)):
        submit()
    for fut in done:
        point = futures.pop(fut)
        if fut.status == "error":      # the task itself crashed, or its workers kept dying
            exc = fut.exception()
            finish(point, {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
                           if str(exc) else type(exc).__name__})
        else:
            finish(point, fut.result())
        fut.release()
        submit()


def _client(scheduler, workers, retries):
    """A client of the scheduler at ``scheduler``, or of an embedded ``LocalCluster``."""
    if scheduler:
        try:
            return Client(scheduler, timeout="10s"), None
        except OSError as e:
            raise UserError(f"--scheduler: cannot reach {scheduler}: {e}") from None
    with dask.config.set({"distributed.scheduler.allowed-failures": retries}):
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=logging.ERROR)
        return Client(cluster), cluster


def run_sweep(spec, out, *, scheduler: str | None = None, workers: int = 2, cache=None,
              serial: bool = False, retries: int = 3, progress: bool = True,
              evaluate=evaluate_point, stream=None) -> SweepRun:
    """Evaluate every point of ``spec`` not already stored under ``out/points``.

    ``serial`` runs them here in order (no Dask); otherwise on ``workers`` processes of an
    embedded ``LocalCluster``, or on the cluster of ``scheduler``.  ``cache`` is the synthesis
    cache directory every task uses (default: this process's :func:`~pimforge.synth.run.cache_root`), shared so
    that no design is synthesized twice.  ``evaluate`` is the task function (tests pass one
    that misbehaves)."""
    out = check_out_dir(Path(out))
    points_dir = check_out_dir(out / "points")
    cache = str(Path(cache or cache_root()).resolve())
    t0 = time.perf_counter()
    rows = {}
    todo = []
    for point in spec.points:
        row = _stored(points_dir, point)
        if row is None:
            todo.append(point)
        else:
            rows[point.index] = dict(row, point=point.index, values=point.values,
                                     status="resumed")
    run = SweepRun([], 0.0, 0 if serial else workers, "serial" if serial else
                   (scheduler or f"LocalCluster, {workers} workers"),
                   resumed=len(rows))
    rep = _Reporter(len(todo), progress and bool(todo), stream)

    def finish(point, res):
        if "metrics" in res:
            row = dict(_store(points_dir, point, res), status="ok")
        else:
            row = {"point": point.index, "key": point.key, "values": point.values,
                   "config": point.config, "status": "failed", "error": res["error"],
                   "detail": res.get("detail"), "worker": res.get("worker")}
            run.failed.append(row)
        rows[point.index] = row
        rep.done(point, row)

    with rep.bar:
        if todo and serial:
            _serial(todo, spec.task(), cache, evaluate, finish)
        elif todo:
            t_start = time.perf_counter()
            client, cluster = _client(scheduler, workers, retries)
            run.startup_s = round(time.perf_counter() - t_start, 2)
            try:
                info = client.scheduler_info()["workers"]
                run.workers = len(info)
                slots = sum(w.get("nthreads", 1) for w in info.values())
                _distributed(todo, spec.task(), cache, evaluate, finish, client, retries, slots)
            finally:
                client.close()
                if cluster is not None:
                    cluster.close()
    run.ran = len(todo)
    run.rows = [rows[i] for i in sorted(rows)]
    run.wall_s = round(time.perf_counter() - t0, 2)
    return run

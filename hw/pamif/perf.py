"""O(1) estimate of a PAM interface migration, for the system model (PAM §6.2).

API (stable)::

    migration_estimate(src, dst, n_tokens=None, token_bytes=512, *, n_bytes=None,
                       clock_mhz=IF_CLOCK_MHZ) -> dict

``src`` / ``dst`` are tier names (``hbm3``, ``ddr4``, ``ssd``, or a small ``*_s`` tier) or
:class:`~pimforge.hw.pamif.layout.Tier` objects; give the size as ``n_tokens`` (of
``token_bytes``) or as ``n_bytes`` (rounded up to whole tokens).  ``n_tokens`` / ``n_bytes``
may be NumPy arrays (the result's numbers are then arrays).  Returns:

* ``cycles``: interface cycles (1 GHz) from the list's acceptance to the destination holding
  every byte (for an SSD destination: its last page programmed);
* ``seconds``: the same in seconds;
* ``bandwidth_fraction``: achieved bytes per second over ``slower_side_bw``;
* ``slower_side_bw``: bytes per second of the slower side, the smaller of the source's read
  and the destination's write bandwidth, each the smaller of the memory's streaming rate
  (Table 1) and the port's one word per cycle (:func:`~pimforge.hw.pamif.layout.side_bandwidth`);
* ``bytes``: bytes moved.

The form: the migration streams at ``STREAM_EFFICIENCY`` of the slower side (DRAM: row switches and
write-queue refills cost about 1.5%; SSD: the dies' reads and programs overlap the stream), plus a
fixed latency: the source's first access (a DRAM row miss, or an SSD page read tR and its transfer),
the destination's last (a DRAM row miss and write recovery, or an SSD page's transfer: the programs
overlap the stream, which the SSD's bandwidth already counts), and the pipeline.  The exact model is
:func:`pimforge.hw.pamif.interface_timing.migration_cycles`; ``tests/pamif/test_perf.py`` holds this
estimate within ``TOLERANCE`` of it on MB-scale migrations of every preset pair. """
from __future__ import annotations

import numpy as np

from pimforge.hw.pamif.config import PAPER_TOKEN_BYTES
from pimforge.hw.pamif.layout import IF_CLOCK_MHZ, IF_PERIOD_PS, Tier, side_bandwidth, tier

__all__ = ["migration_estimate", "STREAM_EFFICIENCY", "TOLERANCE", "fixed_latency_ns"]

STREAM_EFFICIENCY = {"dram": 0.985, "ssd": 1.0}   # steady state, by the slower side's kind
TOLERANCE = 0.10           # relative, against the exact cycle model from 256 KB up (1 MB: 2%)
PIPELINE_CYCLES = 8        # sender, buffer and receiver registers


def _tier(t) -> Tier:
    return t if isinstance(t, Tier) else tier(t)


def fixed_latency_ns(src: Tier, dst: Tier, token_bytes: int) -> float:
    """Latency not hidden by streaming: the first source access and the last destination write."""
    if src.kind == "ssd":
        first = src.tR_ns + src.row_bytes * src.tck_ps / 1000.0 / src.groups
    else:
        first = (src.tRCD + src.tCL + src.tBL) * src.tck_ps / 1000.0
    if dst.kind == "ssd":      # the programs overlap the stream; the first page's transfer not
        last = dst.row_bytes * dst.tck_ps / 1000.0 / dst.groups
    else:
        last = (dst.tRP + dst.tRCD + dst.tWR) * dst.tck_ps / 1000.0
    return first + last + PIPELINE_CYCLES * IF_PERIOD_PS / 1000.0


def migration_estimate(src, dst, n_tokens=None, token_bytes: int = PAPER_TOKEN_BYTES, *,
                       n_bytes=None, clock_mhz: float = IF_CLOCK_MHZ) -> dict:
    """Cycles, seconds and bandwidth fraction of migrating a token set (module docstring)."""
    s, d = _tier(src), _tier(dst)
    if (n_tokens is None) == (n_bytes is None):
        raise ValueError("give exactly one of n_tokens and n_bytes")
    if n_tokens is None:
        n_tokens = -(-np.asarray(n_bytes, dtype=np.int64) // token_bytes)
    n = np.asarray(n_tokens, dtype=np.int64)
    nbytes = n * token_bytes
    bw_s, bw_d = side_bandwidth(s, "read"), side_bandwidth(d, "write")    # bytes per ns
    bw = min(bw_s, bw_d)
    eff = STREAM_EFFICIENCY[(s if bw_s <= bw_d else d).kind]
    ns = np.where(n > 0, nbytes / (bw * eff) + fixed_latency_ns(s, d, token_bytes), 0.0)
    cycles = np.ceil(ns * clock_mhz / 1000.0)
    seconds = ns * 1e-9
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(ns > 0, nbytes / np.where(ns > 0, ns, 1.0) / bw, 0.0)
    scalar = np.ndim(n_tokens) == 0

    def out(x):
        return float(x) if scalar else x
    return {"cycles": int(cycles) if scalar else cycles.astype(np.int64),
            "seconds": out(seconds), "bandwidth_fraction": out(frac),
            "slower_side_bw": bw * 1e9, "bytes": int(nbytes) if scalar else nbytes}

"""The PAM stream formats as beat lists (the units' manifests give the same fields).

One encoder for everything that drives or checks a PAM unit: the benches of ``pam_pu``,
``pam_ru``, ``pam_device`` and ``pam_system``, and the rtl backend of ``run pam-attention``.
Vector fields pack element 0 into the least significant bits.
"""
from __future__ import annotations

import numpy as np

from pimforge.sim.harness.job import Phase
from pimforge.sim.harness.stall import StallPattern

__all__ = ["pack_rows", "unpack_rows", "pu_beats", "partial_beats", "ru_request_beats", "stalled",
           "STALL_P"]

_DTYPES = {16: "<u2", 32: "<u4"}


def pack_rows(rows, width: int) -> list:
    """Each row of ``width``-bit patterns (fp16 or fp32) -> one Python int."""
    rows = np.asarray(rows, dtype=np.int64)
    raw = rows.reshape(len(rows), -1).astype(_DTYPES[width])
    return [int.from_bytes(r.tobytes(), "little") for r in raw]


def unpack_rows(values, width: int, n: int) -> np.ndarray:
    """Inverse of :func:`pack_rows`: ints -> (len, n) int64 bit patterns."""
    nbytes = width * n // 8
    buf = b"".join(int(v).to_bytes(nbytes, "little") for v in values)
    return np.frombuffer(buf, dtype=_DTYPES[width]).astype(np.int64).reshape(len(values), n)


def pu_beats(cfg, q16, k16, v16) -> tuple:
    """``(i_q, i_kv)`` fields of one PU token set: Q in B beats; then per tile of T tokens the
    K rows, then the V rows (B beats a row); ``last`` on the final V beat (PAM Alg. 1 l. 9-12)."""
    L, B, T = cfg.lanes, cfg.beats, cfg.tile_tokens
    k16 = np.asarray(k16, dtype=np.int64)
    v16 = np.asarray(v16, dtype=np.int64)
    data, is_v = [], []
    for a in range(0, len(k16), T):
        for rows, flag in ((k16[a:a + T], 0), (v16[a:a + T], 1)):
            data += pack_rows(rows.reshape(-1, L), 16)
            is_v += [flag] * (len(rows) * B)
    last = [0] * len(data)
    last[-1] = 1
    q = pack_rows(np.asarray(q16, dtype=np.int64).reshape(B, L), 16)
    return {"data": q}, {"data": data, "is_v": is_v, "last": last}


def partial_beats(r: dict, n: int, width: int, final: bool = False) -> dict:
    """A partial ``r`` (``O``, ``m``, ``l``; with ``final`` also ``norm`` and ``lse``) as beats
    of ``n`` elements of ``width`` bits; the scalars repeat on every beat."""
    o = np.asarray(r["O"], dtype=np.int64)
    beats = len(o) // n
    out = {"data": pack_rows(o.reshape(beats, n), width), "m": [int(r["m"])] * beats,
           "l": [int(r["l"])] * beats}
    if final:
        out["norm"] = pack_rows(np.asarray(r["norm"]).reshape(beats, n), 16)
        out["lse"] = [int(r["lse"])] * beats
    return out


def ru_request_beats(partials, n: int, width: int) -> dict:
    """RU ``i`` fields of one request: each partial as its beats, ``last`` on the final beat."""
    out = {"data": [], "m": [], "l": []}
    for p in partials:
        for key, vals in partial_beats(p, n, width).items():
            out[key] += vals
    out["last"] = [0] * (len(out["data"]) - 1) + [1]
    return out


STALL_P = 0.3


def stalled(phase: Phase, seed: int) -> Phase:
    """``phase`` with random stalls (p = ``STALL_P``) on every input's valid and every
    output's ready side."""
    phase.valid_stall = {"*": StallPattern.random(STALL_P, seed)}
    phase.ready_stall = {"*": StallPattern.random(STALL_P, seed + 1)}
    return phase

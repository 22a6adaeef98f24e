"""DDR4 timing model of one NDP-DIMM as the NDP core sees it behind the center buffer.

Pure Python and NumPy: the cocotb bench asks it when each weight beat may be offered to the
GEMV engine, and the engine's cycle model (exact against the RTL) uses the same answer, so the
model is deterministic: the same addresses always give the same trace.

**Layout.**  Weights are neuron-major: neuron ``n`` of ``neuron_bytes`` bytes occupies
``[base + n * neuron_bytes, +neuron_bytes)`` (:func:`neuron_addresses`).

**Address mapping** (:func:`decode`, inverse :func:`encode`).  With ``b = addr // burst_bytes``
the burst index, the fields are taken from the low end, fastest first::

    rank       = b % ranks                       (consecutive bursts go to different ranks)
    bank_group = b // ranks % bank_groups        (then alternate bank groups: tCCD_S, tRRD_S)
    bank       = b // (ranks*bank_groups) % banks
    column     = b // (ranks*bank_groups*banks) % (page_bytes // burst_bytes)
    row        = b // (ranks*bank_groups*banks*columns)

So a stream keeps all ranks busy in parallel, each rank alternates its bank groups, and one
*row stripe* (the same row in every bank of every rank: 4 x 8 x 8 KB = 256 KB for Table II)
holds 1 MB / 4 of contiguous data.  A 16 KB neuron covers 8 columns of every bank of every rank.

**Policy** (:func:`burst_schedule`).  Open page; banks start precharged.  Each rank serves its
bursts in list order (a per-rank in-order read queue) and the ranks are independent: each has
its own data path into the center buffer, and its own command bus (the center buffer drives
each rank; command-bus slots are not modelled).  For burst ``i`` of a rank, to bank ``k``:

* row hit (``k`` has the row open): no ACT (``act = -1``).
* otherwise, if ``k`` has another row open, PRE at the earliest
  ``max(last RD of k + tRTP, ACT of k + tRC - tRP)``; then ACT at the earliest
  ``max(PRE + tRP, ACT of k + tRC, previous ACT of the rank + tRRD_S, previous ACT of the
  rank's same bank group + tRRD_L, 4th previous ACT of the rank + tFAW)``.
  ACTs are issued *in list order* per rank but *ahead of the reads*: an ACT does not wait for
  the reads of earlier bursts except those to its own bank (the PRE needs them), so the rows of
  a stream are opened while earlier bursts still read, hiding activation (a controller with
  bank lookahead).  ``lookahead=L`` bounds this: burst ``i``'s PRE and ACT may not precede the
  RD of the rank's burst ``i - L`` (an L-entry queue per rank); ``None`` is unbounded.
* RD at the earliest ``max(ACT that opened the row + tRCD, previous RD of the rank + tCCD_S,
  previous RD of the rank's same bank group + tCCD_L, previous RD of the rank + tBL)`` (the
  last term is the rank's data bus, one burst per tBL); the data is complete in the center
  buffer at ``RD + tCL + tBL``.

Refresh, writes, the shared command bus and the center buffer's capacity are not modelled.

**Cost.**  Reads stream at one burst per tCCD_S per rank (alternating bank groups).  A rank
reopens a bank ``tRTP + tRP + tRCD`` = 60 clocks after its last read in the old row, but the
in-order stream returns to it after one round of its 8 banks (32 clocks): every row switch of
a rank costs 28 clocks, plus 10 when tFAW spaces its 8 ACTs.  Dense streams switch once per
1024 bursts per rank (0.99 of the peak); a stream of 16 KB neurons that each open a new row
pays 38 clocks per 256 clocks (about 0.87); a stream of single bursts in new rows is bound by
tRC per bank: 8 bursts per 76 clocks per rank (0.42; tFAW alone would allow 4 per 26).
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

__all__ = ["neuron_addresses", "decode", "encode", "burst_schedule", "beat_arrivals",
           "stream_stats", "check_trace", "clocks_to_cycles"]

_NEVER = -(1 << 40)   # "long ago": earlier than any constraint can reach


def _geometry(timing):
    cols = timing.page_bytes // timing.burst_bytes
    return timing.ranks, timing.bank_groups, timing.banks, cols


def neuron_addresses(neurons, neuron_bytes: int, base: int = 0, burst_bytes: int = 64):
    """Byte addresses of every burst of ``neurons`` (list order), neuron-major layout."""
    if neuron_bytes <= 0 or neuron_bytes % burst_bytes:
        raise ValueError(f"neuron_bytes must be a positive multiple of {burst_bytes}, "
                         f"not {neuron_bytes}")
    idx = np.asarray(neurons, dtype=np.int64).reshape(-1)
    if idx.size and idx.min() < 0:
        raise ValueError("neuron indices must be >= 0")
    offs = np.arange(0, neuron_bytes, burst_bytes, dtype=np.int64)
    return (base + idx[:, None] * neuron_bytes + offs[None, :]).reshape(-1)


def decode(timing, addr):
    """(rank, bank_group, bank, row, column) of byte address(es) ``addr`` (see the module
    docstring for the mapping).  Works on ints and on arrays."""
    ranks, groups, banks, cols = _geometry(timing)
    b = np.asarray(addr, dtype=np.int64) // timing.burst_bytes
    rank = b % ranks
    b = b // ranks
    bg = b % groups
    b = b // groups
    bank = b % banks
    b = b // banks
    col = b % cols
    row = b // cols
    if np.ndim(addr) == 0:
        return int(rank), int(bg), int(bank), int(row), int(col)
    return rank, bg, bank, row, col


def encode(timing, rank, bank_group, bank, row, column):
    """The byte address of a burst: the inverse of :func:`decode`."""
    ranks, groups, banks, cols = _geometry(timing)
    b = (((np.asarray(row, dtype=np.int64) * cols + column) * banks + bank) * groups
         + bank_group) * ranks + rank
    out = b * timing.burst_bytes
    return int(out) if np.ndim(out) == 0 else out


def _fields(timing, addresses):
    """Per burst: rank, (rank, bank group) index, global bank index, row; as Python lists."""
    rank, bg, bank, row, _ = decode(timing, np.asarray(addresses, dtype=np.int64).reshape(-1))
    rg = rank * timing.bank_groups + bg
    return rank.tolist(), rg.tolist(), (rg * timing.banks + bank).tolist(), row.tolist()


def burst_schedule(timing, addresses, lookahead: int | None = None) -> dict:
    """The command trace of reading ``addresses`` (one burst each, in list order).

    Returns arrays (DRAM clocks from 0; -1 where there is no command): ``pre`` and ``act`` (the
    PRE and ACT the burst needed, -1 on a row hit), ``rd`` and ``done`` (RD + tCL + tBL).  The
    policy is the module docstring's."""
    t = timing
    ranks, groups, banks, _ = _geometry(t)
    rank_of, rg_of, bank_of, row_of = _fields(t, addresses)
    n = len(rank_of)
    pre, act, rd = [-1] * n, [-1] * n, [0] * n
    nbanks = ranks * groups * banks
    open_row = [-1] * nbanks
    bank_act = [_NEVER] * nbanks      # last ACT of each bank
    bank_rd = [_NEVER] * nbanks       # last RD of each bank
    ready = [_NEVER] * nbanks         # the open row's ACT + tRCD
    rank_rd = [_NEVER] * ranks        # last RD of each rank
    rank_act = [_NEVER] * ranks       # last ACT of each rank
    rg_rd = [_NEVER] * (ranks * groups)
    rg_act = [_NEVER] * (ranks * groups)
    faw = [[_NEVER] * 4 for _ in range(ranks)]   # ring of each rank's last 4 ACTs
    faw_i = [0] * ranks
    queue = [[] for _ in range(ranks)]           # RD times per rank (for lookahead)
    rd_step = max(t.tCCD_S, t.tBL)
    tRTP, tRP, tRC, tRAS, tRCD = t.tRTP, t.tRP, t.tRC, t.tRC - t.tRP, t.tRCD
    tRRD_S, tRRD_L, tFAW, tCCD_L = t.tRRD_S, t.tRRD_L, t.tFAW, t.tCCD_L
    for i in range(n):
        r, g, k, row = rank_of[i], rg_of[i], bank_of[i], row_of[i]
        if open_row[k] != row:
            gate = _NEVER
            if lookahead is not None:
                q = queue[r]
                if len(q) >= lookahead:
                    gate = q[len(q) - lookahead]
            a = bank_act[k] + tRC
            if open_row[k] >= 0:
                p = max(bank_rd[k] + tRTP, bank_act[k] + tRAS, gate)
                pre[i] = p
                a = max(a, p + tRP)
            ring = faw[r]
            j = faw_i[r]
            a = max(a, rank_act[r] + tRRD_S, rg_act[g] + tRRD_L, ring[j] + tFAW, gate, 0)
            ring[j] = a
            faw_i[r] = (j + 1) & 3
            act[i] = rank_act[r] = rg_act[g] = bank_act[k] = a
            open_row[k] = row
            ready[k] = a + tRCD
        c = max(ready[k], rank_rd[r] + rd_step, rg_rd[g] + tCCD_L)
        rd[i] = rank_rd[r] = rg_rd[g] = bank_rd[k] = c
        if lookahead is not None:
            queue[r].append(c)
    rd_a = np.array(rd, dtype=np.int64)
    return {"pre": np.array(pre, dtype=np.int64), "act": np.array(act, dtype=np.int64),
            "rd": rd_a, "done": rd_a + (t.tCL + t.tBL)}


def _ratio(timing, clock_mhz: float) -> Fraction:
    """Engine cycles per DRAM clock, exactly (tck_ns x clock_mhz / 1000)."""
    return (Fraction(str(timing.tck_ns)) * Fraction(str(clock_mhz)) / 1000)


def clocks_to_cycles(timing, clocks, clock_mhz: float = 1000.0):
    """DRAM clocks -> engine cycles at ``clock_mhz``, rounded up (exact rational arithmetic)."""
    q = _ratio(timing, clock_mhz)
    c = np.asarray(clocks, dtype=np.int64)
    return -((-c * q.numerator) // q.denominator)


def beat_arrivals(timing, addresses, beat_bytes: int, clock_mhz: float = 1000.0,
                  start: int = 0, lookahead: int | None = None,
                  in_order: bool = True) -> list[int]:
    """Engine cycle (from ``start``) at which each beat of ``beat_bytes`` is complete in the
    center buffer: consecutive bursts (list order) form a beat; a beat is complete when its
    last burst's data is (max of data-complete times), rounded up to the engine clock.

    The ranks run independently, so with uneven streams (beats narrower than all ranks, e.g.
    128 B neurons) a beat can complete before the one ahead of it.  The center buffer hands
    beats to the engine in order, so by default (``in_order``) a beat is offered no earlier
    than the one before it: the arrivals are the running maximum, non-decreasing.

    A beat narrower than a burst (a small engine) arrives with the burst that carries it."""
    bb = timing.burst_bytes
    if beat_bytes > 0 and bb % beat_bytes == 0:
        done = np.repeat(burst_schedule(timing, addresses, lookahead)["done"], bb // beat_bytes)
        per = 1
    elif beat_bytes > 0 and beat_bytes % bb == 0:
        done = burst_schedule(timing, addresses, lookahead)["done"]
        per = beat_bytes // bb
    else:
        raise ValueError(f"beat_bytes must divide or be a multiple of {bb}")
    if done.size % per:
        raise ValueError(f"{done.size} bursts do not make whole beats of {per} bursts")
    if done.size == 0:
        return []
    beat_done = done.reshape(-1, per).max(axis=1)
    if in_order:
        beat_done = np.maximum.accumulate(beat_done)
    return (clocks_to_cycles(timing, beat_done, clock_mhz) + start).tolist()


def stream_stats(timing, addresses, clock_mhz: float = 1000.0,
                 lookahead: int | None = None) -> dict:
    """Totals of streaming ``addresses``: bytes, bursts, ACTs, DRAM clocks (to the last data),
    engine cycles, achieved bytes per ns and its fraction of ``timing.peak_bytes_per_ns``."""
    tr = burst_schedule(timing, addresses, lookahead)
    n = int(tr["rd"].size)
    clocks = int(tr["done"].max()) if n else 0
    nbytes = n * timing.burst_bytes
    rate = nbytes / (clocks * timing.tck_ns) if clocks else 0.0
    return {"bytes": nbytes, "bursts": n, "acts": int((tr["act"] >= 0).sum()),
            "clocks": clocks, "cycles": int(clocks_to_cycles(timing, clocks, clock_mhz)),
            "bytes_per_ns": rate, "fraction": rate / timing.peak_bytes_per_ns}


def _check_acts(t, rank, bg, act, out):
    """tRRD_S / tRRD_L / tFAW over every rank's ACTs, in time order (list order is not
    assumed)."""
    for r in np.unique(rank):
        sel = (rank == r) & (act >= 0)
        times, groups = act[sel], bg[sel]
        order = np.argsort(times, kind="stable")
        times, groups = times[order], groups[order]
        gaps = np.diff(times)
        for j in np.flatnonzero(gaps < t.tRRD_S):
            out.append(f"rank {r}: ACTs at {times[j]} and {times[j + 1]} closer than tRRD_S")
        for g in np.unique(groups):
            tg = times[groups == g]
            for j in np.flatnonzero(np.diff(tg) < t.tRRD_L):
                out.append(f"rank {r} bg {g}: ACTs at {tg[j]} and {tg[j + 1]} closer than "
                           f"tRRD_L")
        for j in np.flatnonzero(times[4:] - times[:-4] < t.tFAW):
            out.append(f"rank {r}: 5 ACTs from {times[j]} to {times[j + 4]} inside tFAW")


def _check_reads(t, rank, bg, rd, out):
    """In order per rank, tCCD_S / tCCD_L and the rank's data bus (tBL) between reads."""
    for r in np.unique(rank):
        sel = np.flatnonzero(rank == r)
        times, groups = rd[sel], bg[sel]
        gaps = np.diff(times)
        for j in np.flatnonzero(gaps <= 0):
            out.append(f"rank {r}: burst {sel[j + 1]} read at {times[j + 1]}, not after "
                       f"burst {sel[j]} at {times[j]} (in order)")
        for j in np.flatnonzero((gaps < t.tCCD_S) | (gaps < t.tBL)):
            out.append(f"rank {r}: reads at {times[j]} and {times[j + 1]} closer than "
                       f"tCCD_S / tBL")
        for g in np.unique(groups):
            tg = np.sort(times[groups == g])
            for j in np.flatnonzero(np.diff(tg) < t.tCCD_L):
                out.append(f"rank {r} bg {g}: reads at {tg[j]} and {tg[j + 1]} closer than "
                           f"tCCD_L")


def _check_banks(t, addresses, trace, lookahead, out):
    """Replay each bank's row state in list order: tRCD, tRP, tRAS (tRC - tRP), tRTP, tRC,
    reads only to the open row, PRE only on an open bank, and the lookahead bound."""
    rank, bg, bank, row, _ = decode(t, addresses)
    pre, act, rd = trace["pre"], trace["act"], trace["rd"]
    state = {}                 # bank -> [open row, its ACT, last RD in it]
    per_rank = {}              # rank -> RD times so far (list order)
    for i in range(len(rd)):
        key = (int(rank[i]), int(bg[i]), int(bank[i]))
        row_open, a_open, last = state.get(key, (-1, None, None))
        q = per_rank.setdefault(key[0], [])
        gate = q[-lookahead] if lookahead is not None and len(q) >= lookahead else None
        if act[i] >= 0:
            if gate is not None and min(act[i], pre[i] if pre[i] >= 0 else act[i]) < gate:
                out.append(f"burst {i}: PRE/ACT before burst {i - lookahead}'s RD (lookahead)")
            if row_open >= 0:
                if pre[i] < 0:
                    out.append(f"burst {i}: ACT on bank {key} with row {row_open} open, no PRE")
                else:
                    if last is not None and pre[i] < last + t.tRTP:
                        out.append(f"burst {i}: PRE at {pre[i]} < last RD {last} + tRTP")
                    if pre[i] < a_open + t.tRC - t.tRP:
                        out.append(f"burst {i}: PRE at {pre[i]} < ACT {a_open} + tRAS")
                    if act[i] < pre[i] + t.tRP:
                        out.append(f"burst {i}: ACT at {act[i]} < PRE {pre[i]} + tRP")
            elif pre[i] >= 0:
                out.append(f"burst {i}: PRE on a precharged bank {key}")
            if a_open is not None and act[i] < a_open + t.tRC:
                out.append(f"burst {i}: ACT at {act[i]} < previous ACT {a_open} + tRC (row cycle)")
            row_open, a_open, last = int(row[i]), int(act[i]), None
        elif row_open != row[i]:
            out.append(f"burst {i}: RD to row {row[i]} of bank {key}, open row {row_open}")
            q.append(int(rd[i]))
            continue
        if rd[i] < a_open + t.tRCD:
            out.append(f"burst {i}: RD at {rd[i]} < ACT {a_open} + tRCD")
        state[key] = (row_open, a_open, int(rd[i]))
        q.append(int(rd[i]))


def check_trace(timing, addresses, trace, lookahead: int | None = None) -> list[str]:
    """Re-verify a trace of :func:`burst_schedule` independently of it: every DDR4 constraint
    of the module docstring and ``done = rd + tCL + tBL``.  Returns the violations (empty when
    the trace is legal)."""
    t = timing
    addresses = np.asarray(addresses, dtype=np.int64).reshape(-1)
    rank, bg, _, _, _ = decode(t, addresses)
    tr = {k: np.asarray(trace[k], dtype=np.int64) for k in ("pre", "act", "rd", "done")}
    out = []
    if any(v.shape != addresses.shape for v in tr.values()):
        return [f"trace lengths {[v.size for v in tr.values()]} != {addresses.size} bursts"]
    for i in np.flatnonzero(tr["done"] != tr["rd"] + t.tCL + t.tBL):
        out.append(f"burst {i}: done {tr['done'][i]} != RD {tr['rd'][i]} + tCL + tBL")
    for i in np.flatnonzero((tr["act"] < 0) & (tr["pre"] >= 0)):
        out.append(f"burst {i}: PRE without ACT")
    if (tr["act"] < -1).any() or (tr["rd"] < 0).any():
        out.append("negative command times")
    _check_banks(t, addresses, tr, lookahead, out)
    _check_acts(t, rank, bg, tr["act"], out)
    _check_reads(t, rank, bg, tr["rd"], out)
    return out

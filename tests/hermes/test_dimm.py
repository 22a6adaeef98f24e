"""hermes.dimm: the DDR4-3200 timing model of one NDP-DIMM (Table II).

Every expected clock count below is derived by hand from the Table II timings (in DRAM clocks:
tRCD = tCL = tRP = 24, tRC = 76, tBL = tCCD_S = tRRD_S = 4, tCCD_L = 8, tRRD_L = 6, tFAW = 26,
tRTP = 12), not from the model; every schedule is re-verified by the independent trace checker.
"""
import dataclasses
import math
import time

import numpy as np
import pytest

from pimforge.hw.hermes.config import DDR4_3200 as T
from pimforge.hw.hermes.dimm import (beat_arrivals, burst_schedule, check_trace, decode,
                                     encode, neuron_addresses, stream_stats)

NEURON = 16384               # d_in 8192 fp16
LAT = T.tCL + T.tBL          # RD to data complete: 28
RRD_STALL = 10               # 5th ACT of a rank's 8-bank round waits for tFAW: 26 - 4 * 4
SWITCH = T.tRTP + T.tRP + T.tRCD - 8 * T.tCCD_S + RRD_STALL   # new row in all 8 banks: 38


def _legal(addrs, **kw):
    tr = burst_schedule(T, addrs, **kw)
    assert check_trace(T, addrs, tr, **kw) == []
    return tr


def _stats(addrs, timing=T):
    tr = burst_schedule(timing, addrs)
    assert check_trace(timing, addrs, tr) == []
    return stream_stats(timing, addrs)


def test_mapping_round_trips_and_interleaves():
    rng = np.random.default_rng(1)
    addrs = rng.integers(0, 1 << 34, 5000) // 64 * 64
    assert np.array_equal(encode(T, *decode(T, addrs)), addrs)
    rank, bg, bank, row, col = decode(T, np.arange(64 * 1024, step=64))
    assert list(rank[:8]) == [0, 1, 2, 3] * 2 and list(bg[:8]) == [0] * 4 + [1] * 4
    assert list(bank[:32:8]) == [0, 1, 2, 3] and col[32] == 1 and row.max() == 0
    assert decode(T, 256 * 1024) == (0, 0, 0, 1, 0)          # a row stripe is 256 KB
    assert encode(T, 3, 1, 2, 5, 7) == 5 * 262144 + ((7 * 4 + 2) * 2 + 1) * 256 + 3 * 64


def test_neuron_addresses_layout():
    a = neuron_addresses([3, 1], 128, base=4096)
    assert a.tolist() == [4096 + 384, 4096 + 448, 4096 + 128, 4096 + 192]
    with pytest.raises(ValueError):
        neuron_addresses([0], 100)


def test_dense_16k_neurons_reach_the_peak():
    addrs = neuron_addresses(np.arange(512), NEURON)      # 8 MB: 32 row stripes
    s = _stats(addrs)
    n = addrs.size // T.ranks                             # bursts per rank
    stripes = n // 1024
    # first read at tRCD, then one per tCCD_S; tFAW delays the 5th ACT once at the start and
    # every later row switch costs SWITCH; the last data lands tCL + tBL after its read
    assert s["clocks"] == T.tRCD + T.tCCD_S * (n - 1) + RRD_STALL + SWITCH * (stripes - 1) + LAT
    print(f"dense 16 KB neurons: {s['fraction']:.4f} of peak")
    assert s["fraction"] >= 0.95
    assert math.isclose(s["fraction"], 0.9907, abs_tol=1e-4)


def test_single_rank_single_bank_group_is_tccd_l_bound():
    reads = 2048                                          # 4 rows of bank group 0 of rank 0
    addrs = np.arange(reads) * 512                        # rank 0, bank group 0, banks 0..3
    assert set(decode(T, addrs)[0].tolist()) == {0} and set(decode(T, addrs)[1].tolist()) == {0}
    s = _stats(addrs)
    # one read per tCCD_L; a row switch returns to a bank 4 reads (32 clocks) after its last
    # read, but needs tRTP + tRP + tRCD = 60: 28 more per switch (3 switches)
    assert s["clocks"] == T.tRCD + T.tCCD_L * (reads - 1) + 28 * 3 + LAT
    assert math.isclose(s["fraction"], T.tCCD_S / T.tCCD_L / T.ranks, rel_tol=0.02)  # 1/8


def test_sparse_16k_sorted_within_10_percent_of_dense():
    rng = np.random.default_rng(2)
    active = np.sort(rng.choice(4096, 410, replace=False))  # 10% of a 64 MB layer, ascending
    dense = _stats(neuron_addresses(np.arange(512), NEURON))["fraction"]
    sparse = _stats(neuron_addresses(active, NEURON))["fraction"]
    print(f"sparse 16 KB (sorted, 10%): {sparse:.4f} of peak, {sparse / dense:.3f} of dense")
    assert sparse >= 0.9 * dense


def test_sparse_16k_every_neuron_a_new_row():
    # the worst case: each neuron in another row stripe, so each costs one SWITCH per rank
    rng = np.random.default_rng(3)
    k = 256
    stripes = rng.permutation(4096)[:k]
    active = stripes * 16 + rng.integers(0, 16, k)        # 16 neurons per 256 KB stripe
    s = _stats(neuron_addresses(active, NEURON))
    n = k * NEURON // 64 // T.ranks
    assert s["clocks"] == T.tRCD + T.tCCD_S * (n - 1) + RRD_STALL + SWITCH * (k - 1) + LAT
    print(f"sparse 16 KB (a new row each): {s['fraction']:.4f} of peak "
          f"(limit 256 / {256 + SWITCH} = {256 / (256 + SWITCH):.4f})")
    assert math.isclose(s["fraction"], 256 / (256 + SWITCH), rel_tol=0.005)


def _tiny_stream(timing, rounds, seed):
    """128 B neurons, each in its own random row stripe, their slots in a stripe cycling so
    that every rank walks its banks round-robin (alternating bank groups): every burst is a row
    miss and nothing but the ACT rules limits the stream."""
    per_stripe = timing.ranks * timing.bank_groups * timing.banks * timing.page_bytes // 128
    slots = 2 * timing.bank_groups * timing.banks        # slots a rank pair's banks cycle over
    rng = np.random.default_rng(seed)
    stripes = rng.permutation(100_000)[:rounds * slots]
    return stripes * per_stripe + np.tile(np.arange(slots), rounds)


def test_tiny_sparse_is_act_bound():
    # Table II, 8 banks per rank: a bank reopens tRC = 76 after its last ACT, so a rank does
    # 8 ACTs (= 8 bursts) per 76 clocks; tFAW alone would allow 4 per 26.  ACTs of the first
    # round at 0 4 8 12 26 30 34 38 (tRRD_S, then tFAW), then ACT(k + 8) = ACT(k) + 76; data
    # at ACT + tRCD + tCL + tBL = ACT + 52.
    m = 100
    s = _stats(neuron_addresses(_tiny_stream(T, m, 4), 128))
    assert s["clocks"] == 38 + 76 * (m - 1) + T.tRCD + LAT
    print(f"tiny 128 B (new row each): {s['fraction']:.4f} of peak (tRC bound 32/76 = "
          f"{32 / 76:.4f})")
    assert math.isclose(s["fraction"], 8 * T.tCCD_S / T.tRC, rel_tol=0.01)


def test_tiny_sparse_with_16_banks_is_tfaw_bound():
    # 16 banks per rank: tRC / 16 = 4.75 < tFAW / 4 = 6.5, so tFAW binds: ACTs at
    # 26 * (k // 4) + 4 * (k % 4); a rank does 4 bursts per tFAW, 16/26 of the peak.
    t16 = dataclasses.replace(T, banks=8)
    m = 50
    s = _stats(neuron_addresses(_tiny_stream(t16, m, 5), 128), t16)
    acts = 16 * m                                         # per rank
    assert s["clocks"] == 26 * (acts // 4 - 1) + 12 + T.tRCD + LAT
    print(f"tiny 128 B, 16 banks: {s['fraction']:.4f} of peak (tFAW bound 16/26)")
    assert math.isclose(s["fraction"], 4 * T.tCCD_S / T.tFAW, rel_tol=0.01)


def test_tiny_random_sparse_is_slower_still():
    rng = np.random.default_rng(6)
    s = _stats(neuron_addresses(rng.choice(1 << 20, 4000, replace=False), 128))
    print(f"tiny 128 B, random: {s['fraction']:.4f} of peak")
    assert s["fraction"] < 8 * T.tCCD_S / T.tRC


def _broken(tr, key, idx, value):
    bad = {k: v.copy() for k, v in tr.items()}
    bad[key][idx] = value
    return bad


def test_checker_flags_broken_traces():
    addrs = neuron_addresses([0, 5000, 17], NEURON)
    tr = _legal(addrs)
    reopen = int(np.flatnonzero(tr["pre"] >= 0)[0])      # first ACT after a PRE
    fresh = int(np.flatnonzero(tr["act"] >= 0)[4])        # rank 0's 2nd ACT (bank group 1)
    assert tr["act"][fresh] == T.tRRD_S
    cases = ((("rd", 0, tr["rd"][0] - 1), "tRCD"),
             (("rd", 8, tr["rd"][0] + 2), "tCCD_S"),       # rank 0's 2nd read
             (("act", reopen, tr["act"][reopen] - 20), "tRP"),
             (("done", 3, tr["done"][3] + 1), "tCL"),
             (("act", fresh, 0), "tRRD_S"),
             (("act", fresh, -1), "open row"))             # a read from a precharged bank
    for (key, idx, value), what in cases:
        found = check_trace(T, addrs, _broken(tr, key, idx, value))
        assert any(what in v for v in found), (what, found[:3])


def test_checker_flags_row_cycle():
    addrs = neuron_addresses(_tiny_stream(T, 3, 9), 128)
    tr = _legal(addrs)
    k = int(np.flatnonzero(tr["pre"] >= 0)[0])            # a bank's 2nd ACT, exactly tRC on
    bad = _broken(_broken(tr, "act", k, tr["act"][k] - 1), "pre", k, tr["pre"][k] - 1)
    found = check_trace(T, addrs, bad)                    # tRP still holds
    assert any("row cycle" in v for v in found) and any("tRAS" in v for v in found)
    assert not any("tRP" in v for v in found)


def test_checker_flags_tfaw_and_order():
    addrs = np.arange(8) * 256                            # rank 0: 8 banks, fresh
    tr = _legal(addrs)
    assert tr["act"].tolist() == [0, 4, 8, 12, 26, 30, 34, 38]
    bad = {k: v.copy() for k, v in tr.items()}
    bad["act"][4] = 16
    assert any("tFAW" in v for v in check_trace(T, addrs, bad))
    bad = {k: v.copy() for k, v in tr.items()}
    bad["rd"][[2, 3]] = bad["rd"][[3, 2]]
    bad["done"] = bad["rd"] + LAT
    assert any("in order" in v for v in check_trace(T, addrs, bad))


def test_lookahead_bound_is_legal_and_costs_little():
    addrs = neuron_addresses(np.random.default_rng(7).permutation(4096)[:64] * 16, NEURON)
    free = stream_stats(T, addrs)["clocks"]
    tr = _legal(addrs, lookahead=16)
    assert tr["done"].max() == free                      # 16 reads ahead hide it all
    short = _legal(addrs, lookahead=2)
    assert short["done"].max() > free


def test_beat_arrivals():
    rng = np.random.default_rng(8)
    for addrs in (neuron_addresses(np.arange(8), NEURON),
                  neuron_addresses(rng.choice(4096, 16, replace=False), NEURON),
                  neuron_addresses(rng.choice(1 << 20, 64, replace=False), 128)):
        beats = beat_arrivals(T, addrs, 128)
        assert len(beats) == addrs.size // 2
        assert all(a <= b for a, b in zip(beats, beats[1:]))
        # first data: ACT at 0, RD at tRCD, complete tCL + tBL later, in 1 GHz cycles
        assert beats[0] == math.ceil((T.tRCD + T.tCL + T.tBL) * T.tck_ns) == 33
    dense = neuron_addresses(np.arange(2), NEURON)
    b = beat_arrivals(T, dense, 256, clock_mhz=500.0, start=10)
    assert b[0] == 10 + math.ceil(52 * 0.625 / 2)
    raw = beat_arrivals(T, neuron_addresses([5, 2, 9, 1000, 33], 128), 128, in_order=False)
    assert raw != sorted(raw)                             # uneven ranks: out of order raw
    with pytest.raises(ValueError):
        beat_arrivals(T, dense, 96)


def test_model_throughput():
    addrs = neuron_addresses(np.arange(256), NEURON)     # 65536 bursts
    t0 = time.perf_counter()
    burst_schedule(T, addrs)
    rate = addrs.size / (time.perf_counter() - t0)
    print(f"model: {rate / 1e3:.0f}k bursts/s")
    assert rate >= 300_000

"""Input-side response of ``sv_gemv`` (:mod:`pimforge.hw.hilos.sv_gemv`), a job unit.

A job is answered by its ``G x head_dim / E`` output beats (the drain of its O slot), owed at
its last V beat.  Which V beat that is follows from ``i_p``, as in the unit: each block's real
positions (the ``keep`` bits of query 0's beats) are its V rows of ``head_dim / E`` beats, and
the block's ``last`` ends the job.  Shadow registers keep the two P-buffer slots' row counts and
``last`` flags and the V beat and row counters.  The latency is the cycle model's
(:func:`~pimforge.hw.hilos.sv_gemv_timing.sv_schedule`: the last V beat to the last output
beat), the largest over back-to-back one-position jobs (a job's drain may wait for the one
before it).  A block with no real position (no V row, outside the unit's contract) voids the
check.  A V beat the unit takes and drops leaves its job unfinished: no outputs.
"""
from __future__ import annotations

from amaranth.hdl import Const, Mux, Signal

from pimforge.hw.core.formal import Owed, Response
from pimforge.hw.hilos.config import SvGemvConfig
from pimforge.hw.hilos.sv_gemv_timing import sv_schedule

__all__ = ["job_latency", "sv_response"]


def job_latency(cfg: SvGemvConfig) -> int:
    """Cycles from a job's last V beat to its last output beat, no stalls, the largest over
    three back-to-back one-position jobs."""
    return max(s["last_out"] - s["v_last"] for s in sv_schedule(cfg, [1, 1, 1]))


def sv_response(cfg: SvGemvConfig) -> Response:
    """``G x head_dim / E`` output beats per job, owed at its last V beat: module docstring."""
    U, G, BB, RB, blk = cfg.lanes, cfg.d_group, cfg.block_beats, cfg.row_beats, cfg.block

    def owed(m, ports):
        ip, iv = ports.i_p, ports.i_v
        p_take = ip.valid & ip.ready
        v_take = iv.valid & iv.ready
        # i_p side: beat, query, the block's keep count, then its slot's rows and last
        pk = Signal(range(BB), name="resp_p_beat")
        pg = Signal(range(max(G, 2)), name="resp_p_query")
        keep_n = Signal(range(blk + 1), name="resp_p_keep")
        ws = Signal(name="resp_p_wslot")
        rows = [Signal(range(blk + 1), name=f"resp_rows{s}") for s in range(2)]
        lasts = [Signal(name=f"resp_last{s}") for s in range(2)]
        ones = Const(0, range(U + 1))
        for j in range(U):
            ones = ones + ip.payload.keep[j]
        keep_next = keep_n + Mux(pg == 0, ones, 0)
        p_done = p_take & (pg == G - 1) & (pk == BB - 1)
        with m.If(p_take):
            m.d.sync += [pk.eq(Mux(pk == BB - 1, 0, pk + 1)), keep_n.eq(keep_next)]
            with m.If(pk == BB - 1):
                m.d.sync += pg.eq(Mux(pg == G - 1, 0, pg + 1))
        with m.If(p_done):
            m.d.sync += [ws.eq(~ws), keep_n.eq(0)]
            for s in range(2):
                with m.If(ws == s):
                    m.d.sync += [rows[s].eq(keep_next), lasts[s].eq(ip.payload.last)]
        # i_v side: the beat and row of the block being issued
        rs = Signal(name="resp_v_rslot")
        vb = Signal(range(RB), name="resp_v_beat")
        vj = Signal(range(blk), name="resp_v_row")
        n = Mux(rs, rows[1], rows[0])
        blk_end = (vb == RB - 1) & (vj == n - 1)
        job_end = v_take & blk_end & Mux(rs, lasts[1], lasts[0])
        with m.If(v_take):
            m.d.sync += vb.eq(Mux(vb == RB - 1, 0, vb + 1))
            with m.If(vb == RB - 1):
                m.d.sync += vj.eq(Mux(blk_end, 0, vj + 1))
            with m.If(blk_end):
                m.d.sync += rs.eq(~rs)
        return ([Owed(Mux(job_end, G * RB, 0), job_latency(cfg))],
                ~(p_done & (keep_next == 0)))
    return Response("o", owed)

"""Formal environment of ``pamif_sender`` alone: its memory's and its buffer's contract.

``o_fill`` is ``i_rd`` passed through, with the destination slot looked up in the list memory
at the read's entry (:mod:`pimforge.hw.pamif.sender`).  It follows the stream rules only if the
list memory does not change under a waiting read, i.e. if no new list loads while a read
answer waits.  In ``pam_interface`` that holds by construction; alone, the sender's environment
must keep the same contract, assumed here (``FormalTop``'s ``extra``):

* the source memory answers only requests, in request order, with the request's tag
  (``entry``, ``word``): ``i_rd`` offers the oldest outstanding ``o_rd`` request's tag (a FIFO
  of the outstanding tags; asserted never to overflow: the sender's window bounds them by
  ``regions * src_words``);
* the buffer frees regions in list order, each only after its entry's words were all filled:
  the ``k``-th ``i_free`` of a list only once entry ``k`` had ``src_words`` answers (the counts
  restart when ``o_status`` ends the list).

Without them a bmc finds ``o_fill_payload_held`` failing at step 2 (a read answered before it
was requested waits while the list entry it names is loaded), and with answers allowed before
their entry is complete, ``o_rd_valid_held`` at step 8 (a region freed early moves the window
past a waiting read).  The counters are cumulative and wide enough for bounded proofs, not for
k-induction.

The input-side response (:func:`sender_response`): each read answer on ``i_rd`` owes one word
on ``o_fill``.
"""
from __future__ import annotations

from amaranth.hdl import Array, Assert, Assume, Cat, Signal
from amaranth.lib.fifo import SyncFIFO

from pimforge.hw.core.formal import Response, per_transfer
from pimforge.hw.pamif.sender_timing import sender_schedule

__all__ = ["sender_environment", "fill_latency", "sender_response"]


def sender_environment(m, dut, dut_module, ports, active) -> None:
    """The assumptions of the module docstring."""
    cfg = dut.cfg
    rd, ans, free, status = ports.o_rd, ports.i_rd, ports.i_free, ports.o_status
    tag_bits = len(rd.payload.entry) + len(rd.payload.word)
    m.submodules.env_outstanding = tags = SyncFIFO(width=tag_bits,
                                                   depth=cfg.regions * cfg.src_words + 1)
    m.d.comb += [tags.w_en.eq(rd.valid & rd.ready), tags.w_data.eq(Cat(rd.payload.entry,
                                                                        rd.payload.word)),
                 tags.r_en.eq(ans.valid & ans.ready)]
    with m.If(active):
        m.d.comb += Assert(~(tags.w_en & ~tags.w_rdy), "env_outstanding_reads_in_window")
    with m.If(ans.valid):
        m.d.comb += Assume(tags.r_rdy & (Cat(ans.payload.entry, ans.payload.word) ==
                                         tags.r_data), "env_rd_answers_oldest_request")
    done = [Signal(range(cfg.src_words + 1), name=f"env_answers{e}")
            for e in range(cfg.capacity)]
    freed = Signal(range(cfg.capacity + 1), name="env_freed")
    end = status.valid & status.ready
    with m.If(end):
        m.d.sync += [freed.eq(0)] + [d.eq(0) for d in done]
    with m.Else():
        with m.If(ans.valid & ans.ready):
            m.d.sync += Array(done)[ans.payload.entry].eq(Array(done)[ans.payload.entry] + 1)
        with m.If(free.valid & free.ready):
            m.d.sync += freed.eq(freed + 1)
    with m.If(free.valid):
        m.d.comb += Assume((freed < cfg.capacity) & (Array(done)[freed] == cfg.src_words),
                           "env_free_after_its_entry_filled")


def fill_latency(cfg) -> int:
    """Cycles from a read answer on ``i_rd`` to its word on ``o_fill`` in the cycle model
    (:func:`~pimforge.hw.pamif.sender_timing.sender_schedule`, whose memory answers each read
    the cycle after its request)."""
    s = sender_schedule(cfg, [(0, 0, 0)])
    return s["fill"][0] - (s["rd"][0] + 1)


def sender_response(cfg) -> Response:
    """Input-side response: every read answer taken on ``i_rd`` is passed on as one word on
    ``o_fill`` within :func:`fill_latency`.  (A list's reads and its status wait for the
    buffer's releases on ``i_free``, which the environment gives when it likes, so they are
    not counted.)  An answer taken and not passed on is a word the buffer never gets."""
    return per_transfer({"i_rd": fill_latency(cfg)}, "o_fill")

"""Bank-timing memory models of the PAM interface's two sides (Table 1): pure Python, exact
integer picoseconds, deterministic.  The cocotb bench asks them when each source word may be
offered and when each destination write may be accepted; the cycle model
(:mod:`pimforge.hw.pamif.interface_timing`) asks the same objects, so bench and model agree by
construction and the RTL is compared against both.

Times: interface cycle ``c`` is ``c * IF_PERIOD_PS`` picoseconds; a memory time becomes the first
interface cycle at or after it.  Addresses decode with the tier's layout
(:mod:`pimforge.hw.pamif.layout`): ``(((group * banks + bank) * rows + row) * row_words + col)``.

**DRAM reads** (:class:`ReadModel`, HBM3 and DDR4).  An in-order controller with bank
lookahead: a request enters the queue at its cycle; a row miss opens its row at once (ACT at
the request, after the bank's previous row is closed: its last RD + tBL + tRP); the column
command issues in request order at the earliest ``max(ACT + tRCD, previous RD of the channel +
tCCD_S and + tBL (the data bus), previous RD of the bank group + tCCD_L)``; the data is there
``tCL + tBL`` later.  Words of one burst (DDR: 8 words of 64 bits) share its RD while it is
the bank's latest.  Words return in
request order, at the earliest one cycle after their request.

**DRAM writes** (:class:`WriteModel`).  A write queue of ``WRITE_QUEUE`` bursts: a burst's first
word is accepted once the burst ``WRITE_QUEUE`` earlier has issued; its ACT (row miss) is at its
acceptance, after the bank's previous row closed (last WR + tBL + tWR + tRP); its WR at the
earliest ``max(accepted, ACT + tRCD, previous WR of the bank group + tCCD_L)`` that is at least
``max(tCCD_S, tBL)`` away from every WR already placed (the data bus): in order within a bank
group, but bursts of another bank group may take the gaps, as a controller's write queue does
(a token's bursts all go to one bank group, so in strict order a stream of tokens alternating
two DDR4 bank groups would run at tCCD_L, half the rank's rate).  Complete (``finish``) at the
latest WR + tCL + tBL.

**SSD reads.**  Each die holds one page register: a request to another page starts a page read
(tR) at the earliest when the request arrives and the die's previous read ended (cache read:
the array reads while the previous page transfers); words cross the channel one byte per
``tck_ps``, in request order per channel, once their page is read.

**SSD writes.**  Words cross the channel one byte per ``tck_ps``.  Each die has a cache register
that fills with one page; the page is programmed (tPROG, one at a time per die) when it is
full, or when a word for another page of the die arrives; that word waits for the register,
free when the program starts.  ``finish`` programs the partial pages and returns when every
die is done.
"""
from __future__ import annotations

import bisect

from pimforge.hw.pamif.layout import IF_PERIOD_PS, Tier

__all__ = ["ReadModel", "WriteModel", "WRITE_QUEUE", "to_cycle", "decode"]

WRITE_QUEUE = 32        # bursts in the DRAM controller's write queue
_LONG_AGO = -(1 << 50)


def to_cycle(ps: int) -> int:
    """The first interface cycle at or after ``ps``."""
    return -(-ps // IF_PERIOD_PS)


def decode(t: Tier, addr: int) -> tuple:
    """(group, bank, row, col) of a word address."""
    col = addr % t.row_words
    rest = addr // t.row_words
    row = rest % t.rows
    rest //= t.rows
    return rest // t.banks, rest % t.banks, row, col


class _Dram:
    def __init__(self, t: Tier, reorder: bool = False):
        self.t = t
        self.reorder = reorder                 # writes: bank groups interleave (see module doc)
        self.recent = []                       # column command times, sorted (reorder only)
        nb = t.groups * t.banks
        self.open_row = [-1] * nb
        self.bank_free = [_LONG_AGO] * nb      # earliest ACT (previous row closed)
        self.bank_ready = [_LONG_AGO] * nb     # the open row's ACT + tRCD
        self.group_cmd = [_LONG_AGO] * t.groups
        self.chan_cmd = _LONG_AGO
        self.bank_burst = [-1] * nb            # the burst of each bank's last column command
        self.bank_cmd = [0] * nb
        self.last_cmd = 0

    def command(self, addr: int, arrive: int, close: int) -> int:
        """Issue the column command of the burst holding ``addr`` (or reuse the burst in
        flight); returns its time.  ``close``: tCK after a column command before PRE."""
        t, ck = self.t, self.t.tck_ps
        burst = addr // t.burst_words
        g, b, row, _ = decode(t, addr)
        k = g * t.banks + b
        if burst == self.bank_burst[k]:
            return self.bank_cmd[k]
        if self.open_row[k] != row:
            act = max(arrive, self.bank_free[k])
            self.open_row[k] = row
            self.bank_ready[k] = act + t.tRCD * ck
        gap = max(t.tCCD_S, t.tBL) * ck
        if self.reorder:
            cmd = self._channel_slot(max(arrive, self.bank_ready[k],
                                         self.group_cmd[g] + t.tCCD_L * ck), gap)
            self.group_cmd[g] = max(self.group_cmd[g], cmd)
        else:
            cmd = max(arrive, self.bank_ready[k], self.chan_cmd + gap,
                      self.group_cmd[g] + t.tCCD_L * ck, self.last_cmd)
            self.chan_cmd = self.group_cmd[g] = self.last_cmd = cmd
        self.bank_free[k] = cmd + (close + t.tRP) * ck
        self.bank_burst[k], self.bank_cmd[k] = burst, cmd
        return cmd


    def _channel_slot(self, t0: int, gap: int) -> int:
        """The earliest time >= ``t0`` at least ``gap`` away from every column command issued
        (the data bus and tCCD_S); keeps the sorted list of recent commands."""
        rec = self.recent = [c for c in self.recent if c > t0 - 64 * gap] if \
            len(self.recent) > 256 else self.recent
        t = t0
        for c in rec:
            if c <= t - gap:
                continue
            if c >= t + gap:
                break
            t = c + gap
        bisect.insort(rec, t)
        return t


class ReadModel:
    """The source memory: :meth:`ready` gives the first cycle read ``k`` (word address
    ``addrs[k]``, requested at cycle ``req``) may be offered back; call it for k = 0, 1, ..."""

    def __init__(self, t: Tier, addrs):
        self.t = t
        self.addrs = list(addrs)
        self.out = []
        if t.kind == "dram":
            self.dram = _Dram(t)
        else:
            self.page = [-1] * (t.groups * t.banks)
            self.page_done = [_LONG_AGO] * (t.groups * t.banks)
            self.chan = [_LONG_AGO] * t.groups

    def ready(self, k: int, req: int) -> int:
        assert k == len(self.out), "reads are answered in order"
        t, a, arrive = self.t, self.addrs[k], req * IF_PERIOD_PS
        if t.kind == "dram":
            done = self.dram.command(a, arrive, t.tBL) + (t.tCL + t.tBL) * t.tck_ps
        else:
            g, b, row, _ = decode(t, a)
            d = g * t.banks + b
            if self.page[d] != row:
                self.page[d] = row
                self.page_done[d] = max(arrive, self.page_done[d]) + t.tR_ns * 1000
            done = max(self.page_done[d], self.chan[g]) + t.word_bytes * t.tck_ps
            self.chan[g] = done
        c = max(to_cycle(done), req + 1, self.out[-1] if self.out else 0)
        self.out.append(c)
        return c


class WriteModel:
    """The destination memory: :meth:`earliest` gives the first cycle write ``k`` may be
    accepted, once writes 0 .. k-1 were committed (:meth:`commit`) at their cycles."""

    def __init__(self, t: Tier, addrs, queue: int = WRITE_QUEUE):
        self.t = t
        self.addrs = list(addrs)
        self.queue = queue
        self.n = 0                    # writes committed
        if t.kind == "dram":
            self.dram = _Dram(t, reorder=True)
            self.cmds = []            # WR time of every burst
        else:
            nd = t.groups * t.banks
            self.reg_page = [-1] * nd
            self.reg_words = [0] * nd
            self.prog_end = [0] * nd
            self.reg_free = [0] * nd  # the cache register takes a new page from here
            self.chan = [0] * t.groups

    def _new_burst(self, k: int) -> bool:
        b = self.t.burst_words
        return k == 0 or self.addrs[k] // b != self.addrs[k - 1] // b

    def earliest(self, k: int) -> int:
        assert k == self.n, "writes are accepted in order"
        t = self.t
        if t.kind == "dram":
            if self._new_burst(k) and len(self.cmds) >= self.queue:
                return to_cycle(self.cmds[len(self.cmds) - self.queue])
            return 0
        g, b, row, _ = decode(t, self.addrs[k])
        d = g * t.banks + b
        start = self.chan[g]
        if self.reg_page[d] not in (-1, row):
            start = max(start, self.prog_end[d])       # the register frees when it programs
        return to_cycle(max(start, self.reg_free[d]))

    def commit(self, k: int, cycle: int) -> None:
        assert k == self.n
        t, a, now = self.t, self.addrs[k], cycle * IF_PERIOD_PS
        self.n += 1
        if t.kind == "dram":
            if self._new_burst(k):
                self.cmds.append(self.dram.command(a, now, t.tBL + t.tWR))
            return
        g, b, row, _ = decode(t, a)
        d = g * t.banks + b
        if self.reg_page[d] not in (-1, row):
            self._program(d, now)
        self.reg_page[d] = row
        self.reg_words[d] += 1
        self.chan[g] = max(now, self.chan[g]) + t.word_bytes * t.tck_ps
        if self.reg_words[d] == t.row_words:
            self._program(d, self.chan[g])

    def _program(self, d: int, now: int) -> None:
        start = max(now, self.prog_end[d])
        self.prog_end[d] = start + self.t.tPROG_ns * 1000
        self.reg_free[d] = start
        self.reg_page[d], self.reg_words[d] = -1, 0

    def finish(self) -> int:
        """The cycle the destination holds every committed write."""
        t = self.t
        if t.kind == "dram":
            return to_cycle(max(self.cmds) + (t.tCL + t.tBL) * t.tck_ps) if self.cmds else 0
        for d in range(t.groups * t.banks):
            if self.reg_page[d] != -1:
                self._program(d, self.chan[d // t.banks])
        return to_cycle(max(self.prog_end))

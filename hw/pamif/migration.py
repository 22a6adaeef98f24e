"""Migration lists of the PAM interface: the checks, the sender's read order and the receiver's
write order, as pure functions of the list (PAM §6.2).  The RTL, the golden re-layout, the cycle
model and the command line's :func:`validate_migration` all follow these definitions.

A list is a sequence of entries ``(token, src_slot, dst_slot)``.

**Checks** (in list order; the first failing entry and, within it, the first failing check
decide the answer; the hardware reports it on ``o_status`` as ``(code, index)``):
``token_range`` (token >= ``tokens``), ``src_range`` (src_slot >= the source's slots),
``dst_range`` (dst_slot >= ``dst_slots``), ``dst_occupied`` (set in the occupancy bitmap by an
earlier migration or by an earlier entry of this list), ``duplicate_token`` (the token appeared
earlier in this list), and ``too_long`` (an entry at index ``capacity``).  A rejected list moves
nothing and leaves the bitmap as it was; an accepted one marks its destination slots.

**Read order** (the sender, the *command reorder unit*).  Each source group (bank group or SSD
channel) has an in-order queue of its entries.  Reads issue one word per cycle, round-robin over
the groups: after group g, the next group in g+1, g+2, ... that has work and whose head entry
``j`` is within ``regions`` of the oldest unfinished entry (``j < min(heads) + regions``); a
token's words are read consecutively within its group (one row: row-buffer hits), so
consecutive reads alternate bank groups (tCCD_S).  The rule makes the order a function of the
list alone (stalls only delay it), and the oldest unfinished entry is always eligible.

**Write order** (the receiver): entries in list order, each token's destination words in order.
"""
from __future__ import annotations

from pimforge.base.errors import UserError
from pimforge.hw.pamif.config import STATUS
from pimforge.hw.pamif.layout import interleaved_slot, slot_address, slot_fields

__all__ = ["list_error", "validate_migration", "read_order", "write_order", "read_addresses",
           "write_addresses", "interleaved_list"]


def _entry_error(cfg, e, occupied, seen, marks):
    token, src, dst = (int(x) for x in e)
    if not 0 <= token < cfg.tokens:
        return "token_range", "token", f"0 <= token < {cfg.tokens}"
    if not 0 <= src < cfg.src_slots:
        return "src_range", "src_slot", f"0 <= src_slot < {cfg.src_slots} (slots of {cfg.src})"
    if not 0 <= dst < cfg.dst_slots:
        return "dst_range", "dst_slot", f"0 <= dst_slot < {cfg.dst_slots}"
    if dst in occupied or dst in marks:
        return "dst_occupied", "dst_slot", "a free slot (this one is occupied)"
    if token in seen:
        return "duplicate_token", "token", "each token once per list"
    return None


def list_error(cfg, entries, occupied=()):
    """The first error of a list: ``(code, index, field, allowed)`` with ``code`` a key of
    :data:`~pimforge.hw.pamif.config.STATUS`, or None when the list is accepted."""
    occupied = set(int(s) for s in occupied)
    seen, marks = set(), set()
    for j, e in enumerate(entries):
        if j >= cfg.capacity:
            return "too_long", j, "list", f"at most capacity = {cfg.capacity} entries"
        err = _entry_error(cfg, e, occupied, seen, marks)
        if err:
            return (err[0], j) + err[1:]
        seen.add(int(e[0]))
        marks.add(int(e[2]))
    return None


def validate_migration(cfg, entries, occupied=()) -> None:
    """Raise :class:`~pimforge.base.errors.UserError` with one line naming the entry, the field
    and what is allowed, when the hardware would reject the list."""
    err = list_error(cfg, entries, occupied)
    if err is None:
        return
    code, j, fld, allowed = err
    if code == "too_long":
        raise UserError(f"migration list: {len(list(entries))} entries; allowed: {allowed}")
    value = int(list(entries)[j][{"token": 0, "src_slot": 1, "dst_slot": 2}[fld]])
    raise UserError(f"migration list: entry {j}: field '{fld}': got {value}; allowed: {allowed}")


def read_order(cfg, entries) -> list:
    """``(entry, word)`` of every source read, in issue order (module docstring)."""
    groups = cfg.src_tier.groups
    queues = [[] for _ in range(groups)]
    for j, e in enumerate(entries):
        queues[int(slot_fields(cfg.src_tier, cfg.token_bytes, int(e[1]))[0])].append(j)
    pos = [0] * groups                 # head index into each queue
    word = [0] * groups
    nw = cfg.src_words
    out = []
    last = groups - 1                  # the pointer starts so that group 0 goes first
    while True:
        heads = [queues[g][pos[g]] for g in range(groups) if pos[g] < len(queues[g])]
        if not heads:
            return out
        oldest = min(heads)
        for k in range(1, groups + 1):
            g = (last + k) % groups
            if pos[g] < len(queues[g]) and queues[g][pos[g]] < oldest + cfg.regions:
                break
        out.append((queues[g][pos[g]], word[g]))
        word[g] += 1
        if word[g] == nw:
            word[g] = 0
            pos[g] += 1
        last = g


def write_order(cfg, entries) -> list:
    """``(entry, word)`` of every destination write, in order."""
    return [(j, w) for j in range(len(entries)) for w in range(cfg.dst_words)]


def read_addresses(cfg, entries, order=None) -> list:
    """Source word address of every read (in :func:`read_order`)."""
    order = read_order(cfg, entries) if order is None else order
    base = [int(slot_address(cfg.src_tier, cfg.token_bytes, int(e[1]))) for e in entries]
    return [base[j] + w for j, w in order]


def write_addresses(cfg, entries) -> list:
    """Destination word address of every write (in :func:`write_order`)."""
    base = [int(slot_address(cfg.dst_tier, cfg.token_bytes, int(e[2]))) for e in entries]
    return [base[j] + w for j, w in write_order(cfg, entries)]



def interleaved_list(cfg, n: int) -> list:
    """``n`` tokens ``0 .. n-1`` on slots interleaved over the groups of both tiers (§6.1's
    first level, as PAM's scheduler places tokens), then in §6.1 order within each group."""
    return [(j, int(interleaved_slot(cfg.src_tier, cfg.token_bytes, j)),
             int(interleaved_slot(cfg.dst_tier, cfg.token_bytes, j))) for j in range(n)]

"""KV re-layout between PAM's tiers: through the host CPU (PAM Fig. 8c) or through the PAM
interface (Fig. 8d, §6.2), for the system model and ``reproduce pam``'s §6.2 row.

**Host path (Fig. 8c).**  The CPU reads the tokens' KV rows out of the source device into its
memory, re-formats them to the destination's layout and writes them back.  PAM gives three
causes and one figure: CPU-PIM interaction per transfer, CPU-side bandwidth below 10% of the
optimised level because PAM disables address hashing on its PIM memories, and "more than
500 ms for MB-scale transfers".  We model, per migration of ``n`` tokens of ``b`` bytes:

* ``n * 2 * interaction_s``: one CPU-PIM interaction per token and side (a PIM mode switch or
  doorbell and fence before the CPU may touch the rows; the per-interaction time is not given,
  see :data:`HOST`);
* ``n * b / (hash_eff * bw)`` per side, ``bw`` the tier's host path (the GPUs' PCIe link for
  HBM, the DIMM channel for DDR, NVMe for the SSD), ``hash_eff`` 0.1 on the DRAM tiers;
* ``n * b / copy_bw`` for the CPU's gather-scatter re-format.

**Interface path (Fig. 8d).**  The interface's own cycle model
(:func:`pimforge.hw.pamif.perf.migration_estimate`): the sender reads in the source's bank
order, the buffer re-lays, the receiver writes in the destination's layout, with no CPU.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from pimforge.hw.pamif.config import PAPER_TOKEN_BYTES
from pimforge.hw.pamif.layout import tier as layout_tier
from pimforge.hw.pamif.perf import migration_estimate
from pimforge.software import devices as dv

__all__ = ["HostPath", "HOST", "host_relayout_seconds", "INTERFACE_PORTS", "interface_instances",
           "interface_relayout_seconds", "MIGRATION_TOKEN_BYTES"]

GB = 1e9

# the migration unit: one token's K and V rows of one head (d = 128, fp16)
MIGRATION_TOKEN_BYTES = PAPER_TOKEN_BYTES

# tier -> (interface layout descriptor, interface instances per device).  PAM puts an interface
# in each PIM device's controller (§4.1, Fig. 4); a descriptor is one channel's worth of it
# (an HBM3 pseudo-channel, a DDR4 rank, an SSD channel), so a device has one instance per such
# channel: HBM3 16 channels x 2 pseudo-channels, DDR4 2 ranks, 8 SSD channels (Table 1).
INTERFACE_PORTS = {"hbm": ("hbm3", 32), "ddr": ("ddr4", 2), "ssd": ("ssd", 8)}


@dataclass(frozen=True)
class HostPath:
    """The host CPU's re-layout path (PAM Fig. 8c); every figure PAM does not give is marked."""

    interaction_s: float = 10e-6   # per token and side: a PIM mode switch / fence (assumed)
    hash_eff: float = 0.10         # PAM §6.2: "below 10% of optimized levels"
    copy_bw: float = 5 * GB        # one core's gather-scatter copy (assumed)
    bw: tuple = (("hbm", dv.LINKS["PCIe5x16"].effective), ("ddr", 25.6 * GB),
                 ("ssd", 7.88 * GB))
    hashed: tuple = ("hbm", "ddr")  # the PIM DRAM tiers, whose hashing PAM disables

    def side_bw(self, tier: str, direction: str = "read") -> float:
        """Bytes/s the CPU reads (writes) ``tier`` at; SSD writes are also bound by the
        device's page programs (its channels' interface descriptors, Table 1)."""
        bw = dict(self.bw)[tier] * (self.hash_eff if tier in self.hashed else 1.0)
        if tier == "ssd" and direction == "write":
            name, channels = INTERFACE_PORTS["ssd"]
            bw = min(bw, channels * layout_tier(name).mem_write_bw() * 1e9)
        return bw


HOST = HostPath()


def host_relayout_seconds(src: str, dst: str, n_tokens: int, token_bytes: int,
                          host: HostPath = HOST) -> dict:
    """Seconds to move ``n_tokens`` KV rows of ``token_bytes`` from tier ``src`` to ``dst``
    through the host CPU, and its parts."""
    size = n_tokens * token_bytes
    parts = {"interaction": 2 * n_tokens * host.interaction_s,
             "read": size / host.side_bw(src),
             "reformat": size / host.copy_bw,
             "write": size / host.side_bw(dst, "write")}
    return {"seconds": sum(parts.values()), "parts": parts, "bytes": size}


# ---------------------------------------------------------------------------------------------
# the interface path (Fig. 8d)

def interface_instances(src: str, dst: str, devices: dict) -> int:
    """Instances that move a migration between system tiers ``src`` and ``dst`` in parallel:
    the fewer of the two sides' channels (``devices``: tier -> device count)."""
    return max(1, min(devices[t] * INTERFACE_PORTS[t][1] for t in (src, dst)))


def interface_relayout_seconds(src: str, dst: str, n_bytes: float, token_bytes: int,
                               instances: int = 1) -> dict:
    """Seconds for ``instances`` PAM interfaces to move ``n_bytes`` of KV rows from system tier
    ``src`` to ``dst`` (each instance an equal share, by the interface's cycle-model estimate)."""
    if n_bytes <= 0:
        return {"seconds": 0.0, "bandwidth_fraction": 0.0, "bytes_per_s": 0.0}
    share = max(1, math.ceil(n_bytes / instances / token_bytes))
    est = migration_estimate(INTERFACE_PORTS[src][0], INTERFACE_PORTS[dst][0], n_tokens=share,
                             token_bytes=token_bytes)
    return {"seconds": est["seconds"], "bandwidth_fraction": est["bandwidth_fraction"],
            "bytes_per_s": instances * est["slower_side_bw"] * est["bandwidth_fraction"]}

"""What a bench asks the simulator to do, and what comes back.

A :class:`Job` is a list of :class:`Phase` objects run back to back in one simulation, with a reset
before each.  A phase gives, per input stream, the field arrays to send and the valid-side stall
pattern; per output stream, the field arrays expected (in order) and the ready-side pattern.
Payloads are packed and unpacked from the unit's manifest alone.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pimforge.sim.harness.stall import NO_STALL, StallPattern

__all__ = ["Phase", "Job", "PhaseResult", "pack_fields", "unpack_payloads", "concat_fields"]


@dataclass
class Phase:
    name: str
    inputs: dict                      # stream -> {field: array}
    expected: dict                    # stream -> {field: array}
    valid_stall: dict = field(default_factory=dict)   # stream -> StallPattern
    ready_stall: dict = field(default_factory=dict)   # stream -> StallPattern
    # Memory-model timing (the DRAM a bench plays): input stream -> cycles before its first beat
    # may be offered (read latency), and input stream -> (output stream, latency): beat k is
    # offered only ``latency`` cycles after the DUT's k-th transfer on that output (data read back
    # from where the DUT wrote it).
    start_delay: dict = field(default_factory=dict)
    after: dict = field(default_factory=dict)
    # Memory-model delivery (the DIMM a bench plays): input stream -> (reference input stream,
    # refs, offsets): beat k is offered no sooner than ``offsets[k]`` cycles after the
    # reference stream's transfer number ``refs[k]`` (weights that arrive a DRAM schedule after
    # the command that asked for them).
    arrivals: dict = field(default_factory=dict)
    # Memory-model callables (the memories a PAM interface bench plays): input stream ->
    # ``fn(k, stamps)``, the earliest cycle beat k may be offered, or None while it cannot be
    # known yet; output stream -> ``fn(k, stamps)``, the earliest cycle transfer k may be
    # accepted (ANDed with the ready-side stall pattern).  ``stamps`` maps every stream of the
    # phase to its transfer cycles so far; a callable must only look at transfers that precede
    # the beat it answers for.
    offer_at: dict = field(default_factory=dict)
    ready_at: dict = field(default_factory=dict)

    def stall_for(self, stream: str, side: str) -> StallPattern:
        table = self.valid_stall if side == "valid" else self.ready_stall
        return table.get(stream, table.get("*", NO_STALL))


@dataclass
class Job:
    phases: list
    drain_cycles: int = 32          # cycles kept running after the last expected output
    timeout_factor: int = 50        # cycle budget = factor * (transfers + 100)


@dataclass
class PhaseResult:
    name: str
    cycles: int                     # cycles from the first cycle after reset to the last transfer
    in_stamps: dict                 # stream -> list of cycle numbers of accepted inputs
    out_stamps: dict                # stream -> list of cycle numbers of outputs
    received: dict                  # stream -> list of payload ints
    errors: list                    # human-readable checker failures (empty = pass)
    # Activity probes (pimforge.hw.core.activity): action key -> count, over the phase from
    # reset to the end of the drain but its last edge, and the number of cycles that covers.
    actions: dict = field(default_factory=dict)
    probe_cycles: int = 0


def _stream_fields(manifest: dict, stream: str) -> list:
    return manifest["streams"][stream]["fields"]


def pack_fields(manifest: dict, stream: str, values: dict) -> list:
    """Pack per-field arrays into payload integers (Python ints: payloads may exceed 64 bits)."""
    fields = _stream_fields(manifest, stream)
    names = {f["name"] for f in fields}
    extra = set(values) - names
    missing = names - set(values)
    if extra or missing:
        raise ValueError(f"stream '{stream}': fields {sorted(missing)} missing, {sorted(extra)} unknown")
    # Python lists stay as they are: NumPy would turn a list of ints that straddles 2**63 into
    # float64 and lose the low bits of 64-bit payload fields.
    values = {k: (list(v) if isinstance(v, (list, tuple)) else np.atleast_1d(v).tolist())
              for k, v in values.items()}
    lengths = {len(v) for v in values.values()}
    if len(lengths) != 1:
        raise ValueError(f"stream '{stream}': field arrays differ in length: {sorted(lengths)}")
    (n,) = lengths
    total = [0] * n
    for f in fields:
        mask = (1 << f["width"]) - 1
        col = values[f["name"]]
        off = f["offset"]
        for k in range(n):
            total[k] |= (int(col[k]) & mask) << off
    return total


def unpack_payloads(manifest: dict, stream: str, payloads) -> dict:
    """Inverse of :func:`pack_fields`: payload ints to per-field arrays (int64, or Python ints
    in an object array for fields wider than 62 bits, such as packed vectors)."""
    out = {}
    for f in _stream_fields(manifest, stream):
        mask = (1 << f["width"]) - 1
        dtype = np.int64 if f["width"] <= 62 else object
        out[f["name"]] = np.array([(int(p) >> f["offset"]) & mask for p in payloads], dtype=dtype)
    return out


def concat_fields(parts) -> dict:
    """Per-field lists of several requests (``{field: list}`` each) joined end to end, as one
    stream of back-to-back requests."""
    out = {}
    for part in parts:
        for key, vals in part.items():
            out.setdefault(key, []).extend(vals)
    return out

"""``pimforge run pam-migrate``: move KV tokens between two tiers' layouts through the PAM
interface (PAM §6.1, §6.2).

The migration list is a ``.npy`` array or a CSV file of rows ``token, src_slot, dst_slot``
(an optional header line); slots are the tiers' §6.1 slots (:mod:`pimforge.hw.pamif.layout`),
the destination slots the scheduler's choice.  The list is checked exactly as the hardware
checks it (:func:`pimforge.hw.pamif.migration.validate_migration`): a bad list ends with one
line naming the entry, the field and what is allowed, and nothing is written.

The interface is a ``pam_interface`` config (``--preset``, ``--config``, ``--set``: the unit's
own layering).  The source image is random (``--seed``) unless ``--src-image`` gives one; the
result is the destination image (``--out``, the golden re-layout, bytes of the tier's address
range) and a report: tokens, bytes, the interface's cycles (its O(1) estimate, which
``tests/pamif`` holds to the exact cycle model) and the fraction of the slower side's bandwidth.
"""
from __future__ import annotations

import csv
import io
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pimforge.base.cliargs import check_seed
from pimforge.base.errors import UserError
from pimforge.hw.pamif.config import PAIR_PRESETS, PamifConfig
from pimforge.hw.pamif.migration import validate_migration
from pimforge.hw.pamif.perf import migration_estimate
from pimforge.sim.golden.pamif.relayout import random_image, relayout
from pimforge.software.flow_io import check_out_path, load_npy, write_flow_outputs

__all__ = ["MigrateResult", "pam_migrate", "load_list", "run_cli", "MAX_IMAGE_BYTES"]

MAX_IMAGE_BYTES = 64 << 20
"""Largest tier address range the golden images are built for (the small tiers and the SSD
range fit; a whole HBM3 pseudo-channel of 256 MB does not: give only the report then)."""


@dataclass
class MigrateResult:
    """``o``: the destination image (uint8) or None; the interface's figures for the list."""

    o: np.ndarray | None
    config: dict
    tokens: int
    bytes: int
    cycles: int
    seconds: float
    bandwidth_fraction: float
    wall_s: float = 0.0

    def report(self) -> dict:
        return {"flow": "pam-migrate", "config": self.config, "tokens": self.tokens,
                "bytes": self.bytes, "cycles": self.cycles, "seconds": self.seconds,
                "bandwidth_fraction": self.bandwidth_fraction, "wall_s": round(self.wall_s, 3)}

    def summary(self) -> str:
        c = self.config
        return (f"pam-migrate {c['src']} -> {c['dst']}: {self.tokens} token(s), {self.bytes:,} B "
                f"in {self.cycles:,} interface cycles ({self.seconds * 1e6:.2f} us), "
                f"{self.bandwidth_fraction:.3f} of the slower side's bandwidth")


COLUMNS = ("token", "src_slot", "dst_slot")
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def _check_text_file(p: Path, option: str, what: str) -> None:
    if p.is_dir():
        raise UserError(f"{option} file '{p}' is a directory; give {what}")
    if not p.is_file():
        raise UserError(f"{option} file '{p}' does not exist")


def _read_text(p: Path, option: str) -> str:
    try:
        return p.read_text()
    except UnicodeDecodeError:
        raise UserError(f"{option} file '{p}' is not a text file; allowed: CSV text or a "
                        f".npy array") from None
    except OSError as e:
        raise UserError(f"{option} file '{p}' cannot be read: {e.strerror}") from None


def load_list(path) -> np.ndarray:
    """A migration list from ``.npy`` (n x 3 integers) or CSV (``token,src_slot,dst_slot``)."""
    p = Path(path)
    if p.suffix == ".npy":
        arr = load_npy(p, "--list", dtypes=("int8", "int16", "int32", "int64", "uint8",
                                            "uint16", "uint32", "uint64"))
    else:
        _check_text_file(p, "--list", "a .csv or .npy migration list")
        rows = []
        for n, row in enumerate(csv.reader(io.StringIO(_read_text(p, "--list")))):
            cells = [c.strip() for c in row if c.strip()]
            if not cells or (n == 0 and not cells[0].lstrip("-").isdigit()):
                continue  # blank line or header
            try:
                vals = [int(c) for c in cells]
            except ValueError:
                raise UserError(f"--list '{path}': line {n + 1}: got {row!r}; allowed: three "
                                "integers token,src_slot,dst_slot") from None
            for name, v in zip(COLUMNS, vals):
                if not INT64_MIN <= v <= INT64_MAX:
                    raise UserError(f"--list '{path}': line {n + 1}: {name} {v} is out of "
                                    f"range; allowed: an integer in {INT64_MIN}..{INT64_MAX} "
                                    f"(then checked against the tiers' slots)")
            rows.append(vals)
        arr = np.array(rows, dtype=np.int64).reshape(-1, 3) if all(
            len(r) == 3 for r in rows) else None
        if arr is None:
            bad = next(i for i, r in enumerate(rows) if len(r) != 3)
            raise UserError(f"--list '{path}': entry {bad}: got {len(rows[bad])} values; "
                            "allowed: three integers token,src_slot,dst_slot")
    if arr.dtype == np.uint64 and arr.size and int(arr.max()) > INT64_MAX:
        raise UserError(f"--list '{path}': value {int(arr.max())} is out of range; allowed: "
                        f"integers in {INT64_MIN}..{INT64_MAX}")
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise UserError(f"--list '{path}': shape {arr.shape}; allowed: (n, 3) rows of "
                        "token, src_slot, dst_slot")
    if len(arr) == 0:
        raise UserError(f"--list '{path}': no entries; allowed: at least one")
    return arr.astype(np.int64)


def pam_migrate(entries, cfg: PamifConfig | None = None, occupied=(), src_image=None,
                seed: int = 0, image: bool = True) -> MigrateResult:
    """Check ``entries`` as the hardware does, re-lay them (golden, when ``image``) and report
    the interface's cycles and bandwidth fraction."""
    t0 = time.perf_counter()
    cfg = cfg or PamifConfig()
    entries = [tuple(int(x) for x in e) for e in entries]
    validate_migration(cfg, entries, occupied)
    s, d = cfg.src_tier, cfg.dst_tier
    out = None
    if image:
        for t, what in ((s, "source"), (d, "destination")):
            if t.words() * t.word_bytes > MAX_IMAGE_BYTES:
                raise UserError(f"{what} tier '{t.name}': its image of "
                                f"{t.words() * t.word_bytes >> 20} MB is over the "
                                f"{MAX_IMAGE_BYTES >> 20} MB the golden re-layout builds; "
                                "allowed: a smaller tier, or no --out (report only)")
        if src_image is None:
            src_image = random_image(np.random.default_rng(seed), s)
        elif src_image.size != s.words() * s.word_bytes:
            raise UserError(f"--src-image: {src_image.size} bytes; allowed: "
                            f"{s.words() * s.word_bytes} (the {s.name} range)")
        out = relayout(cfg, src_image, entries)
    est = migration_estimate(s, d, n_tokens=len(entries), token_bytes=cfg.token_bytes)
    return MigrateResult(out, {"src": cfg.src, "dst": cfg.dst, "token_bytes": cfg.token_bytes,
                               "regions": cfg.regions, "capacity": cfg.capacity},
                         len(entries), est["bytes"], est["cycles"], est["seconds"],
                         est["bandwidth_fraction"], time.perf_counter() - t0)


def run_cli(args, cfg: PamifConfig) -> int:
    """``pimforge run pam-migrate``: check everything, re-lay, then write the image and report
    (both or neither)."""
    check_seed(args.seed)
    if args.out is None and args.report is None:
        raise UserError("pam-migrate: give --out D.npy and/or --report R.json")
    for path, opt in ((args.out, "--out"), (args.report, "--report")):
        if path is not None:
            check_out_path(path, opt)
    entries = load_list(args.list)
    occupied = load_list_column(args.occupied) if args.occupied else ()
    src = load_npy(args.src_image, "--src-image", dtypes=("uint8",)).reshape(-1) \
        if args.src_image else None
    res = pam_migrate(entries, cfg, occupied, src, args.seed, image=args.out is not None)
    return write_flow_outputs(res, args.out, args.report)


def load_list_column(path) -> list:
    """Occupied destination slots: a ``.npy`` vector or one integer per CSV line."""
    p = Path(path)
    if p.suffix == ".npy":
        return [int(x) for x in load_npy(p, "--occupied", dtypes=("int32", "int64")).reshape(-1)]
    _check_text_file(p, "--occupied", "a .csv or .npy list of slots")
    try:
        return [int(t) for t in _read_text(p, "--occupied").replace(",", " ").split()]
    except ValueError:
        raise UserError(f"--occupied '{path}': allowed: integers (destination slots)") from None


PRESETS = PAIR_PRESETS

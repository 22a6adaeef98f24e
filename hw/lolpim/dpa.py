"""The DPA encoding of ``lolpim_dispatcher`` (LoL-PIM §5.2, Table 4; widths are this
generator's, the paper gives none): one definition for the RTL, its golden model, its bench and
its manifest.

**DPA program word** (``word_bits = 3 + row_bits + col_bits``, least significant first)::

    op[3] | operand field[row_bits + col_bits]
    DOT-PROD (0), RD-OUT (1), WR-INP (2):  row[row_bits] | col[col_bits]
    Dyn-Loop (3):  LE[pc_bits] | shift[shift_bits] | 0       LB = ceil(T_cur / 2**shift)
    Dyn-Modi (4):  target[1] (0 = row, 1 = col) | coef[row_bits] | 0
    5 .. 7: illegal (error ``bad_opcode``)

The three PIM commands are Table 3's; every one carries (row, col).  A Dyn-Loop repeats the
next LE program words LB times (LoL-PIM's ``row = T_cur / 256`` is ``shift = 8``).  A Dyn-Modi
makes one operand of the next program word (a PIM command) virtual: ``base + coef * iter``
(``base`` = the word's field, ``iter`` = the repetition, 0 outside loops); a virtual row goes
through the Va2Pa table of the run's request, a virtual column is used as it is.

**Host writes** (stream ``i``: ``kind``, ``addr``, ``data``): kind 0 writes program word
``addr``; kind 1 writes Va2Pa entry ``addr = request * vrows + vrow`` with ``data = valid |
prow << 1``; kind 2 fills the configuration buffer and starts a run: ``data = t_cur[t_bits] |
request | layer | layers | length`` (the program is words 0 .. length - 1, run once per layer
``layer .. layers - 1``); kind 3 is ignored.

**PIM command out** (stream ``o``): ``op[2] | row | col | layer | pc | iter`` (``pc`` and
``iter``: the program word and repetition it came from).  **Status** (``o_status``): ``code[4]
| index`` (:data:`STATUS`; the offending program index, or the length on success).
"""
from __future__ import annotations

from pimforge.hw.lolpim.config import DispatcherConfig, dispatcher_bits

__all__ = ["OPS", "PIM_OPS", "KINDS", "STATUS", "loop_bound", "word_fields", "run_fields",
           "map_fields", "out_fields", "pack", "unpack", "word", "encoding_manifest"]

OPS = {"dot_prod": 0, "rd_out": 1, "wr_inp": 2, "dyn_loop": 3, "dyn_modi": 4}
PIM_OPS = (0, 1, 2)
KINDS = {"cmd": 0, "map": 1, "run": 2}
# o_status codes.  Each error stops the run at the first failing word in execution order; the
# word that fails (and every later one) is not issued.
STATUS = {"ok": 0,
          "va2pa_miss": 1,      # no valid Va2Pa entry for (request, virtual row)
          "loop_bound": 2,      # LB > max_lb
          "loop_range": 3,      # LE = 0 or the loop body runs past the program's end
          "nested_loop": 4,     # a Dyn-Loop inside a loop body
          "operand_range": 5,   # a virtual row >= vrows, or a modified col >= 2**col_bits
          "bad_modi": 6,        # a Dyn-Modi not followed by a PIM command in the same body
          "bad_opcode": 7,      # opcode 5 .. 7
          "bad_config": 8}      # layer >= layers, request >= requests or length > cmd_depth


def loop_bound(t_cur: int, shift: int) -> int:
    """LB of a Dyn-Loop: ``ceil(T_cur / 2**shift)`` (§5.1: ``row = T_cur / 256``)."""
    return (t_cur + (1 << shift) - 1) >> shift


def word_fields(cfg: DispatcherConfig) -> dict:
    """Field lists (name, width), least significant first, of each kind of program word."""
    arg = cfg.row_bits + cfg.col_bits
    return {"pim": [("op", 3), ("row", cfg.row_bits), ("col", cfg.col_bits)],
            "loop": [("op", 3), ("le", cfg.pc_bits), ("shift", cfg.shift_bits),
                     ("pad", arg - cfg.loop_arg_bits)],
            "modi": [("op", 3), ("target", 1), ("coef", cfg.row_bits),
                     ("pad", cfg.col_bits - 1)]}


def run_fields(cfg: DispatcherConfig) -> list:
    """The configuration buffer (a kind-2 write's ``data``)."""
    return [("t_cur", cfg.t_bits), ("request", dispatcher_bits(cfg.requests)),
            ("layer", cfg.max_layers.bit_length()), ("layers", cfg.max_layers.bit_length()),
            ("length", cfg.len_bits)]


def map_fields(cfg: DispatcherConfig) -> list:
    return [("valid", 1), ("prow", cfg.row_bits)]


def out_fields(cfg: DispatcherConfig) -> list:
    return [("op", 2), ("row", cfg.row_bits), ("col", cfg.col_bits), ("layer", cfg.layer_bits),
            ("pc", cfg.pc_bits), ("iter", cfg.iter_bits)]


def pack(fields: list, **values) -> int:
    """Pack named values into an integer (missing fields are 0; values are masked)."""
    out, off = 0, 0
    for name, width in fields:
        out |= (int(values.get(name, 0)) & ((1 << width) - 1)) << off
        off += width
    return out


def unpack(fields: list, value: int) -> dict:
    out, off = {}, 0
    for name, width in fields:
        out[name] = (int(value) >> off) & ((1 << width) - 1)
        off += width
    return out


def word(cfg: DispatcherConfig, op, **fields) -> int:
    """One DPA program word: ``op`` by name or number, then its fields by name."""
    op = OPS[op] if isinstance(op, str) else op
    kind = "loop" if op == OPS["dyn_loop"] else "modi" if op == OPS["dyn_modi"] else "pim"
    return pack(word_fields(cfg)[kind], op=op, **fields)


def encoding_manifest(cfg: DispatcherConfig) -> dict:
    """The encoding, for the manifest: opcodes, word formats, host-write formats, status codes."""
    def fmt(fields):
        out, off = [], 0
        for name, width in fields:
            out.append({"name": name, "offset": off, "width": width})
            off += width
        return out
    return {"word_bits": cfg.word_bits, "opcodes": dict(OPS),
            "words": {k: fmt(v) for k, v in word_fields(cfg).items()},
            "host_kinds": dict(KINDS), "run": fmt(run_fields(cfg)), "va2pa": fmt(map_fields(cfg)),
            "va2pa_addr": "request * vrows + vrow", "loop_bound": "ceil(t_cur / 2**shift)",
            "status": dict(STATUS),
            "sizes": {"cmd_words": cfg.cmd_depth, "cmd_bytes": cfg.cmd_bytes,
                      "va2pa_entries": cfg.map_depth, "va2pa_bytes": cfg.map_bytes}}

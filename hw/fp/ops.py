"""Free-running float operations (and delays and trees of them), shared by the PAM and HILOS units.

Inside a PAM unit the datapaths never stall: flow control happens once, at the unit's input
(a credit check guarantees that everything admitted can be absorbed).  A *free-running* float
operation is therefore a pipeline whose registers load every cycle, with a valid bit travelling
alongside the data.  :func:`float_op` builds one from the foundation float library's stage
functions, so each operation is bit-identical to the standalone ``fp_*`` unit (and to its golden
model).  Extra keys in ``side`` travel through the same registers unchanged, so tags (beat index,
token flags) stay aligned with their data.
"""
from __future__ import annotations

import hashlib
import os
import shutil
from functools import lru_cache
from pathlib import Path

import amaranth
from amaranth.back import verilog
from amaranth.hdl import (ClockDomain, ClockSignal, Const, Instance, Module, ResetSignal, Signal,
                          Value)

from pimforge.base import formats
from pimforge.base.errors import UserError
from pimforge.base.files import build_dir, write_atomic
from pimforge.base.formats import parse_format
from pimforge.hw.core import macros
from pimforge.hw.core.activity import active, op_action, probe
from pimforge.hw.core.inventory import OpKey, op_key, record
from pimforge.hw.core.pipeline import register_positions
from pimforge.hw.core.ports import top_ports
from pimforge.hw.fp.add import add_stages
from pimforge.hw.fp.cmp import cmp_stages
from pimforge.hw.fp.convert import convert_stages
from pimforge.hw.fp.core import run_stages
from pimforge.hw.fp.exp import exp_stages
from pimforge.hw.fp.fma import fma_stages
from pimforge.hw.fp.log import log_stages
from pimforge.hw.fp.mul import mul_stages, mul_wide_stages
from pimforge.hw.fp.recip import recip_stages

__all__ = ["OPS", "float_op", "comb_op", "op_latency", "delay", "delay_valid", "beat_tree", "add_tree", "add_partials",
           "operator_verilog", "operator_ports", "instantiate"]


def _stages(kind: str, fmt, src=None):
    table = {
        "add": lambda: add_stages(fmt, False, False),
        "sub": lambda: add_stages(fmt, False, True),
        "mul": lambda: mul_stages(fmt, False),
        "mul_wide": lambda: mul_wide_stages(src, fmt, False),
        "fma": lambda: fma_stages(fmt, False),
        "cmp": lambda: cmp_stages(fmt, False),
        "exp": lambda: exp_stages(fmt, False),
        "log": lambda: log_stages(fmt, False),
        "recip": lambda: recip_stages(fmt, False),
        "convert": lambda: convert_stages(src, fmt, False),
    }
    return table[kind]()


# operand names of each kind (the stage functions' input keys)
OPS = {"add": ("a", "b"), "sub": ("a", "b"), "mul": ("a", "b"), "mul_wide": ("a", "b"),
       "fma": ("a", "b", "c"),
       "cmp": ("a", "b"), "exp": ("a",), "log": ("a",), "recip": ("a",), "convert": ("a",)}

_FUNCS = ("exp", "log", "recip")
_SRC_KINDS = ("convert", "mul_wide")  # the operations whose operand format differs


def op_latency(kind: str, op_depth: int) -> int:
    """Register stages of a float operation inside a PAM unit: ``op_depth``, one more for the
    table-based functions (exp, log, recip)."""
    return op_depth + (1 if kind in _FUNCS else 0)


def comb_op(m, kind: str, fmt, operands: dict, src=None, fire=None) -> dict:
    """A float operation with no registers (for decisions that must take effect in one cycle,
    such as the running-maximum compare); ``fire`` is high in the cycles its operands are data
    (the activity probe, :mod:`pimforge.hw.core.activity`)."""
    src = src if kind in _SRC_KINDS else None
    record(kind, fmt, src, operands=operands, verilog=operator_verilog)
    if fire is not None:
        probe(m, op_action(kind, fmt), fire)
    if macros.active():  # hierarchical synthesis: a black-box instance of the operator
        return instantiate(m, op_key(kind, fmt, src, operands=operands), operands, "cop")
    return run_stages(m, _stages(kind, fmt, src), dict(operands))


def float_op(m, kind: str, fmt, op_depth: int, operands: dict, valid=None, side=None, src=None,
             name: str = "op", pre=None, fire=None):
    """Build one free-running float operation.

    Returns ``(outputs, valid_out, side_out)``; ``outputs`` is the last stage's dict (``r`` for
    arithmetic, the comparator's flags and ``max``/``min`` for ``cmp``).

    Parameters
    ----------
    m : the Module.
    kind : one of :data:`OPS` (``convert`` converts ``src`` to ``fmt``; ``mul_wide`` multiplies
        two ``src`` operands into ``fmt``).
    operands : operand name -> Amaranth value (bit patterns).
    valid : optional 1-bit value travelling with the data (returned delayed).
    side : optional dict of extra values delayed alongside.
    pre : optional stage (``pre(m, values) -> operands``, its depth in ``pre.levels``) that
        selects the operands from ``operands``.  When the register placement over ``pre`` and
        the operator puts a register right after ``pre``, that register is one of the
        operator's ``op_depth`` (the operator then has one fewer, in both the flat and the
        hierarchical form), so the latency stays the same.
    fire : high in the cycles the operands are data, for the activity probe
        (:mod:`pimforge.hw.core.activity`); ``valid`` when not given.
    """
    depth = op_latency(kind, op_depth)
    src = src if kind in _SRC_KINDS else None
    fire = valid if fire is None else fire
    if fire is not None:
        probe(m, op_action(kind, fmt), fire)
    side = dict(side or {})
    if valid is not None:
        side["_valid"] = valid
    idx = 0
    if pre is not None:
        lead = _unit_positions([pre] + _stages(kind, fmt, src), depth)[0]
        operands = pre(m, dict(operands))
        if lead:
            operands = _register(m, operands, f"{name}_p0", reset_flags=False)
            side = _register(m, side, f"{name}_p0")
            op_depth, depth, idx = op_depth - 1, depth - 1, 1
    record(kind, fmt, src, op_depth, operands=operands, verilog=operator_verilog)
    if macros.active():  # hierarchical synthesis: a black-box instance of the operator
        key = op_key(kind, fmt, src, op_depth, operands=operands)
        values = instantiate(m, key, operands, name)
        carry = delay(m, side, depth, f"{name}_p" if not idx else f"{name}_d")
        return values, carry.pop("_valid", None), carry
    stages = _stages(kind, fmt, src)
    counts = _unit_positions(stages, depth)
    values = dict(operands)
    carry = dict(side)
    for k, stage in enumerate(stages):
        values = stage(m, values)
        for _ in range(counts[k]):
            values = _register(m, values, f"{name}_p{idx}", reset_flags=False)
            carry = _register(m, carry, f"{name}_p{idx}")
            idx += 1
    valid_out = carry.pop("_valid", None)
    return values, valid_out, carry


def _unit_positions(stages, depth: int) -> list:
    """Register positions of an operation inside a unit: the last of the ``depth`` registers
    at its output, the others balanced over its stages.  Operations feed each other and the
    unit's own logic, so an unregistered output would join its last segment to the next
    operation's first one (a standalone ``fp_*`` unit, whose ports are registered by its
    neighbours, balances all ``depth + 1`` segments instead)."""
    if depth == 0:
        return register_positions(stages, 0)
    counts = register_positions(stages, depth - 1)
    counts[-1] += 1
    return counts


def _register(m, values: dict, prefix: str, reset_flags: bool = True) -> dict:
    """One register stage over ``values``, none of which resets except, with ``reset_flags``,
    the 1-bit ones.

    Tags and delayed values keep ``reset_flags``: a 1-bit value (a valid bit, a tag's flag)
    resets to 0, and a wider one (an address, a group index, a carried operand) does not, since
    0 is one of its ordinary values and its users read it only under a valid bit already.  An
    operator's own datapath, read only beside the valid bit in its side registers, passes
    ``reset_flags=False``.  A reset would cost a gate in front of every bit (ASIC) and a reset
    net reaching every flip-flop (FPGA)."""
    out = {}
    for key, v in values.items():
        v = Value.cast(v)
        keep_reset = reset_flags and len(v) == 1
        r = Signal(v.shape(), name=f"{prefix}_{key.lstrip('_')}", reset_less=not keep_reset)
        m.d.sync += r.eq(v)
        out[key] = r
    return out


def delay(m, values: dict, cycles: int, name: str = "dly") -> dict:
    """``values`` delayed by ``cycles`` register stages (``cycles = 0`` returns them as they
    are).  Valid bits go through :func:`delay_valid` (or here, as 1-bit values, which reset to
    0); wider values have no reset (see ``_register``)."""
    for i in range(cycles):
        values = _register(m, values, f"{name}{i}")
    return values


def delay_valid(m, valid, cycles: int, name: str = "dlyv"):
    """A valid bit delayed by ``cycles`` stages (these registers reset to 0)."""
    v = valid
    for i in range(cycles):
        r = Signal(name=f"{name}{i}")
        m.d.sync += r.eq(v)
        v = r
    return v


def beat_tree(m, x, valid, levels: int, width: int, combine, name: str):
    """A streaming pairwise tree over consecutive beats: at each of ``levels`` levels the first
    beat of a pair is held and the second is combined with it, so ``2**levels`` beats reduce to
    one in the same pairwise order as a full tree.  ``combine(held, x, valid, level)`` builds one
    level's operation on the pair and returns ``(x, valid)`` of its result."""
    for lvl in range(levels):
        held = Signal(width, name=f"{name}{lvl}_held")
        have = Signal(name=f"{name}{lvl}_have")
        with m.If(valid):
            m.d.sync += have.eq(~have)
            with m.If(~have):
                m.d.sync += held.eq(x)
        x, valid = combine(held, x, valid & have, lvl)
    return x, valid


def add_tree(m, fmt, op_depth: int, level: list, valid=None, side=None, name: str = "tree",
             fire=None):
    """A pipelined pairwise adder tree over ``level`` (a power-of-two list of ``fmt`` values):
    ``log2(len)`` levels of :func:`float_op` adds, ``(level[0] + level[1]) + (level[2] + ...)``.
    ``valid`` and ``side`` travel with the first adder of each level (pass ``None`` for a tree
    whose timing another tree of the same shape carries, and its ``fire``: the lead tree's
    input valid, for the activity probes).  Adders are named ``{name}_{depth}_{index}``.
    Returns ``(sum, valid, side)``."""
    depth = 0
    given = valid is not None
    # a tree without its own valid still carries ``fire`` down its levels for the probes, but
    # only while probing: generated and synthesized Verilog stays without the unread chain
    valid = valid if given else (fire if active() else None)
    while len(level) > 1:
        nxt = []
        for i in range(0, len(level), 2):
            r, v, t = float_op(m, "add", fmt, op_depth, {"a": level[i], "b": level[i + 1]},
                               valid=valid if i == 0 else None, side=side if i == 0 else None,
                               name=f"{name}_{depth}_{i // 2}", fire=valid)
            nxt.append(r["r"])
            if i == 0:
                lead_v, side = v, t
        level, depth, valid = nxt, depth + 1, lead_v
    return level[0], (valid if given else None), side


def add_partials(m, fmt, op_depth: int, parts: list, lanes: int, valid=None, side=None,
                 name: str = "finish") -> tuple:
    """Per lane ``u`` of Q packed partial-sum words (``lanes`` values of ``fmt`` each; Q a power
    of two), the pipelined pairwise sum, adjacent pairs first (Q = 4: ``(p0 + p1) + (p2 + p3)``):
    the finish of an accumulator that adds beat k into partial k mod Q, ``log2(Q)`` adds deep.
    ``valid`` and ``side`` travel with lane 0.  Lane u's adders are :func:`add_tree`'s, named
    ``{name}{u}_{depth}_{index}``.  Returns ``(sums, valid, side)``."""
    w = fmt.width
    sums = []
    for u in range(lanes):
        lead = u == 0
        r, v, t = add_tree(m, fmt, op_depth, [p[w * u:w * (u + 1)] for p in parts],
                           valid=valid if lead else None, side=side if lead else None,
                           name=f"{name}{u}", fire=valid)
        sums.append(r)
        if lead:
            v0, t0 = v, t
    return sums, v0, t0


# ---------------------------------------------------------------- operator macros
# Each distinct operator as a module of its own, for hierarchical synthesis (macros.py).

_PORTS: dict = {}


def _build(op: OpKey):
    """The operator as an Amaranth Module and its ports: ``clk`` when it has registers, inputs
    ``in_<operand>`` (constant operands are built in), outputs ``out_<result>``."""

    fmt = parse_format(op.fmt)
    src = parse_format(op.src) if op.src else None
    width = (src or fmt).width
    consts = dict(op.consts)
    m = Module()
    ports = []
    if op.depth >= 0 and op_latency(op.kind, op.depth):
        # an operator's registers are all datapath (no valid bit travels inside the macro) and
        # none resets, so its clock domain has a clock port and no reset port
        cd = ClockDomain("sync", reset_less=True)
        m.domains.sync = cd
        ports.append(cd.clk)
    ins = {n: Signal(width, name=f"in_{n}") for n in OPS[op.kind] if n not in consts}
    operands = {n: ins[n] if n in ins else Const(consts[n], width) for n in OPS[op.kind]}
    with macros.suspended():
        if op.depth < 0:
            outs = comb_op(m, op.kind, fmt, operands, src=src)
        else:
            outs, _, _ = float_op(m, op.kind, fmt, op.depth, operands, src=src)
    ports += ins.values()
    for key, value in outs.items():
        s = Signal(len(value), name=f"out_{key}")
        m.d.comb += s.eq(value)
        ports.append(s)
    return m, ports


_TEXT: dict = {}


@lru_cache(maxsize=1)
def _source_fingerprint() -> str:
    """A hash of everything an operator's Verilog depends on: the generator sources (``hw`` and
    ``base``) and the Amaranth version."""
    h = hashlib.sha256(amaranth.__version__.encode())
    for root in (Path(__file__).resolve().parents[1], Path(formats.__file__).resolve().parent):
        for path in sorted(root.rglob("*.py")):
            h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _cache_path(op: OpKey):
    """Where the operator's Verilog is kept between processes, or None when the cache is off.

    Test workers and command-line runs each generate the operators they use (about a second
    each through Amaranth and its Yosys); the cache under ``$PIMFORGE_BUILD/op-cache`` (default
    ``build/op-cache``, beside the simulation and synthesis caches) lets one generation serve
    them all.  ``PIMFORGE_OP_CACHE=0`` turns it off."""
    if os.environ.get("PIMFORGE_OP_CACHE", "1") in ("", "0"):
        return None
    key = hashlib.sha256(repr(op).encode()).hexdigest()[:24]
    return build_dir("op-cache", _source_fingerprint(), f"{key}.v")


def _cached_text(op: OpKey, name: str) -> str:
    path = _cache_path(op)
    if path is not None:
        try:
            return path.read_text()
        except OSError:
            pass
    m, ports = _build(op)
    text = verilog.convert(m, name=name, ports=ports, emit_src=False)
    if path is not None:
        try:                                # best effort, and atomic: never a partial file
            if not path.parent.is_dir():    # new sources: the old sources' operators go
                for old in path.parent.parent.glob("*"):
                    if old.name != path.parent.name:
                        shutil.rmtree(old, ignore_errors=True)
            write_atomic({path: text})
        except (OSError, UserError):
            pass
    return text


def operator_verilog(op: OpKey, prefix: str = "") -> tuple:
    """``(verilog, ports)`` of one operator module, named ``macros.module_name(op, prefix)``;
    ``ports`` lists ``(direction, name, width)`` including ``clk`` when the operator has
    registers (none of them resets, so there is no ``rst``).  Built once per process (and kept
    on disk for other processes: ``_cache_path``); the prefix only renames it."""
    name = macros.module_name(op, "")
    if op not in _TEXT:
        text = _cached_text(op, name)
        _TEXT[op] = text
        _PORTS[op] = top_ports(text, name)
    # the name occurs only as the module's own name (and its memories', which start with it)
    return _TEXT[op].replace(name, prefix + name), _PORTS[op]


def operator_ports(op: OpKey) -> list:
    if op not in _PORTS:
        operator_verilog(op)
    return _PORTS[op]


def instantiate(m, op: OpKey, operands: dict, name: str) -> dict:
    """An ``Instance`` of the operator's module; returns its outputs by result name."""
    ports = operator_ports(op)
    kwargs, outs = {}, {}
    for direction, port, width in ports:
        if port == "clk":
            kwargs["i_clk"] = ClockSignal()
        elif port == "rst":
            kwargs["i_rst"] = ResetSignal()
        elif direction == "input":
            kwargs[f"i_{port}"] = operands[port[len("in_"):]]
        else:
            s = Signal(width, name=f"{name}_{port}")
            kwargs[f"o_{port}"] = s
            outs[port[len("out_"):]] = s
    m.submodules += Instance(macros.module_name(op), **kwargs)
    return outs

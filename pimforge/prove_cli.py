"""``pimforge prove UNIT``: the stream-protocol proof of a unit (:mod:`pimforge.synth.formal`),
plus the unit's own properties where its declaration has a ``formal`` environment
(``pamif_buffer``: no-loss of a tracked word, counters in range, the release bound), plus, on
by default, the input-side response where the unit states one
(:func:`~pimforge.hw.core.formal.unit_response`: every accepted input answered by its outputs
within its cycle model's latency, under fair output ready)."""
from __future__ import annotations

import os
import sys

from pimforge import api
from pimforge.base.cliargs import add_config_arguments, config_args
from pimforge.base.errors import UserError
from pimforge.base.files import build_dir, precheck_out_dir
from pimforge.hw.core.formal import unit_response
from pimforge.registry import get_unit
from pimforge.synth.formal import MAX_DEPTH, MODES, default_depth, prove

__all__ = ["add_arguments", "run_cli"]

EXIT_FAIL = 1


def add_arguments(q) -> None:
    q.add_argument("unit", help="unit name (see `pimforge list`)")
    add_config_arguments(q)
    q.add_argument("--depth", type=int, metavar="N",
                   help=f"cycles from reset to check (1..{MAX_DEPTH}; default: the unit's "
                        "latency + 6, one full pipeline with stalls)")
    q.add_argument("--mode", default="bmc", choices=MODES,
                   help="bmc: bounded, every trace of N cycles; prove: k-induction of length N "
                        "(holds for all lengths); cover: every stream transfer is reachable "
                        "(default bmc)")
    q.add_argument("--out", metavar="DIR", help="output directory: the formal top (RTLIL), the "
                   ".sby file and sby's work directory (default build/formal/<unit>)")
    q.add_argument("--no-fifos", action="store_true",
                   help="check the stream ports only, not the no-loss of internal FIFOs")
    q.add_argument("--protocol-only", action="store_true",
                   help="leave out the unit's own formal harness (pamif_buffer: no-loss, "
                        "counters, release bound) and the response check, check the stream "
                        "rules only")
    q.add_argument("--no-response", action="store_true",
                   help="leave out the input-side response check (on by default in bmc and "
                        "cover mode where the unit states one: a transfer the solver picks is "
                        "answered by its outputs within the cycle model's latency, every output "
                        "ready after it; a bounded check, so prove mode leaves it out)")


def _progress(msg: str) -> None:
    if os.environ.get("PIMFORGE_QUIET") != "1":
        print(f"[pimforge] {msg}", file=sys.stderr, flush=True)


def run_cli(args) -> int:
    unit = get_unit(args.unit)
    if args.depth is not None and not 1 <= args.depth <= MAX_DEPTH:
        raise UserError(f"--depth: got {args.depth}; allowed: an integer in 1..{MAX_DEPTH}")
    # checked before the elaboration and the proof: sby's work directory cannot go into a file
    out = precheck_out_dir(args.out, "--out") if args.out else build_dir("formal", args.unit)
    cfg = api.config(args.unit, **config_args(args))
    dut = unit.factory(cfg)
    depth = args.depth if args.depth is not None else default_depth(dut.latency)
    _progress(f"{args.unit}: {args.mode} to depth {depth} (latency {dut.latency}) in {out} "
              "(the first yowasp-sby run compiles for a minute)")
    extra = None if args.protocol_only else unit.formal
    # the response is a bounded property (its counters and timer close no induction), so
    # prove mode leaves it out
    response = None if args.protocol_only or args.no_response or args.mode == "prove" else \
        unit_response(unit, cfg, dut)
    res = prove(dut, out, mode=args.mode, depth=depth, fifos=not args.no_fifos, extra=extra,
                response=response)
    verdict = {"pass": "PASS", "fail": "FAIL", "unknown": "UNKNOWN (induction did not close; "
               "try a larger --depth)", "timeout": "TIMEOUT"}[res.status]
    checks = "stream rules" + ("" if args.no_fifos else ", FIFO no-loss") + \
        (", unit harness" if extra is not None else "") + (", response" if response else "")
    print(f"{args.unit}: {verdict}  mode {res.mode}, depth {res.depth}, {res.seconds:.1f} s"
          f"  ({checks})")
    for prop in res.failed:
        print(f"  {prop}")
    if res.vcd is not None:
        label = "cover trace" if res.passed else "counterexample"
        print(f"  {label}: {res.vcd}")
    print(f"  log: {res.workdir / 'logfile.txt'}")
    return 0 if res.passed else EXIT_FAIL

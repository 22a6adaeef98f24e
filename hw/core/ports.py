"""The ports of a module in Amaranth's Verilog output (used by the operator macros and the
synthesis harnesses)."""
from __future__ import annotations

import re

from pimforge.base.errors import ToolError

__all__ = ["top_ports"]

_PORT = re.compile(r"^\s*(input|output)\s+(?:\[(\d+):(\d+)\]\s+)?\\?([\w$.]+)\s*;", re.M)


def top_ports(verilog: str, top: str) -> list:
    """``(direction, name, width)`` of the top module's ports, from Amaranth's Verilog."""
    m = re.search(rf"^module {re.escape(top)}\(.*?^endmodule", verilog, re.M | re.S)
    if not m:
        raise ToolError(f"cannot find module {top} in the generated Verilog")
    ports = []
    for d, hi, lo, name in _PORT.findall(m.group(0)):
        ports.append((d, name, int(hi) - int(lo) + 1 if hi else 1))
    return ports

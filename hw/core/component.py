"""Base class for pimforge units: stream ports, timing properties and the JSON manifest."""
from __future__ import annotations

from amaranth.lib import data, stream, wiring

from pimforge.config import UnitConfig, config_to_dict

__all__ = ["PimComponent", "MANIFEST_VERSION"]

MANIFEST_VERSION = 1


class PimComponent(wiring.Component):
    """A ``wiring.Component`` that knows its config, its timing and how to describe itself.

    Subclasses set ``UNIT`` (the unit name, also the Verilog top), keep their config in ``self.cfg``
    and implement :attr:`latency` and :attr:`throughput`.
    """

    UNIT = "unit"

    def __init__(self, cfg: UnitConfig, signature_members: dict):
        self.cfg = cfg
        super().__init__(signature_members)

    @property
    def latency(self) -> int:
        """Cycles from an input transfer to the output transfer it produces, with no stalls."""
        raise NotImplementedError

    @property
    def throughput(self) -> float:
        """Transfers per cycle at steady state."""
        raise NotImplementedError

    @property
    def top(self) -> str:
        return self.UNIT

    def manifest(self) -> dict:
        """The manifest dictionary (see README, "Manifest format")."""
        streams = {}
        for name, member in self.signature.members.items():
            if not (member.is_signature and isinstance(member.signature, stream.Signature)):
                continue
            sig = member.signature
            shape = sig.members["payload"].shape
            # An Out(stream) member is a stream this unit produces.
            direction = "out" if member.flow == wiring.Out else "in"
            entry = {
                "direction": direction,
                "payload": f"{name}__payload",
                "valid": f"{name}__valid",
                "width": shape.size if isinstance(shape, data.Layout) else _shape_width(shape),
                "fields": _fields_of(shape),
            }
            if not sig.always_ready:
                entry["ready"] = f"{name}__ready"
            streams[name] = entry
        return {
            "manifest_version": MANIFEST_VERSION,
            "unit": self.UNIT,
            "top": self.top,
            "parameters": config_to_dict(self.cfg),
            "clock": "clk",
            "reset": "rst",
            "reset_active": "high",
            "streams": streams,
            "latency": self.latency,
            "throughput": self.throughput,
        }


def _shape_width(shape) -> int:
    from amaranth.hdl import Shape
    return Shape.cast(shape).width


def _fields_of(shape) -> list:
    if isinstance(shape, data.StructLayout):
        formats = getattr(shape, "pimforge_formats", {})
        out = []
        for fname, field in shape:
            out.append({"name": fname, "offset": field.offset, "width": field.width,
                        "format": formats.get(fname, "uint")})
        return out
    return [{"name": "value", "offset": 0, "width": _shape_width(shape), "format": "uint"}]

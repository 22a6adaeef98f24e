"""Base class for pimforge units: stream ports, timing properties and the JSON manifest."""
from __future__ import annotations

from amaranth.hdl import Cat, Module, Shape, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from pimforge.base.config import UnitConfig, config_to_dict
from pimforge.hw.core.activity import op_action, probe
from pimforge.hw.core.payload import payload_layout
from pimforge.hw.core.pipeline import build_pipeline

__all__ = ["PimComponent", "PipelinedUnit", "MANIFEST_VERSION"]

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
        """The manifest dictionary (see docs/guide/manifest.md)."""
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


class PipelinedUnit(PimComponent):
    """A unit with one input stream ``i``, one output stream ``o`` and a datapath written as
    pipeline stages (see :mod:`pimforge.hw.core.pipeline`).

    Latency is ``cfg.pipeline_depth`` cycles and throughput one transfer per cycle.  Subclasses
    pass the payload fields (name -> :class:`~pimforge.hw.core.payload.Field`) and implement
    :meth:`stages`; the first stage receives the input fields by name, the last returns every
    output field by name.
    """

    def __init__(self, cfg: UnitConfig, inputs: dict, outputs: dict):
        self._inputs = dict(inputs)
        self._outputs = dict(outputs)
        super().__init__(cfg, {
            "i": In(stream.Signature(payload_layout(**inputs))),
            "o": Out(stream.Signature(payload_layout(**outputs))),
        })

    @property
    def latency(self) -> int:
        return self.cfg.pipeline_depth

    @property
    def throughput(self) -> float:
        return 1.0

    def stages(self) -> list:
        raise NotImplementedError

    @property
    def action(self) -> str | None:
        """The action one input transfer performs, for the activity probe
        (:mod:`pimforge.hw.core.activity`): a float unit ``fp_<kind>`` does one ``<kind>`` in
        its result format (``cfg.fmt``, or ``cfg.dst`` for a conversion)."""
        if not self.UNIT.startswith("fp_"):
            return None
        fmt = getattr(self.cfg, "fmt", None) or self.cfg.dst
        return op_action(self.UNIT[3:], fmt)

    def _pack_outputs(self, values: dict):
        parts = []
        for name, field in self._outputs.items():
            v = Value.cast(values[name])
            if len(v) != field.width:
                raise ValueError(f"{self.UNIT}: stage output '{name}' is {len(v)} bits wide, "
                                 f"the payload field is {field.width}")
            parts.append(v)
        return Cat(*parts)

    def elaborate(self, platform):
        m = Module()
        inputs = {name: self.i.payload[name] for name in self._inputs}
        build_pipeline(m, self.stages(), inputs, self.cfg.pipeline_depth, self.i, self.o,
                       self._pack_outputs)
        if self.action is not None:
            probe(m, self.action, self.i.valid & self.i.ready)
        return m


def _shape_width(shape) -> int:
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

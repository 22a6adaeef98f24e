"""Stream payloads whose fields carry a number format, so the manifest can describe them."""
from __future__ import annotations

from dataclasses import dataclass

from amaranth.lib import data

from pimforge.base.formats import FloatFormat

__all__ = ["Field", "fp", "vec", "uint", "sint", "flag", "payload_layout"]


@dataclass(frozen=True)
class Field:
    """One payload field: its width and the name of its number format (fp16, fp32, uint, ...)."""

    width: int
    format: str


def fp(fmt: FloatFormat) -> Field:
    return Field(fmt.width, fmt.name)


def vec(fmt: FloatFormat, n: int) -> Field:
    """``n`` floats packed side by side, element 0 in the least significant bits (``fp16x16``)."""
    return Field(fmt.width * n, f"{fmt.name}x{n}")


def uint(width: int) -> Field:
    return Field(width, "uint")


def sint(width: int) -> Field:
    return Field(width, "sint")


def flag() -> Field:
    return Field(1, "bool")


def payload_layout(**fields: Field) -> data.StructLayout:
    """A StructLayout (first field least significant) that remembers each field's format."""
    layout = data.StructLayout({name: f.width for name, f in fields.items()})
    layout.pimforge_formats = {name: f.format for name, f in fields.items()}
    return layout

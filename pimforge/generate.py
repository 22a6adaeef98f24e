"""Elaborate a unit to Verilog and its JSON manifest, and write both atomically."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from amaranth.back import verilog

from pimforge.errors import UserError

__all__ = ["elaborate", "write_outputs", "generate"]

_CACHE: dict = {}


def elaborate(unit, cfg) -> tuple:
    """Return ``(verilog_text, manifest_dict, component)`` for a unit config (memoized per config)."""
    key = (unit.name, cfg)
    if key not in _CACHE:
        comp = unit.factory(cfg)
        text = verilog.convert(comp, name=comp.top, emit_src=False)
        _CACHE[key] = (text, comp.manifest(), comp)
    return _CACHE[key]


def _check_out_dir(out: Path) -> Path:
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UserError(f"output directory '{out}' is a file; give a directory path")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"output directory '{out}' cannot be created: {e.strerror}") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise UserError(f"output directory '{out}' is not writable")
    return out


def write_outputs(out, files: dict) -> list:
    """Write ``{name: text}`` into ``out`` all-or-nothing: every file goes to a temporary name
    first, and only when all are written are they renamed into place."""
    out = _check_out_dir(out)
    temps = []
    try:
        for name, text in files.items():
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=out)
            temps.append((tmp, out / name))
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
    except OSError as e:
        for tmp, _ in temps:
            if os.path.exists(tmp):
                os.unlink(tmp)
        raise UserError(f"output directory '{out}' cannot be written: {e.strerror}") from None
    for tmp, final in temps:
        os.replace(tmp, final)
    return [final for _, final in temps]


def generate(unit, cfg, out) -> list:
    text, manifest, comp = elaborate(unit, cfg)
    return write_outputs(out, {f"{comp.top}.v": text,
                               f"{comp.top}.json": json.dumps(manifest, indent=2) + "\n"})

"""Elaborate a unit to Verilog and its JSON manifest, and write both atomically."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from amaranth.back import verilog

from pimforge.errors import UserError

__all__ = ["elaborate", "write_atomic", "write_outputs", "generate"]

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


def _file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_atomic(files: dict, describe=None) -> list:
    """Write ``{path: text or bytes}`` all-or-nothing: every file goes to a temporary name in its
    directory first, and only when all are written are they renamed into place.  An OSError
    becomes a one-line :class:`UserError`: ``describe(path, strerror)``, by default "cannot
    write 'path': reason".  The files get the usual permissions (0666 less the umask), not the
    temporary files' private 0600."""
    temps = []
    path = None
    mode = _file_mode()
    try:
        for path, data in files.items():
            path = Path(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
            temps.append((tmp, path))
            with os.fdopen(fd, "wb") as fh:
                fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            os.chmod(tmp, mode)
    except OSError as e:
        for tmp, _ in temps:
            if os.path.exists(tmp):
                os.unlink(tmp)
        msg = describe(path, e.strerror) if describe else f"cannot write '{path}': {e.strerror}"
        raise UserError(msg) from None
    for tmp, final in temps:
        os.replace(tmp, final)
    return [final for _, final in temps]


def write_outputs(out, files: dict) -> list:
    """Write ``{name: text}`` into the directory ``out`` all-or-nothing (:func:`write_atomic`)."""
    out = _check_out_dir(out)
    return write_atomic({out / name: text for name, text in files.items()},
                        lambda path, err: f"output directory '{out}' cannot be written: {err}")


def generate(unit, cfg, out) -> list:
    text, manifest, comp = elaborate(unit, cfg)
    return write_outputs(out, {f"{comp.top}.v": text,
                               f"{comp.top}.json": json.dumps(manifest, indent=2) + "\n"})

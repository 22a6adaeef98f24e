"""Input and output of the ``pimforge run`` flows (PAM attention, PAM migration, HILOS attention,
Hermes GEMV): reading ``.npy`` arrays, checking the user's choices and output paths, converting
to fp16 bit patterns, and writing the result array and JSON report all-or-nothing.

Every check raises a one-line :class:`~pimforge.base.errors.UserError` that names the option or
array at fault, so each flow reports the same mistake in the same words.
"""
from __future__ import annotations

import io
import json
import math
import os
from pathlib import Path

import numpy as np

from pimforge.base.errors import UserError
from pimforge.base.files import write_atomic

__all__ = ["MAX_SCALE", "value_text", "check_choice", "check_scale", "check_out_path", "load_npy",
           "to_fp16", "json_float", "npy_bytes", "write_flow_outputs"]

MAX_SCALE = 65504.0   # the largest finite fp16: the scale multiplies fp16 scores


def value_text(value, shown=None) -> str:
    """How an error message shows the user's value: ``shown`` (the text as typed on the
    command line) when given, else ``repr(value)`` (what the Python API was passed)."""
    return shown if shown is not None else repr(value)


def check_choice(value, allowed, what: str):
    """``value`` if it is one of ``allowed``; ``what`` names it in the error."""
    if value not in allowed:
        raise UserError(f"unknown {what} {value!r}; allowed: {', '.join(allowed)}")
    return value


def check_scale(scale, d: int, label: str = "scale", shown=None) -> float:
    """``None`` means 1/sqrt(d); otherwise a number in (0, 65504] (it is rounded to fp32)."""
    if scale is None:
        return 1.0 / math.sqrt(d)
    try:
        x = float(scale)
    except (TypeError, ValueError):
        x = math.nan
    if isinstance(scale, bool) or not (0 < x <= MAX_SCALE):
        raise UserError(f"{label} must be a number in (0, {MAX_SCALE:g}], got "
                        f"{value_text(scale, shown)}")
    return x


def check_out_path(path, option: str) -> None:
    """Fail before the computation, not after it: ``path`` must name a file whose nearest
    existing parent is a writable directory."""
    p = Path(path)
    if p.is_dir():
        raise UserError(f"{option} '{path}' is a directory; give a file path")
    for parent in p.parents:
        if parent.exists():
            if not parent.is_dir():
                raise UserError(f"{option} '{path}': '{parent}' is a file, not a directory")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise UserError(f"{option} '{path}': directory '{parent}' is not writable")
            break


def load_npy(path, name: str, dtypes=("float16", "float32")) -> np.ndarray:
    """Read one .npy array with one-line errors (no pickles)."""
    p = Path(path)
    if not p.exists():
        raise UserError(f"{name} file '{path}' does not exist")
    if p.is_dir():
        raise UserError(f"{name} file '{path}' is a directory; give a .npy file")
    try:
        arr = np.load(p, allow_pickle=False)
    except (ValueError, OSError, EOFError):
        arr = None
    if not isinstance(arr, np.ndarray):
        raise UserError(f"{name} file '{path}' is not a .npy file")
    if arr.dtype.name not in dtypes:
        raise UserError(f"{name} has dtype {arr.dtype.name}; allowed: {', '.join(dtypes)}")
    return arr


def to_fp16(name: str, x: np.ndarray) -> np.ndarray:
    """fp16 bit patterns (int64) of ``x``, rounded to nearest even; overflow is an error."""
    if not np.all(np.isfinite(x)):
        raise UserError(f"{name} holds NaN or Inf values; only finite numbers are allowed")
    with np.errstate(over="ignore"):
        x16 = x.astype(np.float16)
    if not np.all(np.isfinite(x16)):
        big = float(np.max(np.abs(x.astype(np.float64))))
        raise UserError(f"{name} has values that overflow fp16 (largest magnitude {big:g}; fp16 "
                        f"holds up to 65504)")
    return x16.view(np.uint16).astype(np.int64)


def json_float(x: float):
    """``x`` for a JSON report: JSON has no NaN or infinity, so those become strings."""
    return x if math.isfinite(x) else str(x)


def npy_bytes(arr: np.ndarray) -> bytes:
    """``arr`` as the bytes of a .npy file (no pickles)."""
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def write_flow_outputs(res, out=None, report=None) -> int:
    """Print a flow result's summary, then write its array ``res.o`` to the .npy file ``out`` and
    its ``res.report()`` to the JSON file ``report`` (each only if given), all or none
    (:func:`~pimforge.base.files.write_atomic`); print each path written.  Returns 0, the
    command's exit status."""
    files = {}
    if out is not None:
        files[out] = npy_bytes(res.o)
    if report is not None:
        files[report] = (json.dumps(res.report(), indent=2) + "\n").encode()
    print(res.summary())
    for path in write_atomic(files):
        print(f"wrote {path}")
    return 0

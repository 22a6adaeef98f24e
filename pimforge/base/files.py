"""Write output files all-or-nothing, with one-line errors for unwritable paths."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from pimforge.base.errors import UserError

__all__ = ["build_dir", "check_out_dir", "precheck_out_dir", "write_atomic", "write_outputs"]


def build_dir(*parts: str) -> Path:
    """The project's scratch directory for caches and tool runs, ``build/`` in the working
    directory or ``$PIMFORGE_BUILD``, joined with ``parts`` (``build_dir("sim")``)."""
    return Path(os.environ.get("PIMFORGE_BUILD", "build"), *parts)


def _named(option) -> str:
    return f"{option}: " if option else ""


def check_out_dir(out: Path, option: str | None = None) -> Path:
    """``out`` as a writable directory, created if missing; ``option`` (``"--out"``) names the
    command-line option in the error."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UserError(f"{_named(option)}output directory '{out}' is a file; give a directory "
                        f"path")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"{_named(option)}output directory '{out}' cannot be created: "
                        f"{e.strerror}") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise UserError(f"{_named(option)}output directory '{out}' is not writable")
    return out


def precheck_out_dir(out, option: str | None = None) -> Path:
    """Fail before a long run, not after it, and create nothing: ``out`` must be a writable
    directory, or creatable in one (its nearest existing parent a writable directory)."""
    out = Path(out)
    name = _named(option)
    if out.exists():
        if not out.is_dir():
            raise UserError(f"{name}output directory '{out}' is a file; give a directory path")
        if not os.access(out, os.W_OK | os.X_OK):
            raise UserError(f"{name}output directory '{out}' is not writable")
        return out
    parent = out.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise UserError(f"{name}output directory '{out}' cannot be created: Not a directory "
                        f"('{parent}' is a file)")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UserError(f"{name}output directory '{out}' cannot be created: '{parent}' is not a "
                        f"writable directory")
    return out


def _file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_atomic(files: dict, describe=None) -> list:
    """Write ``{path: text or bytes}`` all-or-nothing: every file goes to a temporary name in its
    directory first, and only when all are written are they renamed into place.  An OSError
    becomes a one-line :class:`~pimforge.base.errors.UserError`: ``describe(path, strerror)``, by default "cannot
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
    out = check_out_dir(out)
    return write_atomic({out / name: text for name, text in files.items()},
                        lambda path, err: f"output directory '{out}' cannot be written: {err}")

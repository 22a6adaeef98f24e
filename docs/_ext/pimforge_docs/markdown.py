"""Small MyST Markdown writers shared by the page generators."""
from __future__ import annotations

import json
import re

_SPECIAL = re.compile(r"([\\*_<\[\]|])")


def text(value) -> str:
    """Plain text for a table cell or a paragraph: Markdown's special characters escaped
    outside ``code`` spans (which Markdown leaves alone anyway), pipes escaped everywhere."""
    parts = re.split(r"(`+[^`]*`+)", str(value).replace("\n", " "))
    return "".join(p.replace("|", "\\|") if p.startswith("`") else _SPECIAL.sub(r"\\\1", p)
                   for p in parts)


def code(value) -> str:
    """An inline code span of ``value``."""
    s = str(value).replace("\n", " ")
    fence = "``" if "`" in s else "`"
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}".replace("|", "\\|")


def table(header: list, rows: list) -> str:
    """A Markdown table; cells are written as given (escape them with :func:`text`)."""
    if not rows:
        return ""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def value(v) -> str:
    """A config or manifest value as inline code (JSON for containers)."""
    if isinstance(v, (dict, list, tuple)):
        return code(json.dumps(v, sort_keys=True))
    if isinstance(v, float) and v.is_integer():
        return code(f"{v:g}" if abs(v) >= 1e16 else repr(v))
    return code(v)


def shell(*commands) -> str:
    """A fenced block of shell commands; a ``(command, comment)`` pair gets its comment
    aligned with the others'."""
    rows = [c if isinstance(c, tuple) else (c, "") for c in commands]
    width = max(len(c) for c, why in rows if why) if any(why for _, why in rows) else 0
    lines = [f"{c.ljust(width)}  # {why}" if why else c for c, why in rows]
    return "```shell\n" + "\n".join(lines) + "\n```\n"

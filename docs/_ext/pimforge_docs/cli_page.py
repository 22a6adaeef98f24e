"""The command-line reference: every subcommand's ``--help``, from the parsers themselves
(:func:`pimforge.cli.build_parser`), so the page cannot drift from the command line."""
from __future__ import annotations

import argparse
import os
from contextlib import contextmanager

from pimforge.cli import build_parser

# argparse wraps help text to the terminal's width ($COLUMNS); a fixed width keeps the page
# the same on every machine.
HELP_COLUMNS = "100"


@contextmanager
def _columns(width: str):
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = width
    try:
        yield
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old


def _subparsers(parser: argparse.ArgumentParser) -> dict:
    """name -> parser of ``parser``'s subcommands, in the order they were added."""
    for action in parser._actions:  # argparse has no public accessor for subcommands
        if isinstance(action, argparse._SubParsersAction):
            seen, out = set(), {}
            for name, sub in action.choices.items():  # an alias maps to the same parser
                if id(sub) not in seen:
                    seen.add(id(sub))
                    out[name] = sub
            return out
    return {}


def _sections(parser: argparse.ArgumentParser, level: int) -> list:
    out = [f"{'#' * level} `{parser.prog}`\n",
           "```text\n" + parser.format_help().rstrip() + "\n```\n"]
    for sub in _subparsers(parser).values():
        out += _sections(sub, min(level + 1, 4))
    return out


def cli_page() -> str:
    """The MyST page of the command-line reference."""
    with _columns(HELP_COLUMNS):
        parser = build_parser()
        top = ["```text\n" + parser.format_help().rstrip() + "\n```\n"]
        subs = [s for sub in _subparsers(parser).values() for s in _sections(sub, 2)]
    return "\n".join(["# Command line\n",
                      "Every section is the subcommand's `--help`, generated from the parsers "
                      "when the documentation is built.  User errors end with one line, "
                      "`error: ...`, and exit status 2; a failing check exits 1.\n",
                      *top, *subs])

"""The ``--preset/--config/--set`` options every configurable command takes.

A unit command (``generate``, ``test``, ``synth``, ``prove``, ``export``, ``run pam-migrate``)
and a system command (``model``) build a config the same way: the defaults, then a named preset,
then a YAML file, then ``--set key=value`` overrides (:func:`pimforge.base.config.config_layers`).
One helper adds the three options so that their names, order and help read the same everywhere;
:func:`config_args` hands them on as the keyword arguments of :func:`pimforge.api.config` and
:func:`pimforge.software.cli.model_config`.

:func:`check_int` and :func:`check_seed` check a number option's range before any work, with the
one-line error every command gives (``--seed: got -1; allowed: an integer in 0..4294967295``).
"""
from __future__ import annotations

from pimforge.base.errors import UserError

__all__ = ["CONFIG_OPTIONS", "SEED_MAX", "add_config_arguments", "config_args",
           "given_config_options", "check_int", "check_seed"]

CONFIG_OPTIONS = ("--preset", "--config", "--set")

UNIT_PRESET_HELP = "start from a named preset of the unit (see `pimforge list`)"


def add_config_arguments(parser, *, field: str = "config field",
                         preset_help: str = UNIT_PRESET_HELP, set_hint: str = "") -> None:
    """Add ``--preset``, ``--config FILE.yaml`` and ``--set KEY=VALUE`` (repeatable) to ``parser``.

    Parameters
    ----------
    field : what one field is called in the help (``"model field"``, ``"pam_interface field"``).
    preset_help : the help of ``--preset``: where the presets are listed.
    set_hint : text after "override one <field>" in ``--set``'s help, e.g. where the fields are
        listed (``" (see --describe)"``).
    """
    parser.add_argument("--preset", help=preset_help)
    parser.add_argument("--config", metavar="FILE.yaml",
                        help=f"YAML mapping of {field}s (applied after --preset)")
    parser.add_argument("--set", metavar="KEY=VALUE", action="append", default=[],
                        help=f"override one {field}{set_hint}; repeatable, applied last; "
                             f"type-checked like YAML")


def config_args(args) -> dict:
    """The three options of ``args`` as the keywords ``preset``, ``config_file`` and ``sets``."""
    return {"preset": args.preset, "config_file": args.config, "sets": args.set}


def given_config_options(args) -> list:
    """The names of the config options given on the command line, in ``CONFIG_OPTIONS``
    order (for commands where they do not apply)."""
    values = (args.preset, args.config, args.set)
    return [opt for opt, value in zip(CONFIG_OPTIONS, values) if value]


SEED_MAX = 2**32 - 1
"""Largest ``--seed``: simulators and cocotb take 32-bit seeds; one range for every command."""


def check_int(value: int, option: str, lo: int, hi: int | None = None) -> int:
    """``value`` if ``lo <= value <= hi`` (no upper bound when ``hi`` is None), else a one-line
    :class:`~pimforge.base.errors.UserError` naming ``option`` and the range."""
    if value < lo or (hi is not None and value > hi):
        allowed = f"an integer >= {lo}" if hi is None else f"an integer in {lo}..{hi}"
        raise UserError(f"{option}: got {value}; allowed: {allowed}")
    return value


def check_seed(value: int, option: str = "--seed") -> int:
    """A seed: an integer from 0 to :data:`SEED_MAX`."""
    return check_int(value, option, 0, SEED_MAX)

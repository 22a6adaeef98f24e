"""The ``--preset/--config/--set`` options every configurable command takes.

A unit command (``generate``, ``test``, ``synth``, ``prove``, ``export``, ``run pam-migrate``)
and a system command (``model``) build a config the same way: the defaults, then a named preset,
then a YAML file, then ``--set key=value`` overrides (:func:`pimforge.base.config.config_layers`).
One helper adds the three options so that their names, order and help read the same everywhere;
:func:`config_args` hands them on as the keyword arguments of :func:`pimforge.api.config` and
:func:`pimforge.software.cli.model_config`.
"""
from __future__ import annotations

__all__ = ["CONFIG_OPTIONS", "add_config_arguments", "config_args", "given_config_options"]

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

"""User-facing errors.  The CLI prints ``error: <message>`` on one line and exits non-zero."""


class UserError(Exception):
    """A mistake in what the user asked for (bad config, unknown unit, unwritable path...)."""


class ConfigError(UserError):
    """A config field with a bad value.  The message names the field, the value and what is allowed."""

    def __init__(self, unit: str, field: str, value, allowed: str):
        self.unit, self.field, self.value, self.allowed = unit, field, value, allowed
        super().__init__(f"{unit}: field '{field}': got {value!r}; allowed: {allowed}")


class ToolError(Exception):
    """An external tool (Verilator, Icarus, Yosys) failed; the message names its log file."""

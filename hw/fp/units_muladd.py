"""Unit registrations (filled in by the unit group that owns this file)."""

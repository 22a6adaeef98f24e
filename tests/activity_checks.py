"""Checks shared by the units' activity tests: the RTL's probe counts against a model's."""
from __future__ import annotations

__all__ = ["assert_actions", "nonzero"]


def nonzero(counts) -> dict:
    """``counts`` without its zero entries, as plain ints."""
    return {k: int(v) for k, v in counts.items() if v}


def assert_actions(phase, expected, what: str = "") -> None:
    """The phase's probe counts equal ``expected`` (action -> count) exactly, key by key."""
    got, want = nonzero(phase.actions), nonzero(expected)
    if got != want:
        keys = sorted(set(got) | set(want))
        diff = [f"  {k}: RTL {got.get(k, 0)}, model {want.get(k, 0)}" for k in keys
                if got.get(k, 0) != want.get(k, 0)]
        raise AssertionError(f"{what or phase.name}: action counts differ\n" + "\n".join(diff))

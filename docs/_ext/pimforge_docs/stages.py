"""The generated page of every float operator's deepest stage at each pipeline depth, from the
measured table that ``pimforge synth stages --update-table`` writes (``synth/stage_depths.json``)."""
from __future__ import annotations

from pimforge.synth import stages

from .markdown import shell


def stages_page() -> str:
    rows = stages.load_table()
    if not rows:
        body = "The table has not been measured yet: run the command below.\n"
    else:
        body = stages.render(rows)
    worst = max((r["levels"] for r in stages.deepest(rows).values()), default=None)
    return "\n".join([
        "# Float operators: the deepest stage at each depth",
        "",
        "Each cell is the deepest register-to-register stage, in generic gate levels, of a "
        "standalone float operator synthesized with `pipeline_depth` = d (the generic flow of "
        "{doc}`/guide/synthesis`). Inside a unit, an operation with `op_depth` = d registers its "
        "output and balances the other d - 1 registers, so its deepest stage is about this "
        "table's at d - 1. At the ASAP7 estimate (36 ps a level plus 86 ps of flip-flop) a "
        f"1 GHz stage holds {stages.LEVEL_BUDGET} levels, 666 MHz {stages.levels_within(666)} "
        f"and 500 MHz {stages.levels_within(500)}; cells over "
        f"{stages.LEVEL_BUDGET} are bold."
        + (f" At its deepest depth no operator is deeper than {worst} levels." if worst else ""),
        "",
        body,
        "Each row was measured on the Verilog whose fingerprint it stores, and the tests "
        "recompute the fingerprints, so a table that no longer matches the operators fails "
        "until it is measured again (a few minutes on two cores):",
        "",
        shell("pimforge synth stages --update-table"),
        "",
    ])

"""The netlist cross-check of the energy table (software/netlist_energy.py): the VCD toggle
count on a hand-written dump, then fp16 add on its bench against the table."""
import math

import pytest

from pimforge.registry import units
from pimforge.software import netlist_energy as ne

# the run's synthesis cache (conftest.py): fp_add fp16 is the netlist tests/test_synth.py makes
pytestmark = pytest.mark.usefixtures("synth_cache")

# Both figures are first-order estimates (the table: Horowitz's 45 nm operation energies scaled
# by C V^2; the netlist: the RTL's mean toggle rate taken for every gate and an assumed switched
# capacitance per gate), so the test asks only for the same order of magnitude.  A slip in the
# arithmetic lands far outside: fJ read as pJ (1000x), toggles counted per word instead of per
# bit (the 16- to 49-bit words of fp16 add's datapath), or the memories' or probes' counters
# left in.
BAND = (0.1, 10.0)

_VCD = """$timescale 1ps $end
 $scope module $rootio $end
  $var wire 1 ! clk $end
  $var wire 1 " rst $end
  $var wire 4 # x [3:0] $end
  $var wire 48 $ pf_probe_0 [47:0] $end
 $upscope $end
 $scope module top $end
  $var wire 1 ! clk $end
  $var wire 4 # x [3:0] $end
  $var wire 1 % y $end
  $var wire 1 % y_alias $end
  $var wire 8 & mem[0] [7:0] $end
 $upscope $end
$enddefinitions $end
#0
$dumpvars
0!
1"
b0 #
b0 $
0%
b0 &
$end
#5
1!
b1111 #
b1 $
1%
b101 &
#10
0!
0"
#15
1!
b1010 #
b10 $
0%
#20
0!
#25
1!
b1011 #
b11 $
"""


def test_vcd_toggles_counts_bit_flips(tmp_path):
    path = tmp_path / "dump.vcd"
    path.write_text(_VCD)
    got = ne.vcd_toggles(path)
    # x (4 bits, seen in two scopes) and y (1 bit, two names) are the design; clk, rst, the
    # probe counter and the memory word are not.  x: 0000 -> 1111 -> 1010 -> 1011 flips
    # 4 + 2 + 1 bits; y: 0 -> 1 -> 0 flips twice.  clk rises three times.
    assert got == {"bits": 5, "toggles": 9, "cycles": 3, "signals": 2}


@pytest.mark.rtl
def test_fp16_add_against_the_table():
    case = ne.Case("fp_add", "fp16", {"n_random": 100})
    r = ne.cross_check(case, units())
    assert r["ops"] == r["actions_per_op"]["op:add:e5m10"] * r["ops"] > 100
    assert 0 < r["toggle_rate"] < 1 and r["vcd"]["cycles"] > r["ops"]
    for node, fj in (("45nm", 1.6), ("asap7", 0.15)):   # the table's stated toggle energies
        n = r["nodes"][node]
        assert n["netlist_pj"] == pytest.approx(r["gate_toggles_per_op"] * fj * 1e-3)
        assert math.isfinite(n["ratio"]) and BAND[0] < n["ratio"] < BAND[1], (node, n)
        # the activity model of the same job prices as the probes' counts
        assert n["model_pj"] == pytest.approx(n["table_pj"]), (node, n)
    # one fp16 add per operation: Horowitz's 0.4 pJ at 45 nm
    assert r["nodes"]["45nm"]["table_pj"] == pytest.approx(0.4)
    assert "an estimate" in ne.render({case.label: r})


@pytest.mark.slow
@pytest.mark.rtl
def test_every_case_is_in_range(tmp_path):
    """All of :data:`~pimforge.software.netlist_energy.CASES` (several minutes: the 16-lane PU's
    traced build and its VCD), at both nodes, through the benchmark's files."""
    rep = ne.netlist_benchmark(tmp_path / "energy.json", units(), progress=lambda _: None)
    assert set(rep["results"]) == {c.label for c in ne.CASES}
    for label, r in rep["results"].items():
        for node, n in r["nodes"].items():
            assert BAND[0] < n["ratio"] < BAND[1], (label, node, n)
    assert (tmp_path / "energy.md").read_text().count("| asap7 |") == len(ne.CASES)

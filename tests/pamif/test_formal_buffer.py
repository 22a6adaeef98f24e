"""pamif_buffer's proofs (hw/pamif/buffer_formal.py) in prove mode (k-induction) at the default
config (4 regions of 8 bytes, 32-bit source words into 8-bit destination words), each shown to
catch a bug.

* The full proof (``pimforge prove pamif_buffer --mode prove``): stream rules on ``i``, ``o``,
  ``o_free``; a tracked AnyConst word out once, unchanged, at its slot and word; counters in range,
  no fill into a full region, no read of an incomplete one; the release bound (``dst_words``
  cycles).  Its invariants are 1-inductive; the CLI's default depth 8 is used.
* Cover: every port transfers, the tracked word leaves and a release meets the bound exactly,
  within 20 cycles, so the proof is not vacuous.
* Mutants (``BufferMutant``, ``MutantShell`` from tests/formal_shells.py) fail in prove mode
  with a counterexample from reset (the base case, a bmc of the same depth).
"""
import pytest
from formal_shells import BufferMutant, MutantShell

from pimforge import cli
from pimforge.hw.pamif.buffer import PamifBuffer
from pimforge.hw.pamif.buffer_formal import buffer_properties, release_bound
from pimforge.hw.pamif.config import PamifConfig
from pimforge.synth.formal import prove

DEFAULT = PamifConfig()
COVER_DEPTH = 20      # two fill words, eight drain words, the tracked word's release: ~14 cycles
MUTANT_DEPTH = 16     # the slow drain needs a complete head and 8+ cycles of o.ready


def test_cli_prove_mode_passes(tmp_path, capsys):
    rc = cli.main(["prove", "pamif_buffer", "--mode", "prove", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "pamif_buffer: PASS  mode prove, depth 8" in out
    il = (tmp_path / "formal_top.il").read_text()
    for prop in ("track_data_unchanged", "track_out_once_after_in", "release_within_bound",
                 "read_only_complete_region", "fill_only_into_open_region", "count0_in_range",
                 "free_pending_in_range", "o_free_payload_held", "i_payload_held"):
        assert prop in il, f"{prop} is not in the formal top"


def test_cli_protocol_only_leaves_the_harness_out(tmp_path, capsys):
    rc = cli.main(["prove", "pamif_buffer", "--protocol-only", "--depth", "4", "--out",
                   str(tmp_path)])
    assert rc == 0, capsys.readouterr().out
    assert "track_data_unchanged" not in (tmp_path / "formal_top.il").read_text()


def test_cover_tracked_word_and_release(tmp_path):
    res = prove(PamifBuffer(DEFAULT), tmp_path, mode="cover", depth=COVER_DEPTH,
                extra=buffer_properties)
    assert res.status == "pass", res.failed
    assert release_bound(DEFAULT) == DEFAULT.dst_words == 8


def test_prove_narrow_to_wide(tmp_path):
    """The other direction: 8-bit DDR-like words assembled into 32-bit words (lane writes)."""
    cfg = PamifConfig(src="ddr4_s", dst="hbm3_s")
    res = prove(PamifBuffer(cfg), tmp_path, mode="prove", depth=4, extra=buffer_properties)
    assert res.status == "pass", res.failed


@pytest.mark.parametrize("bug,want", [
    ("skip_write", "track_in_memory"),
    # the bound's strengthening invariant (cycles counted <= words read) fails first, at step 5
    ("slow_drain", "release_"),
    ("early_complete", "read_only_complete_region"),
])
def test_mutated_buffer_fails(bug, want, tmp_path):
    res = prove(BufferMutant(DEFAULT, bug), tmp_path, mode="prove", depth=MUTANT_DEPTH,
                extra=buffer_properties)
    assert res.status == "fail", f"{bug} passed"
    assert any(want in f for f in res.failed), res.failed
    assert res.vcd is not None and res.vcd.exists() and res.vcd.stat().st_size > 0


@pytest.mark.parametrize("port,want", [("o", "o_payload_held"), ("o_free", "o_free_payload_held")])
def test_dropped_ready_fails(port, want, tmp_path):
    """The buffer sees ``port``'s ready always high (the ready term dropped)."""
    dut = PamifBuffer(DEFAULT)
    res = prove(dut, tmp_path, mode="prove", depth=MUTANT_DEPTH, extra=buffer_properties,
                shell=MutantShell(dut, "ignore_ready", port=port))
    assert res.status == "fail", f"ready of {port} dropped, passed"
    assert any(want in f for f in res.failed), res.failed
    assert res.vcd is not None and res.vcd.exists()

"""The block-RAM rule of `pimforge.hw.core.memories` and where the HILOS buffers go by it."""
import pytest
from amaranth.hdl import Fragment, Module, MemoryInstance

from pimforge import api
from pimforge.hw.core.memories import (BLOCK_BITS, MIN_FILL, block_fill, blocks_needed, buffer,
                                       is_block_ram)
from pimforge.registry import get_unit, units


@pytest.mark.parametrize("width,depth,blocks", [
    (16, 1024, 1), (16, 512, 1), (33, 256, 1), (66, 128, 2), (1024, 8, 29), (17, 256, 1),
    (16, 2048, 2), (1, 16384, 1), (72, 512, 2)])
def test_blocks_needed(width, depth, blocks):
    assert blocks_needed(width, depth) == blocks


def test_rule_is_half_the_blocks_data_bits():
    assert block_fill(16, 1024) == 1.0 and is_block_ram(16, 1024)
    assert block_fill(16, 512) == MIN_FILL and is_block_ram(16, 512)          # 8 Kbit: just in
    assert not is_block_ram(17, 256)                       # 4352 bits in a 16-Kbit block
    assert not is_block_ram(1024, 8)                       # shallow and wide: 29 blocks
    assert not is_block_ram(66, 128)                       # 8448 bits in two blocks
    assert min(w * d for w in range(1, 80) for d in range(1, 2048)
               if is_block_ram(w, d)) == BLOCK_BITS // 2


def test_block_buffer_refuses_a_combinational_read():
    m = Module()
    lut = buffer(m, "lut", 17, 256)
    assert lut.attrs["ram_style"] == "distributed"
    lut.read_port(domain="comb")
    blk = buffer(m, "blk", 16, 1024)
    assert blk.attrs["ram_style"] == "block"
    blk.read_port()
    with pytest.raises(ValueError, match="reads synchronously"):
        blk.read_port(domain="comb")
    Fragment.get(m, None)     # elaborated, so Amaranth does not warn of unused elaboratables


def test_accumulator_bank_stays_in_lut_ram():
    """An accumulator bank is read, forwarded and registered in one cycle (``read_stage``), so
    it is built ``comb_read`` and stays in LUT-RAM at any size.  papi_pu's ``attn_pim`` preset
    has a 512 x 16 partial-sum bank (64 vectors x 4 partials x 2 banks, 8 Kbit: block RAM by
    the rule), which the refusal above would stop if the bank did not say so."""
    m = Module()
    acc = buffer(m, "acc", 16, 512, comb_read=True)
    assert is_block_ram(16, 512) and not acc.block_ram
    assert acc.attrs["ram_style"] == "distributed"
    acc.read_port(domain="comb")
    Fragment.get(m, None)
    assert _styles("papi_pu", "attn_pim") == {"partial_bank": "distributed"}


@pytest.mark.slow
@pytest.mark.parametrize("unit, preset", [(u, p) for u in sorted(units())
                                          for p in [None] + list(units()[u].presets)])
def test_every_preset_elaborates(unit, preset):
    """Every unit's default and every preset elaborates (about 5 minutes in all: long run).
    ``pimforge bench --only synth`` found papi_pu ``attn_pim`` failing this way."""
    Fragment.get(get_unit(unit).factory(api.config(unit, preset=preset)), None)


def _styles(unit, preset):
    """``{memory name without its index: ram_style}`` of the unit's buffers (those with one)."""
    def walk(frag, path):
        for sub, name, _ in frag.subfragments:
            if isinstance(sub, MemoryInstance):
                yield f"{path}{name}".rstrip("0123456789"), sub._attrs.get("ram_style")
            else:
                yield from walk(sub, f"{path}{name}.")
    cfg = api.config(unit, preset=preset)
    frag = Fragment.get(get_unit(unit).factory(cfg), None)
    return {n: s for n, s in walk(frag, "") if s is not None}


# d_group 5 in the long run (19 s of elaboration): d_group 1 already shows both sides of the
# threshold (the K-Buf banks and the softmax block buffer in block RAM, the small buffers in
# LUT-RAM), and test_rule_is_half_the_blocks_data_bits pins the rule itself.
@pytest.mark.parametrize("preset,block_buffer", [
    ("hilos_dgroup1", "block"),
    pytest.param("hilos_dgroup5", "distributed", marks=pytest.mark.slow)])
def test_hilos_buffers_at_the_paper_sizes(preset, block_buffer):
    """The K-Buf's 1K x 16 banks (and, at one score lane, the softmax block buffer) are block
    RAM; the accumulator banks, score buffer, Q and P buffers stay in LUT-RAM, and so does
    qk_gemv's output FIFO (its read is combinational: a block RAM's clock-to-out into ``o``)."""
    styles = _styles("hilos_attention", preset)
    assert styles == {"qk.q_buf": "distributed", "qk.k_buf": "block",
                      "qk.mac_bank": "distributed", "qk.score_buffer": "distributed",
                      "qk.out_fifo.slice": "distributed",
                      "softmax.block_buffer": block_buffer, "sv.p_buffer": "distributed",
                      "sv.o_acc_bank": "distributed"}

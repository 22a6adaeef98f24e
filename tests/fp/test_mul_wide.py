"""The widening multiplier of the PAM score path (``mul_wide_stages``, fp16 x fp16 -> fp32) on
the Amaranth simulator: bit-exact against Berkeley SoftFloat (``f16_to_f32`` on both operands,
then ``f32_mul``), against the exact rational reference (the fp16 product rounded once to fp32:
it is exact, so no rounding happens; this one runs on every Python) and against the golden model
that the PAM golden flow uses for it (convert, then ``fp_mul`` in fp32), on every fp16 corner
pair and 3000 random pairs."""
import numpy as np
import pytest
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator
from conftest import assert_matches_reference

from pimforge.base import numerics as num
from pimforge.base.formats import FP16, FP32
from pimforge.hw.fp.ops import comb_op
from pimforge.sim.benches.fp.common import corner_tuples, random_operands
from pimforge.sim.golden.pam import common as g
from pimforge.sim.reference import rational as rat
from pimforge.sim.reference import softfloat as ref


def _operands():
    c = corner_tuples(FP16, 2)
    r = random_operands(FP16, np.random.default_rng(31), 3000, 2)
    return [np.concatenate([x, y]) for x, y in zip(c, r)]


def _simulate(a_vals, b_vals):
    m = Module()
    a, b = Signal(16), Signal(16)
    r = comb_op(m, "mul_wide", FP32, {"a": a, "b": b}, src=FP16)["r"]
    out = []

    async def bench(ctx):
        for x, y in zip(a_vals.tolist(), b_vals.tolist()):
            ctx.set(a, x)
            ctx.set(b, y)
            out.append(ctx.get(r))

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    return np.array(out, dtype=np.int64)


@pytest.fixture(scope="module")
def results():
    a, b = _operands()
    return a, b, _simulate(a, b)


def test_matches_golden_convert_then_mul(results):
    a, b, got = results
    want = g.fp_mul(g.OpCfg(FP32), g.to_acc(FP32, a), g.to_acc(FP32, b))
    bad = np.nonzero(got != want)[0]
    assert len(bad) == 0, (f"{len(bad)} mismatches; first {a[bad[0]]:#x} * {b[bad[0]]:#x}: "
                           f"{got[bad[0]]:#x} != {want[bad[0]]:#x}")
    # the corners include subnormals, zeros, Inf and NaN: every kind of result appears
    f = num.bits_float(FP32, got)
    assert np.isnan(f).any() and np.isinf(f).any() and (f == 0).any()


def test_matches_rational(results):
    a, b, got = results
    assert_matches_reference(FP32, got, rat.binary("mul", FP16, a, b, dst=FP32), (a, b),
                             "mul_wide fp16 -> fp32 vs rational")


@pytest.mark.softfloat
def test_matches_softfloat(results):
    a, b, got = results
    want = ref.binary("mul", FP32, ref.convert(FP16, FP32, a), ref.convert(FP16, FP32, b))
    assert_matches_reference(FP32, got, want, (a, b), "mul_wide fp16 -> fp32")

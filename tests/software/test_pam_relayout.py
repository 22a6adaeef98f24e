"""PAM's KV migrations through the host CPU and through the PAM interface (§6.2): the host
model, the interface path the step model uses, and reproduce's §6.2 table."""
from __future__ import annotations

import numpy as np
import pytest

from pimforge.hw.pamif import layout
from pimforge.hw.pamif.perf import migration_estimate
from pimforge.software.pam import step as st
from pimforge.software.pam.config import Hardware, PamModelConfig
from pimforge.software.pam.relayout import (
    HOST, INTERFACE_PORTS, HostPath, host_relayout_seconds, interface_instances,
    interface_relayout_seconds
)
from pimforge.software.pam.reproduce import relayout_table
from pimforge.software import workloads as wl

GB = 1e9


def test_host_path_parts_by_hand():
    # 1,000 tokens of 512 B from DDR (hashing disabled: 10% of 25.6 GB/s) to an SSD, whose
    # 8 channels program 4 dies x 16 KB per 200 us each: 8 x 0.32768 GB/s < NVMe's 7.88 GB/s
    host = HostPath(interaction_s=1e-6, hash_eff=0.1, copy_bw=4 * GB)
    r = host_relayout_seconds("ddr", "ssd", 1000, 512, host)
    size = 512_000
    assert r["parts"]["interaction"] == pytest.approx(2 * 1000 * 1e-6)
    assert r["parts"]["read"] == pytest.approx(size / 2.56e9)
    assert r["parts"]["reformat"] == pytest.approx(size / 4e9)
    assert r["parts"]["write"] == pytest.approx(size / (8 * 4 * 16384 / 200e-6))
    assert r["seconds"] == pytest.approx(sum(r["parts"].values()))
    # reading an SSD is not bound by page programs: the NVMe link at full rate
    back = host_relayout_seconds("ssd", "ddr", 1000, 512, host)
    assert back["parts"]["read"] == pytest.approx(size / 7.88e9)


def test_interface_instances_and_shares():
    # one device per side: HBM3 32 pseudo-channels, DDR4 2 ranks -> 2 instances
    assert interface_instances("hbm", "ddr", {"hbm": 1, "ddr": 1}) == 2
    assert interface_instances("ddr", "ssd", {"ddr": 40, "ssd": 8}) == 64
    one = interface_relayout_seconds("ddr", "hbm", 1 << 20, 512, 1)
    est = migration_estimate("ddr4", "hbm3", n_tokens=2048, token_bytes=512)
    assert one["seconds"] == pytest.approx(est["seconds"])
    four = interface_relayout_seconds("ddr", "hbm", 1 << 20, 512, 4)
    quarter = migration_estimate("ddr4", "hbm3", n_tokens=512, token_bytes=512)
    assert four["seconds"] == pytest.approx(quarter["seconds"])
    assert four["seconds"] < one["seconds"]
    assert interface_relayout_seconds("ddr", "hbm", 0, 512, 4)["seconds"] == 0.0


def test_step_migration_goes_through_the_interface():
    """The step model's migration time is the interface estimate of each direction (Alg. 2
    swaps half up, half down; evictions go HBM -> DDR), less what the GEMMs hide."""
    cfg = PamModelConfig()
    hw = Hardware.from_config(cfg)
    model = wl.get_model(cfg.model)
    stats = {"migrated": np.array([0.004, 0.006]), "evicted": 0.002}
    batch, ctx = 32, 4096.0
    moved = batch * ctx * model.kv_bytes_per_token
    dev = {t.name: t.devices for t in hw.tiers}

    def t(a, b, nbytes):
        k = min(dev[a] * INTERFACE_PORTS[a][1], dev[b] * INTERFACE_PORTS[b][1])
        share = int(np.ceil(nbytes / k / 512))
        return migration_estimate(INTERFACE_PORTS[a][0], INTERFACE_PORTS[b][0], n_tokens=share,
                                  token_bytes=512)["seconds"]
    want = (t("ddr", "ssd", 0.002 * moved) + t("ssd", "ddr", 0.002 * moved)
            + t("hbm", "ddr", 0.003 * moved + 0.002 * moved) + t("ddr", "hbm", 0.003 * moved))
    got = st._migration(stats, hw, model, batch, ctx, fc=0.0)
    assert got["migration"] == pytest.approx(want, rel=1e-9)
    hidden = st._migration(stats, hw, model, batch, ctx, fc=want / 2)
    assert hidden["migration"] == pytest.approx(want / 2, rel=1e-9)


def test_relayout_table_rows():
    t = relayout_table()
    assert [r[0] for r in t.rows] == ["hbm -> ddr", "ddr -> hbm", "ddr -> ssd", "ssd -> ddr"]
    for r in t.rows:
        host_ms, bw_only_ms, k, itf_ms, frac, ratio, ratio_bw = r[1:]
        assert host_ms > bw_only_ms > 0 and k >= 1
        assert 0 < frac <= 1.0
        assert ratio == pytest.approx(host_ms / itf_ms)
        assert ratio_bw == pytest.approx(bw_only_ms / itf_ms)
    # DRAM to DRAM: the interface streams at the slower side's rate, which the host reaches
    # at only 10% (disabled hashing), so it wins even without the per-token interactions
    dram = [r for r in t.rows if "ssd" not in r[0]]
    assert all(r[7] > 1.0 / HOST.hash_eff for r in dram)
    # the interface time of 1 MB over 2 DDR ranks: at least the bytes over 2 x 25.6 GB/s
    assert all(r[4] * 1e-3 >= (1 << 20) / (2 * layout.TIERS["ddr4"].mem_read_bw() * 1e9)
               for r in dram)

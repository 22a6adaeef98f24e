"""Energy per output token of the HILOS systems (HILOS §6.3 "Energy Efficiency", Fig. 17a) and
the attention accelerator's power (Table 3).

A step's actions come from the step model (:class:`~pimforge.software.hilos.step.StepTime`:
the GPU's FLOPs and HBM traffic, bytes over PCIe, host and FPGA DRAM traffic), its devices'
power from the table: the GPU, the CPU (and its extra power while it computes attention), the
host's DIMMs, and each SSD at its datasheet power for the whole step, as HILOS §6.3 prices its
baseline SSDs.  A SmartSSD's FPGA is priced two ways:

* ``table3`` (the systems' default): its measured on-chip power, HILOS Table 3 at the kernel's
  ``d_group`` (static, dynamic and PCIe transceivers), for the step time;
* ``units``: bottom-up, the ``hilos_attention`` activity model (its ``qk_gemv``,
  ``two_pass_softmax`` and ``sv_gemv``) on the step's jobs priced by the table, plus the FPGA's
  static power.  The table's figures are
  ASIC operations and SRAM macros: an FPGA's LUTs, routing and clock tree spend several times
  more per operation, so this is a floor.
"""
from __future__ import annotations

from functools import lru_cache

from pimforge.hw.core.energy import table
from pimforge.hw.hilos.attention_timing import kernel_activity
from pimforge.hw.hilos.config import HilosAttentionConfig
from pimforge.software import devices as dev
from pimforge.software import workloads as wl
from pimforge.software.energy import EnergyResult, add_counts, scale_counts
from pimforge.software.hilos.figures import FIG10_GRID
from pimforge.software.hilos.step import StepTime, all_systems

__all__ = ["step_energy", "kernel_job_actions", "accelerator_power", "fpga_power_key",
           "figure17", "FPGA_POWER", "FPGA_STATIC", "ACCEL_MODES"]

# HILOS Table 3's on-chip power per d_group (energy_table.yaml)
FPGA_POWER = {1: "static:smartssd", 4: "static:smartssd_g4", 5: "static:smartssd_g5"}
FPGA_STATIC = "static:ku15p"
ACCEL_MODES = ("table3", "units")


@lru_cache(maxsize=256)
def kernel_job_actions(d_group: int, head_dim: int, n_stored: int, n_precomputed: int) -> dict:
    """Actions of one ``hilos_attention`` job: one KV head and its ``d_group`` queries over
    ``n_stored`` stored and ``n_precomputed`` host-scored tokens (the unit's activity model,
    the sum of its three units')."""
    cfg = HilosAttentionConfig(d_group=d_group, head_dim=head_dim)
    return kernel_activity(cfg, [(n_stored, n_stored + n_precomputed)])


def _kernel_counts(k: dict) -> dict:
    """The SmartSSDs' kernel actions of a step (every device's jobs)."""
    if not k or k["jobs"] <= 0:
        return {}
    job = kernel_job_actions(k["d_group"], k["head_dim"], k["n_stored"], k["n_precomputed"])
    return scale_counts(job, k["jobs"])


def fpga_power_key(d_group: int) -> str:
    """Table 3's power entry of the nearest measured d_group (1, 4 or 5)."""
    return FPGA_POWER[min(FPGA_POWER, key=lambda g: (abs(g - d_group), g))]


def step_energy(st: StepTime, accel: str = "table3", label: str | None = None,
                node: str = "45nm") -> EnergyResult | None:
    """Energy per output token of one step (None on OOM); ``accel`` prices the SmartSSDs'
    FPGAs (:data:`ACCEL_MODES`).  ``parts``: ``actions`` (the step's transfers and GPU work),
    ``kernel`` (bottom-up only), ``static`` (device power over the step)."""
    if st.oom:
        return None
    seconds = st.step
    static = {key: n * seconds for key, n in st.devices.items()}
    static = add_counts(static, st.active)
    kernel = {}
    if st.kernel:
        n_dev = st.kernel["devices"]
        if accel == "table3":
            static[fpga_power_key(st.kernel["d_group"])] = n_dev * seconds
        else:
            static[FPGA_STATIC] = n_dev * seconds
            kernel = _kernel_counts(st.kernel)
    parts = {"actions": st.actions, "kernel": kernel, "static": static}
    parts = {k: scale_counts(v, 1.0 / st.batch) for k, v in parts.items()}
    return EnergyResult(label or st.system, add_counts(*parts.values()), seconds / st.batch,
                        node=node, parts=parts)


def accelerator_power(d_group: int, head_dim: int = 128, n_tokens: int = 32768,
                      jobs: int = 16, node: str = "45nm") -> dict:
    """One SmartSSD accelerator's on-chip power (W) bottom-up, on Table 3's job (``jobs``
    back-to-back jobs of ``n_tokens`` tokens at the kernel's clock, paced by the FPGA's DRAM
    as the system model runs it, :meth:`~pimforge.software.devices.SmartSSD.kernel_time`): ``dynamic`` from the units' activity models and the table,
    ``static`` the FPGA's, and ``seconds`` of the run."""
    t = table(node)
    seconds = dev.SMARTSSD.kernel_time(d_group, head_dim, jobs, n_tokens)
    job = kernel_job_actions(d_group, head_dim, n_tokens, 0)
    dynamic = t.joules(job) * jobs / seconds
    static = t.entry(FPGA_STATIC).pj
    return {"dynamic": dynamic, "static": static, "total": dynamic + static,
            "seconds": seconds}


def figure17(gpu_name: str = "A100", b: int = 16, n: int = 64) -> dict:
    """Fig. 17(a)'s comparison over Figure 10's grid (OPT-30B/66B/175B, 8K-128K, b = 16,
    n = 64; the paper's Fig. 17 points are not listed): per (model, context), every system's
    energy result (None on OOM)."""
    gpu = dev.GPUS[gpu_name]
    return {(mn, s): {k: step_energy(st) for k, st in
                      all_systems(wl.get_model(mn), gpu, b, s, n).items()}
            for mn, s in FIG10_GRID}

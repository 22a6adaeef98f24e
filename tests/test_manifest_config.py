"""Manifests describe every unit's ports exactly; configs round-trip through YAML and --set."""
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from pimforge import api
from pimforge.base.config import config_to_dict
from pimforge.registry import units

# The compositions take minutes to elaborate at their default size: long sweep only.
# The compositions' default configs (several full-width PUs) take minutes to elaborate: the
# default run checks their manifests on the `small` preset, the long sweep on the default config.
# lolpim_dispatcher's default (Table 5's 96 KB buffers) is 2.6 MB of Verilog: `small` by default.
HEAVY = {"pam_device", "pam_system", "lolpim_dispatcher"}
# pam_system even on `small` takes about 30 s to elaborate flat: long run.  Its streams are its
# devices' streams plus the final output, the ports of pam_device (small) are checked here by
# default, and tests/pam/test_system.py checks pam_system's manifest streams and fields.
LONG_ONLY = {"pam_system"}
ALL_UNITS = sorted(units())
MANIFEST_CASES = [pytest.param(u, "small" if u in HEAVY else None,
                               marks=[pytest.mark.slow] if u in LONG_ONLY else [])
                  for u in ALL_UNITS] + \
    [pytest.param(u, None, marks=pytest.mark.slow) for u in sorted(HEAVY)]


def _module_ports(verilog: str, top: str) -> set:
    header = re.search(rf"module {top}\((.*?)\);", verilog, re.S).group(1)
    return {p.strip() for p in header.split(",")}


@pytest.mark.parametrize("unit, preset", MANIFEST_CASES)
def test_manifest_matches_verilog(unit, preset, tmp_path):
    cfg = api.config(unit, preset=preset)
    paths = api.generate(unit, cfg, tmp_path)
    verilog = paths[0].read_text()
    man = json.loads(paths[1].read_text())
    ports = _module_ports(verilog, man["top"])
    assert man["clock"] in ports and man["reset"] in ports
    assert man["latency"] >= 0 and 0 < man["throughput"] <= 1
    assert man["parameters"] == config_to_dict(cfg)
    for name, s in man["streams"].items():
        assert s["direction"] in ("in", "out")
        for key in ("payload", "valid", "ready"):
            if key in s:
                assert s[key] in ports, (name, key)
        width = int(re.search(rf"(?:input|output) \[(\d+):0\] {s['payload']};", verilog).group(1)) + 1
        assert width == s["width"]
        # fields tile the payload exactly, least significant first
        offset = 0
        for f in s["fields"]:
            assert f["offset"] == offset and f["width"] > 0 and f["format"]
            offset += f["width"]
        assert offset == s["width"]


@pytest.mark.parametrize("unit", ALL_UNITS)
def test_presets_roundtrip_through_yaml(unit, tmp_path):
    u = units()[unit]
    for preset in list(u.presets) + [None]:
        cfg = u.preset_config(preset) if preset else u.default_config()
        text = yaml.safe_dump(config_to_dict(cfg))
        (tmp_path / "c.yaml").write_text(text)
        again = api.config(unit, config_file=tmp_path / "c.yaml")
        assert again == cfg
        sets = [f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in config_to_dict(cfg).items()]
        assert api.config(unit, sets=sets) == cfg


def test_set_overrides_yaml_and_preset(tmp_path):
    (tmp_path / "c.yaml").write_text("pipeline_depth: 5\n")
    cfg = api.config("fp_add", preset="fp32", config_file=tmp_path / "c.yaml", sets=["ftz=true"])
    assert (cfg.fmt.name, cfg.pipeline_depth, cfg.ftz) == ("fp32", 5, True)


def test_custom_format_generates():
    cfg = api.config("fp_add", sets=["fmt=e4m3"])
    _, man, _ = api.elaborate("fp_add", cfg)
    assert man["streams"]["i"]["fields"][0] == {"name": "a", "offset": 0, "width": 8, "format": "e4m3"}


def test_wheel_installs_only_the_pimforge_namespace(tmp_path):
    """`pip install .` must install pimforge.* and never a bare hw/ or sim/ package."""
    root = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(tmp_path), str(root)],
                   check=True, capture_output=True)
    (wheel,) = tmp_path.glob("pimforge-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"pimforge", f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.dist-info"}
    for needed in ("pimforge/hw/fp/add.py", "pimforge/sim/harness/engine.py",
                   "pimforge/sim/golden/fp/core.py", "pimforge/base/config.py",
                   "pimforge/hw/catalog.py", "pimforge/cli.py",
                   "pimforge/sweep/specs/pam_pu.yaml", "pimforge/sweep/specs/hilos_kernel.yaml"):
        assert needed in names

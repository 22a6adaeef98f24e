"""The command line as a user drives it."""
import yaml

from conftest import require_sim
from pimforge.cli import build_parser, main
from pimforge.registry import units


def test_list_shows_every_unit_and_preset(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name, u in units().items():
        assert name in out and u.summary in out
        for preset in u.presets:
            assert preset in out


def test_list_verbose_documents_fields(capsys):
    assert main(["list", "-v"]) == 0
    out = capsys.readouterr().out
    assert "pipeline_depth: register stages" in out and "(an integer in 0..16)" in out


def test_config_prints_loadable_yaml(capsys, tmp_path):
    assert main(["config", "fp_add", "--preset", "fp32", "--set", "pipeline_depth=4"]) == 0
    text = capsys.readouterr().out
    data = yaml.safe_load(text)
    assert data == {"fmt": "fp32", "pipeline_depth": 4, "ftz": False}


def test_help_for_every_command(capsys):
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, p in sub.choices.items():
        text = p.format_help()
        assert "usage: pimforge " + name in text and len(text) > 80


def test_generate_then_test_command(capsys, tmp_path):
    require_sim("verilator")
    assert main(["generate", "fp_add", "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fp_add.json", "fp_add.v"]
    code = main(["test", "fp_add", "--n-random", "1000", "--seed", "5"])
    out = capsys.readouterr().out
    assert code == 0
    assert "PASS:" in out and "no stalls" in out and "random stalls" in out


def test_generated_files_get_umask_permissions(tmp_path):
    """Outputs are written to private temporary files first; the final files must still get the
    usual 0666-less-umask permissions (not 0600)."""
    import os
    old = os.umask(0o022)
    try:
        assert main(["generate", "fp_add", "--out", str(tmp_path)]) == 0
    finally:
        os.umask(old)
    for name in ("fp_add.v", "fp_add.json"):
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o644, name

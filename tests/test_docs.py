"""The documentation site builds with warnings as errors and every internal reference checked
(``-W --keep-going -n``), as ``make docs`` builds it; a broken reference fails the build."""
from __future__ import annotations

import html
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pimforge.hw.catalog import HW_UNITS
from pimforge.software.cli import SYSTEMS

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
STRICT = ["-W", "--keep-going", "-n", "-q"]

def _sphinx(src: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", *STRICT, *extra, str(src), str(out)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("docs") / "html"
    r = _sphinx(DOCS, out)  # one process, as make docs (make test already runs two workers)
    assert r.returncode == 0, f"the strict docs build failed:\n{r.stderr[-6000:]}"
    return out


def test_one_page_per_unit(site):
    pages = {p.stem for p in (site / "_generated" / "units").glob("*.html")} - {"index"}
    assert len(HW_UNITS) == 28
    assert pages == set(HW_UNITS)


def test_one_page_per_system(site):
    pages = {p.stem for p in (site / "_generated" / "systems").glob("*.html")} - {"index"}
    assert pages == set(SYSTEMS) and len(pages) == 5


def _text(path: Path) -> str:
    """A page's text without its markup (highlighted code is split into spans)."""
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text(encoding="utf-8")))


def test_generated_pages_say_what_the_code_says(site):
    unit = _text(site / "_generated" / "units" / "pam_pu.html")
    for section in ("Config fields", "Presets", "Ports", "Latency and throughput",
                    "Cycle model", "Formal environment", "Commands"):
        assert section in unit, section
    assert "pimforge prove pam_pu" in unit
    cli = _text(site / "_generated" / "cli.html")
    assert "pimforge generate" in cli and "--preset" in cli


def _tiny_site(tmp_path: Path, body: str) -> Path:
    """A one-page site with the real site's settings (napoleon, nitpicky and its ignore
    list) but without the generated pages, so it builds in seconds."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(textwrap.dedent(f"""\
        exec(compile(open({str(DOCS / "conf.py")!r}).read(), "conf.py", "exec"))
        extensions.remove("pimforge_docs")
        html_theme = "alabaster"
        """), encoding="utf-8")
    (src / "index.md").write_text(body, encoding="utf-8")
    return src


PAGE = """\
# tiny

```{{py:function}} pimforge.example.get_unit(name)
```

{ref}  {{class}}`amaranth.lib.wiring.Component` is another project's: not checked.
"""


def test_good_reference_builds(tmp_path):
    src = _tiny_site(tmp_path, PAGE.format(ref="{func}`pimforge.example.get_unit`"))
    r = _sphinx(src, tmp_path / "out")
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("ref", ["{func}`pimforge.example.get_unitz`",  # renamed function
                                 "{func}`get_unit`"])                    # short, no module
def test_broken_reference_fails(tmp_path, ref):
    src = _tiny_site(tmp_path, PAGE.format(ref=ref))
    r = _sphinx(src, tmp_path / "out")
    assert r.returncode != 0
    assert "reference target not found" in r.stderr, r.stderr

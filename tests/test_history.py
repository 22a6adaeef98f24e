"""Design history belongs in git and in CHANGELOG.md, not in the code or the docs.

No commit hashes, no "issue N" references and no pass counts ("the 24th pass",
"issue 19's twenty-fourth pass") in any Python file (code, comments and docstrings), in the
README, in CHANGELOG.md or in the documentation sources under docs/.  A comment gives the reason
for the code; its measurement log is in the commit that made the change.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SKIP_DIRS = {".git", ".venv", "venv", "build", "_generated", "__pycache__", ".pytest_cache"}
TOP_FILES = ("README.md", "CHANGELOG.md")

# A commit hash, abbreviated or whole: 7-40 hex digits as a whole word, with at least one letter
# and one digit (so 1234567 and "deadbeef" do not count).  Neither side may touch a word
# character or a dot, which leaves out 0x7E00, e8m23 and file or version names.
HASH = re.compile(r"(?<![\w.])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w])", re.I)
ISSUE = re.compile(r"\bissues?\s+#?\d+", re.I)
_ORDINAL = (r"(?:\d+(?:st|nd|rd|th)|first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|"
            r"tenth|eleventh|twelfth|thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|"
            r"eighteenth|nineteenth|twentieth|thirtieth|(?:twenty|thirty)-\w+)")
# "the 24th pass", "a twenty-fifth pass"; "the first pass over the scores" (an algorithm's pass
# over its data) is not history.
PASS = re.compile(rf"\b{_ORDINAL}\s+pass(?:es)?\b(?!\s+(?:of|over|through)\b)", re.I)
CHECKS = {"a commit hash": HASH, "an issue number": ISSUE, "a pass count": PASS}

# Hex-looking words that are data, not history (a test's made-up cache key).
NOT_HISTORY = {"0123456789abcdef"}
# This file holds the examples the patterns must catch.
SELF = Path(__file__).resolve()


def history_in(text: str) -> list[tuple[int, str, str]]:
    """(line number, kind, match) for every piece of history in ``text``."""
    found = []
    for lineno, line in enumerate(text.splitlines(), 1):
        for kind, pattern in CHECKS.items():
            for m in pattern.finditer(line):
                if m.group(0).lower() not in NOT_HISTORY:
                    found.append((lineno, kind, m.group(0)))
    return found


def checked_files(root: Path) -> list[Path]:
    """Every .py file under ``root``, its README and CHANGELOG, and the docs' Markdown sources
    (generated pages excluded: they come from the docstrings, which are checked here)."""
    out = [root / name for name in TOP_FILES if (root / name).is_file()]
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part in SKIP_DIRS or part.endswith(".egg-info") for part in rel.parts[:-1]):
            continue
        if not path.is_file() or path.resolve() == SELF:
            continue
        if path.suffix == ".py" or (rel.parts[0] == "docs" and path.suffix == ".md"):
            out.append(path)
    return out


def scan(root: Path) -> list[str]:
    return [f"{path.relative_to(root)}:{lineno}: {kind}: {match!r}"
            for path in checked_files(root)
            for lineno, kind, match in history_in(path.read_text(encoding="utf-8",
                                                                 errors="replace"))]


def test_no_history_in_code_readme_changelog_or_docs():
    found = scan(ROOT)
    assert not found, ("design history (move it to the commit message or CHANGELOG.md):\n"
                       + "\n".join(found))


def test_the_scan_covers_code_docs_and_readme():
    files = {p.relative_to(ROOT).as_posix() for p in checked_files(ROOT)}
    assert "README.md" in files and "CHANGELOG.md" in files
    assert "hw/catalog.py" in files and "tests/test_readme.py" in files
    assert any(f.startswith("docs/guide/") and f.endswith(".md") for f in files)
    assert not any(f.startswith(".venv/") or "/_generated/" in f for f in files)


@pytest.mark.parametrize("text", [
    "# measured at 309c6c6 on two cores",
    "fmax 96.2 MHz (da703cd) -> 100.3",
    "the full hash 8e84c4d1b2f3a4c5d6e7f8091a2b3c4d5e6f7081",
    "# see issue 19 for the targets",
    "(Issue #52)",
    "issues 19 and 20",
    "after the 24th pass",
    "issue 19's twenty-fourth pass registered the input",
    "in its first pass the score read was priced",
    "the 2nd passes",
])
def test_history_is_found(text):
    assert history_in(text), text


@pytest.mark.parametrize("text", [
    "NaN is 0x7E00 in fp16, and 0x3db504f3 is 1/sqrt(128) in fp32",
    "1234567 cycles; 2,499 s",
    "deadbeef and e8m23 and fp16",
    "pass 2 of two_pass_softmax reads the scores back",
    "the first pass over the block computes m and Z",
    "pimforge synth writes report.json",
    "SHA-like names such as asap7sc7p5t_SEQ_RVT_TT_nldm_220123.lib",
    "version 0.70.0.0.post1259",
])
def test_non_history_is_not_found(text):
    assert not history_in(text), text


def test_a_file_with_history_fails_the_scan(tmp_path):
    (tmp_path / "README.md").write_text("# x\nmeasured at 309c6c6\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text('"""Docstring."""\n# the 24th pass (issue 19)\n')
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("clean text\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "skipped.py").write_text("# issue 3\n")
    found = scan(tmp_path)
    assert found == ["README.md:2: a commit hash: '309c6c6'",
                     "pkg/mod.py:2: an issue number: 'issue 19'",
                     "pkg/mod.py:2: a pass count: '24th pass'"]

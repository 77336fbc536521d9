"""The docs work as written: the README's Python runs and prints what its comments say, every
`python -m ...` and `.venv/bin/python tools/...` command in README.md and docs/*.md answers
`--help`, the README stays short, and every relative link (and its #section) points at something
that exists."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from vit_core import ImageError, load_image

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = [README, ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 300
PICTURE_MAX_BYTES = 200_000
# Children never reach the network: a command that would fetch fails here instead of hanging.
ENV = {**os.environ, "HF_HUB_OFFLINE": "1"}


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", path.read_text(), re.S | re.M)


def printed_expectations(code: str) -> list[str]:
    """`print(...)  # torch.Size([12, 197, 197])` -> the comment: what the line prints."""
    return [m.strip() for m in re.findall(r"^print\(.*\)\s*#(.*)$", code, re.M)]


def run(args: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=ROOT, env=ENV, capture_output=True, text=True,
                          timeout=timeout)


def test_the_readme_has_a_python_example_that_prints():
    blocks = python_blocks(README)
    assert blocks, "the README shows the core in a ```python block"
    assert any(printed_expectations(b) for b in blocks), "and the example prints its result"


@pytest.mark.slow  # a ViT-B/16 pass in a fresh interpreter
@pytest.mark.parametrize("index", range(len(python_blocks(README))))
def test_readme_python_runs_as_written_and_prints_what_it_says(index):
    code = python_blocks(README)[index]
    out = run([sys.executable, "-c", code])
    assert out.returncode == 0, out.stderr[-2000:]
    for expected in printed_expectations(code):
        assert expected in out.stdout, (expected, out.stdout)


def commands(pattern: str) -> list[str]:
    found = set()
    for path in DOCS:
        found |= set(re.findall(pattern, path.read_text()))
    return sorted(found)


MODULES = commands(r"python -m ([A-Za-z_][\w.]*)")
# the fixture tools run in their own venv with timm (docs/development.md); these in .venv
SCRIPTS = commands(r"\.venv/bin/python (tools/\w+\.py)")


def test_the_docs_name_their_commands():
    assert {"vit_core.fetch", "benchmarks", "pytest"} <= set(MODULES)
    assert "tools/load_test.py" in SCRIPTS


@pytest.mark.slow  # a fresh interpreter per command
@pytest.mark.parametrize("module", MODULES)
def test_every_python_m_command_in_the_docs_answers_help(module):
    out = run([sys.executable, "-m", module, "--help"], timeout=120)
    assert out.returncode == 0, f"python -m {module} --help: {out.stderr[-2000:]}"
    assert "usage" in out.stdout.lower()


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_tool_in_the_docs_answers_help(script):
    assert (ROOT / script).is_file(), script
    out = run([sys.executable, script, "--help"], timeout=120)
    assert out.returncode == 0, f"python {script} --help: {out.stderr[-2000:]}"


def test_the_readme_fits_on_a_few_screens():
    n = len(README.read_text().splitlines())
    assert n <= README_MAX_LINES, f"README.md has {n} lines; guides belong in docs/"


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces -> '-'."""
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)  # not code comments
    return {slug(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}


def links(path: Path) -> list[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)
    return re.findall(r"\]\(([^)\s]+)\)", text)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_at_a_file_and_section_that_exist(doc):
    checked = 0
    for link in links(doc):
        if re.match(r"[a-z]+:", link):  # http:, https:, mailto:
            continue
        target, _, anchor = link.partition("#")
        path = (doc.parent / target).resolve() if target else doc
        assert path.exists(), f"{doc.name}: {link} points at nothing"
        if anchor and path.suffix == ".md":
            assert anchor in anchors(path), f"{doc.name}: {link}: no such section"
        checked += 1
    assert checked or doc != README, "the README links to its guides"


def test_the_readme_picture_is_small():
    pictures = [ROOT / p for p in re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", README.read_text())]
    assert pictures, "the README shows the model map"
    for p in pictures:
        assert p.stat().st_size < PICTURE_MAX_BYTES, (p, p.stat().st_size)


def test_a_wrong_path_in_the_example_says_which_path():
    with pytest.raises(ImageError) as ei:
        load_image("docs/img/no-such-cat.jpg")
    assert str(ei.value) == "We could not find or open the image file docs/img/no-such-cat.jpg."

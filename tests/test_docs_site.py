"""The documentation site: `mkdocs build --strict` builds it with no warning, its API reference
generated from the docstrings, so that a broken link, anchor or reference fails the tests (and
CI, which runs them).

`make docs` runs the same build into site/; here it goes to a temporary folder.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO

MKDOCS = Path(sys.executable).parent / "mkdocs"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The built site, and what the build printed."""
    folder = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [str(MKDOCS), "build", "--strict", "--site-dir", str(folder)], cwd=REPO,
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return folder, done.stdout + done.stderr


def test_the_site_builds_in_strict_mode_without_a_warning(site: tuple[Path, str]) -> None:
    _, printed = site
    problems = [line for line in printed.splitlines() if re.match(r"(WARNING|ERROR)\b", line)]
    assert not problems, "\n".join(problems)


def test_every_page_is_in_the_navigation_and_built(site: tuple[Path, str]) -> None:
    folder, _ = site
    pages = {str(path.relative_to(REPO / "docs")) for path in (REPO / "docs").rglob("*.md")}
    listed = set(re.findall(r"[\w/-]+\.md", yaml.safe_dump(yaml.safe_load(
        (REPO / "mkdocs.yml").read_text())["nav"])))  # fmt: skip
    assert pages == listed, f"not in mkdocs.yml's nav: {pages - listed}; gone: {listed - pages}"
    for page in pages:
        built = folder / ("index.html" if page == "index.md" else page.removesuffix(".md"))
        assert built.exists(), page


def test_the_api_reference_is_generated_from_the_docstrings(site: tuple[Path, str]) -> None:
    folder, _ = site
    page = (folder / "reference" / "players" / "index.html").read_text()
    # A docstring of the code, rendered: the Player protocol's own summary line.
    from privateshared.agents.base import Player

    summary = (Player.__doc__ or "").strip().splitlines()[0]
    assert summary and summary in page
    assert 'id="privateshared.agents.base.PlayerRequest"' in page

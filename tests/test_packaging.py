"""Packaging: the wheel holds every subpackage and data file under `privateshared.*`.

An editable install imports a folder even when packaging misses it, so only a built wheel shows
the gap. The wheel is built offline, with the environment's own setuptools.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--wheel-dir", str(out), str(REPO)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    [built] = out.glob("privateshared-*.whl")
    return built


def source_folders() -> dict[str, Path]:
    """Import name -> folder, for every folder holding Python or data files under the roots."""
    with open(REPO / "pyproject.toml", "rb") as file:
        package_dir = tomllib.load(file)["tool"]["setuptools"]["package-dir"]
    folders = {}
    for name, root in package_dir.items():
        for path in sorted((REPO / root).rglob("*")):
            if path.is_file() and path.suffix in {".py", ".pyi", ".json", ".txt"}:
                parts = path.parent.relative_to(REPO / root).parts
                if "__pycache__" not in parts:
                    folders[".".join((name, *parts))] = path.parent
    return folders


def test_wheel_holds_every_source_folder_and_file(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    folders = source_folders()
    expected = {"privateshared.graph", "privateshared.agents", "privateshared.domains",
                "privateshared.bench", "privateshared.domains.travel_booking"}  # fmt: skip
    assert expected <= set(folders)
    for name, folder in folders.items():
        inside = name.replace(".", "/")
        for path in folder.iterdir():
            if path.is_file() and path.suffix in {".py", ".pyi", ".json", ".txt"}:
                assert f"{inside}/{path.name}" in names, f"{path} is missing from the wheel"
    # Nothing installs under a top-level name another distribution could own.
    assert {name.split("/")[0] for name in names} == {
        "privateshared", f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.dist-info",
    }  # fmt: skip


def test_installed_wheel_plays_from_its_own_files(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target),
         str(wheel)],
        check=True, capture_output=True,
    )  # fmt: skip
    script = (
        "import sys, asyncio; sys.path.insert(0, sys.argv[1]);"
        "import privateshared.graph as g;"
        "from privateshared.domains.loader import load_domains;"
        "assert g.__file__.startswith(sys.argv[1]), g.__file__;"
        "assert len(load_domains()) == 5, load_domains();"
        "out = asyncio.run(g.graph.ainvoke({'experiment': 'job-interview', 'game_id': 4},"
        " context=g.GameContext(answerer='oracle')));"
        "print(out['scores'].episode_scores['Main Score'])"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(target)], capture_output=True, text=True, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "100.0"


def test_console_script_is_declared() -> None:
    with open(REPO / "pyproject.toml", "rb") as file:
        scripts = tomllib.load(file)["project"]["scripts"]
    assert scripts == {"privateshared": "privateshared.bench.cli:main"}

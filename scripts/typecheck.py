"""Run mypy --strict on the package as it is imported (`privateshared.graph`, ...).

The source folders are mapped to `privateshared.*` by pyproject.toml, a layout mypy cannot
follow from the repository root, so this links them into a temporary `privateshared/` folder.
"""

import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    with open(ROOT / "pyproject.toml", "rb") as file:
        package_dir = tomllib.load(file)["tool"]["setuptools"]["package-dir"]
    with tempfile.TemporaryDirectory() as tmp:
        for name, folder in package_dir.items():
            link = Path(tmp, *name.split("."))
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(ROOT / folder, target_is_directory=True)
        command = [
            sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
            "--namespace-packages", "--explicit-package-bases", "-p", "privateshared",
        ]  # fmt: skip
        return subprocess.call(command, cwd=tmp, env={"MYPYPATH": tmp, "PATH": ""})


if __name__ == "__main__":
    raise SystemExit(main())

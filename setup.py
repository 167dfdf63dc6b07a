"""Package discovery for the top-level source folders.

pyproject.toml maps `graph/`, `agents/`, `domains/` and `bench/` to `privateshared.*` through
`[tool.setuptools.package-dir]`. setuptools cannot combine that mapping with automatic discovery,
so the subpackages are found here by walking each mapped folder: a new domain folder with an
`__init__.py` is packaged without editing any file outside it.
"""

import tomllib
from pathlib import Path

from setuptools import setup

HERE = Path(__file__).parent


def discover_packages() -> list[str]:
    """Every folder holding an `__init__.py` under the mapped folders, as a dotted name."""
    with open(HERE / "pyproject.toml", "rb") as file:
        package_dir: dict[str, str] = tomllib.load(file)["tool"]["setuptools"]["package-dir"]
    packages = []
    for name, folder in package_dir.items():
        for init in sorted((HERE / folder).rglob("__init__.py")):
            parts = init.parent.relative_to(HERE / folder).parts
            if "__pycache__" not in parts:
                packages.append(".".join((name, *parts)))
    return packages


setup(packages=discover_packages())

"""A mkdocs hook that lets mkdocstrings find the `privateshared` package for the API reference.

The package's folders sit at the top of the repository (graph/, agents/, domains/, bench/) and
install as `privateshared.*` through pyproject.toml's package-dir. griffe, which reads the source
for mkdocstrings, looks for a folder named `privateshared` and follows neither that mapping nor
setuptools' editable finder for it. So before the build this hook makes `build/api/privateshared`,
a folder of links to the four folders, where mkdocs.yml points mkdocstrings (`paths`).
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("graph", "agents", "domains", "bench")


def on_startup(command: str, dirty: bool) -> None:
    """Link build/api/privateshared/<folder> to each of the package's folders: at start-up,
    before mkdocstrings reads its configuration, which drops paths that do not exist."""
    package = ROOT / "build" / "api" / "privateshared"
    package.mkdir(parents=True, exist_ok=True)
    for name in PACKAGES:
        link, target = package / name, ROOT / name
        if link.is_symlink() and link.resolve() == target:
            continue
        link.unlink(missing_ok=True)  # a link into another checkout
        link.symlink_to(target, target_is_directory=True)

"""Every domain a run knows, found in one place: shipped, installed, and the user's folders.

Domains come from four sources, each a domain folder or a folder of domain folders:

1. the shipped ones, `domains/` of this package;
2. installed packages: each entry point of the group `privateshared.domains` names a package
   (`clinic = "clinic_domains"` in `[project.entry-points."privateshared.domains"]`) whose
   folder is a domain folder or holds domain folders;
3. the folders of the environment variable `PRIVATESHARED_DOMAINS`, separated by `os.pathsep`
   (how LangGraph Studio learns of them: set it in the shell or the `.env` that `langgraph dev`
   reads);
4. the folders a caller passes: the command line's `--domains DIR`, or `folders=` from Python.

No source overrides another: a name that two folders define is one error naming both, since an
instances file names its domain and must mean one set of texts. A folder reached twice (named by
two sources, or by a symbolic link) counts once. Nothing is cached: the sources are read again on
every call (a few milliseconds), so a folder added in the meantime is found. The environment is
read here, where domains are discovered, never by a graph node.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping, Sequence
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from privateshared.domains.loader import (
    DOMAIN_FILE,
    DomainCheck,
    DomainError,
    builtin_domains_dir,
    check_domains,
    first_problem,
)
from privateshared.domains.schema import Domain

ENTRY_POINT_GROUP = "privateshared.domains"
"""Installed packages register their domains under this entry point group."""
DOMAINS_VARIABLE = "PRIVATESHARED_DOMAINS"
"""Folders of more domains, separated by `os.pathsep`; read where domains are discovered."""
SHIPPED = "shipped"
GIVEN = "--domains"
"""The origin of the folders a caller passes (the command line's option names them)."""


class DomainSource(BaseModel):
    """A folder that domains come from, and how it became known."""

    model_config = ConfigDict(frozen=True)

    root: Path
    """A domain folder, or a folder of domain folders."""
    origin: str
    """How it became known, for messages: shipped, an installed package's entry point,
    PRIVATESHARED_DOMAINS, --domains (or PATH, the folder `domains check` is given)."""


class KnownCheck(BaseModel):
    """One domain folder of a source, checked on its own and beside the other sources."""

    model_config = ConfigDict(frozen=True)

    source: DomainSource
    """The first source that reached the folder."""
    check: DomainCheck
    """The folder on its own (a name taken twice within its source is one of its problems)."""
    clash: str | None = None
    """The line saying that a folder of another source took its name first; None if none did."""

    @property
    def problems(self) -> tuple[str, ...]:
        """Every problem, one line each."""
        return (*self.check.problems, *([self.clash] if self.clash else []))

    @property
    def domain(self) -> Domain | None:
        """The domain, when the folder has no problem."""
        return None if self.clash else self.check.domain


def variable_folders(environ: Mapping[str, str]) -> list[Path]:
    """The folders `PRIVATESHARED_DOMAINS` names in `environ`; empty entries are skipped."""
    value = environ.get(DOMAINS_VARIABLE, "")
    return [Path(part) for part in value.split(os.pathsep) if part.strip()]


def installed_sources() -> list[DomainSource]:
    """The folders of installed packages' `privateshared.domains` entry points, by name.

    Raises `DomainError` for an entry point that names no package folder.
    """
    sources = []
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: (p.name, p.value)):
        origin = _describe_entry_point(point)
        for root in _package_folders(point, origin):
            sources.append(DomainSource(root=root, origin=origin))
    return sources


def _describe_entry_point(point: EntryPoint) -> str:
    dist = point.dist.name if point.dist is not None else "an installed package"
    return f"entry point {point.name} = {point.value!r} of {dist}"


def _package_folders(point: EntryPoint, origin: str) -> list[Path]:
    """The folder(s) of the package an entry point names. The package is located, not imported:
    finding domains runs none of their code."""
    fix = "name a package whose folder holds domain folders, or uninstall the package"
    if point.attr:
        raise DomainError(f"{origin}: names an attribute; {fix} (no `:attribute`)")
    try:
        spec = importlib.util.find_spec(point.module)
    except (ImportError, ValueError) as error:
        raise DomainError(f"{origin}: cannot be found ({error}); {fix}") from None
    if spec is None:
        raise DomainError(f"{origin}: no module {point.module!r} is installed; {fix}")
    if not spec.submodule_search_locations:
        raise DomainError(f"{origin}: {point.module!r} is a module, not a package; {fix}")
    return [Path(location) for location in spec.submodule_search_locations]


def domain_sources(
    folders: Sequence[Path] = (), environ: Mapping[str, str] | None = None
) -> list[DomainSource]:
    """Every source of domains in order: shipped, installed, `PRIVATESHARED_DOMAINS`, `folders`.

    `environ` defaults to the process's environment.
    """
    environ = os.environ if environ is None else environ
    return [
        DomainSource(root=builtin_domains_dir(), origin=SHIPPED),
        *installed_sources(),
        *(DomainSource(root=root, origin=DOMAINS_VARIABLE) for root in variable_folders(environ)),
        *(DomainSource(root=root, origin=GIVEN) for root in folders),
    ]


def check_sources(sources: Sequence[DomainSource]) -> list[KnownCheck]:
    """Check every domain folder of every source, and that no two folders share a name.

    Raises `DomainError` naming the source of a root that is no folder or holds no domain.
    """
    checked: list[KnownCheck] = []
    seen: set[tuple[int, int]] = set()
    first_with: dict[str, tuple[Path, int]] = {}
    for index, source in enumerate(sources):
        if source.origin == DOMAINS_VARIABLE and not source.root.is_dir():
            raise DomainError(
                f"{DOMAINS_VARIABLE}: {source.root}: not a folder; list domain folders or folders "
                f"of them, separated by {os.pathsep!r}"
            )
        try:
            checks = check_domains(source.root)
        except DomainError as error:
            raise DomainError(f"{source.origin}: {error}") from None
        for check in checks:
            identity = _identity(check.folder)
            if identity in seen:  # the same folder, reached through another source
                continue
            seen.add(identity)
            clash = None
            if check.name is not None:
                first, first_index = first_with.setdefault(check.name, (check.folder, index))
                # A clash within one source is already one of check_domains' problems.
                if first_index != index:
                    clash = _taken(check.name, check.folder, source, first, sources[first_index])
            checked.append(KnownCheck(source=source, check=check, clash=clash))
    return checked


def _identity(folder: Path) -> tuple[int, int]:
    """What makes two paths one folder. os.stat rather than Path.resolve, which reads symbolic
    links (os.readlink), a call that LangGraph's dev server refuses while a run plays."""
    stat = folder.stat()
    return stat.st_dev, stat.st_ino


def _taken(
    name: str, folder: Path, source: DomainSource, first: Path, first_source: DomainSource
) -> str:
    return (
        f"{folder / DOMAIN_FILE} ({source.origin}): name {name!r} is taken by another domain "
        f"({first / DOMAIN_FILE}, {first_source.origin}); rename one, or leave one folder out"
    )


def _domains(checked: Sequence[KnownCheck]) -> list[tuple[Path, Domain]]:
    """The folder and domain of each of `checked`, or `DomainError`: the first problem of a
    folder on its own (as `load_domains` says it), else the first name two folders define."""
    for source in dict.fromkeys(known.source for known in checked):
        own = [p for known in checked if known.source == source for p in known.check.problems]
        if own:
            raise DomainError(first_problem(own, source.root))
    clashes = [known.clash for known in checked if known.clash]
    if clashes:
        more = f" (and {len(clashes) - 1} more)" if len(clashes) > 1 else ""
        raise DomainError(clashes[0] + more)
    return [(known.check.folder, known.domain) for known in checked if known.domain is not None]


def known_domains(
    folders: Sequence[Path] = (), environ: Mapping[str, str] | None = None
) -> dict[str, Domain]:
    """Every domain a run knows, by name: the shipped ones, installed packages',
    `PRIVATESHARED_DOMAINS`' and those under `folders`.

    Raises `DomainError` naming the first problem, e.g. a name two folders define.
    """
    checked = check_sources(domain_sources(folders, environ))
    return {domain.name: domain for _, domain in _domains(checked)}


def domains_under(
    folders: Sequence[Path], environ: Mapping[str, str] | None = None
) -> dict[str, Domain]:
    """The domains under `folders` only, by name, once checked beside every known domain (so
    that instances made of them can be played with the others). A folder of them may be one
    that another source knows already, e.g. the shipped `domains/`."""
    checked = check_sources(domain_sources(folders, environ))
    wanted = {_identity(check.folder) for root in folders for check in check_domains(root)}
    return {
        domain.name: domain for folder, domain in _domains(checked) if _identity(folder) in wanted
    }

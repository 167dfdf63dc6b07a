"""A domain of one's own, outside the package: checked, given instances and played everywhere.

The domain is the shipped travel booking, copied to a temporary folder and renamed (clinic-intake,
questioned by a receptionist, tag RECEPTIONIST). It is found three ways (domains/registry.py):
named on the command line (`--domains DIR`) or in Python, named in `PRIVATESHARED_DOMAINS` (how
LangGraph Studio learns of it), and installed as a package that registers an entry point in the
group `privateshared.domains`. A name that two folders define is one line naming both.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from privateshared.bench.cli import main
from privateshared.bench.running.episodes import play_episode
from privateshared.bench.testing.fake_endpoint import FakeOpenAI
from privateshared.bench.testing.fake_players import default_players
from privateshared.domains.instances import (
    InstancesError,
    default_instance,
    generate_instances,
    playable_instances,
    read_instances,
)
from privateshared.domains.loader import DomainError, builtin_domains_dir
from privateshared.domains.registry import (
    DOMAINS_VARIABLE,
    ENTRY_POINT_GROUP,
    domains_under,
    known_domains,
    variable_folders,
)
from privateshared.graph.context import GameContext
from tests.test_langgraph_dev import _langgraph_dev, _play, _scores_part
from tests.test_play import Terminal

BIN = Path(sys.executable).parent
NAME, TAG, QUESTIONER = "clinic-intake", "RECEPTIONIST", "receptionist"
SHIPPED = ("travel-booking", "job-interview", "restaurant", "things-places", "letter-number")


@pytest.fixture(autouse=True)
def no_domains_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's own PRIVATESHARED_DOMAINS must not leak into these tests."""
    monkeypatch.delenv(DOMAINS_VARIABLE, raising=False)


def make_clinic(root: Path) -> Path:
    """The shipped travel booking renamed into clinic-intake, in `root/clinic_intake`."""
    folder = root / "clinic_intake"
    shutil.copytree(
        builtin_domains_dir() / "travel_booking", folder, ignore=shutil.ignore_patterns("__py*")
    )
    data = json.loads((folder / "domain.json").read_text())
    data.update(name=NAME, tag=TAG, questioner=QUESTIONER)
    text = json.dumps(data).replace("travel agent", QUESTIONER)
    (folder / "domain.json").write_text(text)
    prompt = folder / "initial_prompt.txt"
    prompt.write_text(prompt.read_text().replace("travel agent", QUESTIONER))
    (folder / "__init__.py").write_text('"""Clinic intake: a patient and a receptionist."""\n')
    return folder


@pytest.fixture(scope="module")
def clinic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of domain folders, outside the package, holding clinic-intake."""
    root = tmp_path_factory.mktemp("my-domains")
    make_clinic(root)
    return root


def main_scores(results: Path, pair: str) -> dict[str, float]:
    """Main Score of every episode of `pair`, by `<experiment folder>/<episode folder>`."""
    return {
        f"{path.parent.parent.name}/{path.parent.name}": json.loads(path.read_text())[
            "episode scores"
        ]["Main Score"]
        for path in sorted(results.glob(f"{pair}/privateshared/*/episode_*/scores.json"))
    }


def test_a_folder_of_ones_own_is_checked_given_instances_and_run(
    clinic: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["domains", "check", str(clinic)]) == 0
    assert capsys.readouterr().out.startswith(f"{NAME}: ok; slots from (10 values)")

    # `instances --domains DIR` makes instances of DIR's domains only, as it always did.
    instances = tmp_path / "clinic.json"
    assert main(["instances", "--domains", str(clinic), "--per-domain", "3",
                 "--out", str(instances)]) == 0  # fmt: skip
    capsys.readouterr()
    file = read_instances(instances)
    assert [(e.name, e.domain) for e in file.experiments] == [(NAME, NAME)]

    # Without its folder, a run does not know the domain, and says how to tell it.
    results = tmp_path / "records"
    assert main(["run", "--instances", str(instances), "--model", "oracle",
                 "--results-dir", str(results)]) == 2  # fmt: skip
    [line] = capsys.readouterr().err.splitlines()
    assert f"uses domain '{NAME}', which no known folder defines" in line
    assert "--domains DIR" in line and DOMAINS_VARIABLE in line

    assert main(["run", "--domains", str(clinic), "--instances", str(instances), "--model",
                 "oracle", "--model", "mock", "--results-dir", str(results)]) == 0  # fmt: skip
    oracle = main_scores(results, "oracle-t0.0--oracle-t0.0")
    assert oracle == {f"0_{NAME}/episode_{k}": 100.0 for k in range(3)}
    assert set(main_scores(results, "mock-t0.0--mock-t0.0")) == set(oracle)
    interactions = json.loads(
        (results / "oracle-t0.0--oracle-t0.0/privateshared" / f"0_{NAME}/episode_0"
         / "interactions.json").read_text()
    )  # fmt: skip
    said = json.dumps(interactions)
    assert f"{TAG}: " in said and "travel agent" not in said and "TRAVEL-AGENT" not in said


def test_replay_gives_the_domain_s_texts_to_its_instances(
    clinic: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Replay needs no texts (the replies are recorded): without the domain they are stand-ins;
    with --domains, the domain's own."""
    instances, results = tmp_path / "clinic.json", tmp_path / "records"
    assert main(["instances", "--domains", str(clinic), "--per-domain", "1",
                 "--out", str(instances)]) == 0  # fmt: skip
    assert main(["run", "--domains", str(clinic), "--instances", str(instances),
                 "--model", "mock", "--results-dir", str(results)]) == 0  # fmt: skip
    capsys.readouterr()
    requests = {}
    for name, domains in (("stand-ins", []), ("texts", ["--domains", str(clinic)])):
        replayed = tmp_path / name
        assert main(["replay", str(results), "--instances", str(instances),
                     "--results-dir", str(replayed), *domains]) == 0  # fmt: skip
        assert "1 reproduce every reference score" in capsys.readouterr().out
        [path] = replayed.glob("*/privateshared/*/episode_0/requests.json")
        requests[name] = path.read_text()
    [(_, _, [played])] = playable_instances(read_instances(instances), known_domains([clinic]))
    first = played.requests[played.request_order[0]]
    assert f"{TAG}: {first}" in requests["texts"] and f"[{NAME} request #" not in requests["texts"]
    assert first not in requests["stand-ins"] and f"[{NAME} request #" in requests["stand-ins"]


def test_models_play_it_behind_an_endpoint(
    clinic: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model answerer, and a model questioner told of a receptionist and the slots, through
    the fake endpoint, whose perfect players know the domain's default instances."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-user-domains")
    results = tmp_path / "records"
    with FakeOpenAI(default_players(domains=[clinic])) as server:
        assert main(["run", "--domains", str(clinic), "--experiment", NAME, "--model",
                     "fake-model", "--questioner", "fake-model", "--base-url", server.base_url,
                     "--results-dir", str(results)]) == 0  # fmt: skip
        questioner_prompts = [
            request["body"]["messages"][0]["content"]
            for request in server.requests
            if request["body"]["messages"][0]["role"] == "system"
        ]
    pair = "fake-model-t0.0--fake-model-t0.0"
    assert main_scores(results, pair) == {f"0_{NAME}/episode_{k}": 100.0 for k in range(10)}
    assert questioner_prompts
    assert all(QUESTIONER in p and "travel agent" not in p for p in questioner_prompts)


async def test_python_finds_the_folder_and_plays_it(
    clinic: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    domains = known_domains([clinic])
    assert set(domains) == {*SHIPPED, NAME}
    assert domains[NAME].tag == TAG and domains[NAME].questioner == QUESTIONER
    file = generate_instances([domains[NAME]], per_domain=2)
    for _, _, instances in playable_instances(file, domains):
        for instance in instances:
            state = await play_episode(instance, GameContext(answerer="oracle"))
            assert state.instance is not None and state.instance.tag == TAG
            assert state.scores is not None
            assert state.scores.episode_scores["Main Score"] == 100.0

    # A run that names the experiment (Studio's input) finds it through PRIVATESHARED_DOMAINS,
    # drawn as `privateshared instances` draws it by default.
    with pytest.raises(InstancesError, match=f"no default instance '{NAME}'"):
        default_instance(NAME, 0)
    monkeypatch.setenv(DOMAINS_VARIABLE, str(clinic))
    default = generate_instances([domains[NAME]])
    [(_, _, drawn)] = playable_instances(default, domains)
    assert default_instance(NAME, 4) == drawn[4]
    handover = default_instance(f"{NAME}-handover", 1)
    assert handover.audience is not None and handover.tag == TAG


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", []),
        ("/a", ["/a"]),
        (f"/a{os.pathsep}b/c", ["/a", "b/c"]),
        (f"{os.pathsep}/a{os.pathsep}{os.pathsep}", ["/a"]),  # empty entries are no folder
        ("  ", []),  # blanks from a sloppy .env line
    ],
    ids=["unset", "one", "two", "empty-entries", "blank"],
)
def test_variable_folders(value: str, expected: list[str]) -> None:
    assert variable_folders({DOMAINS_VARIABLE: value}) == [Path(p) for p in expected]


def clash_line(capsys: pytest.CaptureFixture[str]) -> str:
    [line] = capsys.readouterr().err.splitlines()
    return line


def test_a_name_two_folders_define_is_one_line_naming_both(
    clinic: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    copy = tmp_path / "mine" / "restaurant"
    shutil.copytree(builtin_domains_dir() / "restaurant", copy)
    shipped = builtin_domains_dir() / "restaurant" / "domain.json"
    results = ["--results-dir", str(tmp_path / "records")]
    for argv in (["run", "--model", "oracle", *results], ["instances"],
                 ["play", "--as", "answerer", *results]):  # fmt: skip
        assert main([*argv, "--domains", str(copy.parent)]) == 2
        assert clash_line(capsys) == (
            f"privateshared: error: {copy / 'domain.json'} (--domains): name 'restaurant' is "
            f"taken by another domain ({shipped}, shipped); rename one, or leave one folder out"
        )
    assert not (tmp_path / "records").exists()

    # Two folders of the user's, one named in the environment: the same, naming both.
    other = make_clinic(tmp_path / "theirs")
    monkeypatch.setenv(DOMAINS_VARIABLE, str(other.parent))
    with pytest.raises(DomainError) as error:
        known_domains([clinic])
    assert str(error.value) == (
        f"{clinic / 'clinic_intake' / 'domain.json'} (--domains): name '{NAME}' is taken by "
        f"another domain ({other / 'domain.json'}, {DOMAINS_VARIABLE}); rename one, or leave "
        "one folder out"
    )
    # One folder named twice, or the shipped folder named again, is no clash.
    monkeypatch.setenv(DOMAINS_VARIABLE, str(clinic))
    assert set(known_domains([clinic, builtin_domains_dir()])) == {*SHIPPED, NAME}
    assert set(domains_under([builtin_domains_dir() / "restaurant"])) == {"restaurant"}

    # `domains check` alone checks the folder on its own; beside the known ones, it names both.
    assert main(["domains", "check", str(copy)]) == 0
    capsys.readouterr()
    assert main(["domains", "check", "--domains", str(copy)]) == 2
    out, err = capsys.readouterr()
    assert f"{NAME}: ok; slots" in out and f"{clinic / 'clinic_intake'} ({DOMAINS_VARIABLE})" in out
    assert err.splitlines()[0] == (
        f"privateshared: error: {copy / 'domain.json'} (--domains): name 'restaurant' is "
        f"taken by another domain ({shipped}, shipped); rename one, or leave one folder out"
    )


def test_play_offers_the_domain(clinic: Path, tmp_path: Path) -> None:
    """A person can sit down to it: the intro names the experiment, the questions its tag."""
    terminal = Terminal([str(BIN / "privateshared"), "play", "--as", "answerer", "--domains",
                         str(clinic), "--experiment", NAME, "--game-id", "2",
                         "--results-dir", str(tmp_path)])  # fmt: skip
    intro = terminal.expect(r"try, as it does for a model\.")
    assert f"({NAME}, game 2)" in intro and QUESTIONER in intro
    while (turn := terminal.expect(r"(aside|you)> ")).endswith("aside> "):
        terminal.send("ASIDE: no\n")  # the first probing round: nothing is shared yet
    assert f"{TAG}: " in turn  # the receptionist's first question
    terminal.send("\x03")
    assert terminal.finish() == 130


# --- An installed package --------------------------------------------------------------------


def install_clinic_package(tmp_path: Path) -> Path:
    """A temporary virtual environment with a package of one domain installed in it, which
    registers the domain through its entry point; the environment's Python.

    The environment sees this one's packages (privateshared and what it needs) through a .pth
    file, as one made with `pip install privateshared` would have them, and the package is
    installed into it by pip, offline, built by this environment's setuptools."""
    project = tmp_path / "clinic-domains"
    package = project / "clinic_domains"
    make_clinic(package)
    (package / "__init__.py").write_text('"""Domains of a clinic."""\n')
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "clinic-domains"\nversion = "0.1.0"\n\n'
        f'[project.entry-points."{ENTRY_POINT_GROUP}"]\nclinic = "clinic_domains"\n\n'
        '[tool.setuptools.packages.find]\ninclude = ["clinic_domains*"]\n\n'
        '[tool.setuptools.package-data]\n"*" = ["*.json", "*.txt"]\n'
    )
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site_packages = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    # A .pth line starting with `import` runs: addsitedir also reads our site's own .pth files
    # (the editable install of privateshared is one).
    ours = sysconfig.get_path("purelib")
    Path(site_packages, "with-privateshared.pth").write_text(
        f"import site; site.addsitedir({ours!r})\n"
    )
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
         "--no-deps", "--no-index", "--no-build-isolation", str(project)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    return python


def privateshared(python: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """The command line, run by the temporary environment's Python."""
    env = {name: value for name, value in os.environ.items() if name != DOMAINS_VARIABLE}
    command = "import sys; from privateshared.bench.cli import main; sys.exit(main())"
    return subprocess.run(
        [str(python), "-c", command, *argv], env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip


def test_an_installed_package_is_found_through_its_entry_point(tmp_path: Path) -> None:
    python = install_clinic_package(tmp_path)
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    installed = Path(purelib) / "clinic_domains" / "clinic_intake"

    listing = privateshared(python, "domains", "check")
    assert listing.returncode == 0, listing.stderr
    assert (
        f"{NAME}: ok; slots from (10 values), to (10 values), by (10 values), class (10 values), "
        f"when (10 values); {installed} (entry point clinic = 'clinic_domains' of "
        "clinic-domains)"
    ) in listing.stdout.splitlines()

    made = privateshared(python, "instances", "--per-domain", "1")
    assert made.returncode == 0, made.stderr
    assert [e["name"] for e in json.loads(made.stdout)["experiments"]] == [*SHIPPED, NAME]

    results = tmp_path / "records"
    run = privateshared(python, "run", "--experiment", NAME, "--model", "oracle",
                        "--results-dir", str(results))  # fmt: skip
    assert run.returncode == 0, run.stderr
    oracle = main_scores(results, "oracle-t0.0--oracle-t0.0")
    assert oracle == {f"0_{NAME}/episode_{k}": 100.0 for k in range(10)}

    # Installed once, named again with --domains: a clash naming the installed folder.
    again = make_clinic(tmp_path / "again")
    clash = privateshared(python, "run", "--domains", str(again.parent), "--model", "oracle",
                          "--results-dir", str(results))  # fmt: skip
    assert clash.returncode == 2
    assert clash.stderr == (
        f"privateshared: error: {again / 'domain.json'} (--domains): name '{NAME}' is taken by "
        f"another domain ({installed / 'domain.json'}, entry point clinic = 'clinic_domains' of "
        "clinic-domains); rename one, or leave one folder out\n"
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("clinic_domains", None),
        ("clinic_domains:DOMAINS", "names an attribute; name a package whose folder holds"),
        ("no_such_package", "no module 'no_such_package' is installed"),
        ("clinic_domains.clinic_intake", None),  # one domain folder: a package too
        ("json.decoder", "'json.decoder' is a module, not a package"),
    ],
    ids=["package", "attribute", "missing", "domain-folder", "module"],
)
def test_what_an_entry_point_may_name(
    value: str, expected: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry point names a package; its folder is a domain folder or holds some."""
    make_clinic(tmp_path / "clinic_domains")
    (tmp_path / "clinic_domains" / "__init__.py").write_text("")
    for module in ("clinic_domains", "clinic_domains.clinic_intake"):  # another test's copy
        monkeypatch.delitem(sys.modules, module, raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    point = EntryPoint(name="clinic", value=value, group=ENTRY_POINT_GROUP)
    monkeypatch.setattr(
        "privateshared.domains.registry.entry_points",
        lambda group: [point] if group == ENTRY_POINT_GROUP else [],
    )
    if expected is None:
        assert known_domains()[NAME].tag == TAG
        return
    with pytest.raises(DomainError) as error:
        known_domains()
    message = str(error.value)
    assert message.startswith(f"entry point clinic = {value!r} of an installed package: ")
    assert expected in message and "\n" not in message


# --- LangGraph Studio --------------------------------------------------------------------------


def test_studio_plays_it_by_name(
    clinic: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`langgraph dev` started with PRIVATESHARED_DOMAINS (set in the shell here; a `.env` that
    langgraph.json names sets it the same way) plays the domain's experiments by name."""
    monkeypatch.setenv(DOMAINS_VARIABLE, str(clinic))
    expected = default_instance(NAME, 3)  # the instance the server must play
    log_path = tmp_path / "langgraph-dev.log"
    with _langgraph_dev(log_path) as url:
        state = _play(url, log_path, {"experiment": NAME, "game_id": 3}, {"answerer": "oracle"})
        scores = _scores_part(state["scores"], "episode scores", "episode_scores")
        assert scores["Main Score"] == 100.0
        assert state["instance"]["tag"] == TAG and state["instance"]["slots"] == expected.slots
        first = expected.requests[expected.request_order[0]]
        assert state["dialogue"][1]["message"] == f"{TAG}: {first}"

        mock = _play(url, log_path, {"experiment": f"{NAME}-late-joiner", "game_id": 0},
                     {"answerer": "mock"})  # fmt: skip
        assert mock["instance"]["experiment"] == f"{NAME}-late-joiner"
        assert mock["scores"] is not None

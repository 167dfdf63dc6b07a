"""Domain folders: the shipped ones, and one clear line for every way a folder can be wrong."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from privateshared.bench.cli import main
from privateshared.bench.running.episodes import play_episode
from privateshared.domains.instances import generate_instances, playable_instances
from privateshared.domains.loader import (
    DomainError,
    builtin_domains_dir,
    load_domain,
    load_domains,
)
from privateshared.graph.context import GameContext

TRAVEL = builtin_domains_dir() / "travel_booking"


def test_shipped_domains_have_the_required_texts() -> None:
    domains = load_domains()
    assert set(domains) == {
        "travel-booking", "job-interview", "restaurant", "letter-number", "things-places",
    }  # fmt: skip
    assert list(domains["travel-booking"].slots) == ["from", "to", "by", "class", "when"]
    assert list(domains["job-interview"].slots) == [
        "bachelor", "industry experience", "highest education", "other skills", "availability",
    ]  # fmt: skip
    assert domains["travel-booking"].tag == "TRAVEL-AGENT"
    assert domains["job-interview"].tag == "RECRUITER"
    for domain in domains.values():
        for slot, spec in domain.slots.items():
            assert len(spec.values) >= 8, slot
            assert len(set(spec.requests)) >= 5, slot
            assert len(set(spec.probes)) >= 5, slot


def test_rendered_prompt_lists_every_value_and_the_protocol() -> None:
    domain = load_domains()["travel-booking"]
    values = {slot: spec.values[0] for slot, spec in domain.slots.items()}
    prompt = domain.render_initial_prompt(values)
    for slot, value in values.items():
        assert f"{slot.upper()}: {value}" in prompt
    for label in ("TRAVEL-AGENT", "ANSWER:", "ASIDE:", "ME:"):
        assert label in prompt
    assert "{" not in prompt


def broken_copy(tmp_path: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    """A copy of the travel domain with `change` applied to its domain.json."""
    folder = tmp_path / "broken"
    shutil.copytree(TRAVEL, folder)
    data = json.loads((folder / "domain.json").read_text())
    change(data)
    (folder / "domain.json").write_text(json.dumps(data))
    return folder


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d.update(colour="blue"), "unknown key 'colour' at colour; remove it"),
        (lambda d: d["slots"]["from"].update(vals=[]), "unknown key 'vals' at slots.from.vals"),
        (lambda d: d["slots"]["when"].update(probes=[]), 'slot "when" has no probes; add at least'),
        (lambda d: d["slots"]["by"].update(values=[]), 'slot "by" has no values; add at least one'),
        (lambda d: d["slots"]["to"].pop("requests"), "missing key 'slots.to.requests'; add it"),
        (lambda d: d["slots"]["to"]["values"].append("Lisbon"),  # the same city in from and to
         "contains 'Lisbon'"),
        (lambda d: d["slots"]["class"]["values"].append("Night train express"),
         "value 'Night train express' contains 'Night train'"),
        (lambda d: d["slots"]["class"]["values"].append("SWER"), "occurs in the tag 'ANSWER:'"),
        (lambda d: d.update(tag="travel agent"), "tag: String should match pattern"),
    ],
    ids=["unknown-key", "unknown-slot-key", "no-probes", "no-values", "no-requests",
         "duplicate-across-slots", "containment", "inside-answer-tag", "bad-tag"],
)  # fmt: skip
def test_invalid_domain_gives_one_line_naming_file_and_fix(
    tmp_path: Path, change: Callable[[dict[str, Any]], None], expected: str
) -> None:
    folder = broken_copy(tmp_path, change)
    with pytest.raises(DomainError) as error:
        load_domain(folder)
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(str(folder / "domain.json"))
    assert expected in message


def test_containment_check_ignores_case(tmp_path: Path) -> None:
    folder = broken_copy(tmp_path, lambda d: d["slots"]["to"]["values"].append("LISBON Oriente"))
    with pytest.raises(DomainError, match="contains 'Lisbon'"):
        load_domain(folder)


def test_prompt_without_protocol_label_names_the_prompt_file(tmp_path: Path) -> None:
    folder = broken_copy(tmp_path, lambda d: None)
    prompt = folder / "initial_prompt.txt"
    prompt.write_text(prompt.read_text().replace("ASIDE:", "SIDE NOTE:"))
    with pytest.raises(DomainError) as error:
        load_domain(folder)
    assert str(error.value).startswith(str(prompt))
    assert "lacks 'ASIDE:'" in str(error.value)


def test_bad_json_names_line_and_column(tmp_path: Path) -> None:
    folder = broken_copy(tmp_path, lambda d: None)
    (folder / "domain.json").write_text('{"name": "x",\n  oops}')
    with pytest.raises(DomainError, match=r"invalid JSON at line 2 column 3"):
        load_domain(folder)


def test_domains_check_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["domains", "check", str(builtin_domains_dir())]) == 0
    out = capsys.readouterr().out
    assert "travel-booking: ok" in out and "job-interview: ok" in out

    folder = broken_copy(tmp_path, lambda d: d["slots"]["when"].update(probes=[]))
    assert main(["domains", "check", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert 'slot "when" has no probes; add at least one' in err

    assert main(["domains", "check", str(tmp_path / "missing")]) == 2
    assert "not a folder" in capsys.readouterr().err


async def test_a_new_domain_is_only_a_folder(tmp_path: Path) -> None:
    """A new domain needs nothing outside its folder: copy, rename, and it loads and plays."""
    root = tmp_path / "domains"
    folder = broken_copy(root, lambda d: d.update(name="ferry-booking", tag="FERRY-AGENT"))
    assert folder.parent == root
    domains = load_domains(root)
    assert set(domains) == {"ferry-booking"}
    file = generate_instances(list(domains.values()), seed=1, per_domain=2)
    [(_, _, instances)] = playable_instances(file, domains)
    state = await play_episode(instances[1], GameContext(answerer="oracle"))
    assert state.instance is not None and state.instance.tag == "FERRY-AGENT"
    assert state.scores is not None and state.scores.episode_scores["Main Score"] == 100.0


def test_second_listener_needs_probes_that_name_the_questioner(tmp_path: Path) -> None:
    """A probe is turned to the second listener by its `the <questioner>`: one without it
    cannot be, and says which probe and how to fix it."""
    folder = broken_copy(
        tmp_path, lambda d: d["slots"]["to"]["probes"].append("Is your destination known yet?")
    )
    with pytest.raises(DomainError) as error:
        load_domain(folder)
    message = str(error.value)
    assert "\n" not in message and message.startswith(str(folder / "domain.json"))
    assert "lacks 'the travel agent'" in message and "remove second_listener" in message
    colleague = load_domain(TRAVEL).second_listener_probe("Does the travel agent know it?")
    assert colleague == "Does the colleague know it?"

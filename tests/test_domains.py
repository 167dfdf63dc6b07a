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
    check_domain,
    load_domain,
    load_domains,
    prompt_problems,
    value_problems,
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
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2  # the problem, then the summary
    assert 'slot "when" has no probes; add at least one' in err[0]
    assert err[1].endswith("1 of 1 domain has problems (1 in all); fix them and check again")

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


def break_prompt(folder: Path, *labels: str) -> Path:
    """Drop each of `labels` from the folder's initial prompt; the prompt file's path."""
    prompt = folder / "initial_prompt.txt"
    text = prompt.read_text()
    for label in labels:
        assert label in text  # else the test would pass without breaking anything
        text = text.replace(label, "")
    prompt.write_text(text)
    return prompt


def three_problems(data: dict[str, Any]) -> None:
    """A slot with no probes (pydantic's error) and a value overlap (the game's own check)."""
    data["slots"]["when"]["probes"] = []
    data["slots"]["to"]["values"].append("Lisbon")


def test_domains_check_reports_every_problem_of_every_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = broken_copy(tmp_path, three_problems)
    prompt = break_prompt(folder, "{tag}", "{slots}")
    shutil.copytree(builtin_domains_dir() / "restaurant", tmp_path / "restaurant")

    assert main(["domains", "check", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert out.startswith("restaurant: ok; slots starter (10 values)")
    assert "travel-booking" not in out
    domain_file = folder / "domain.json"
    assert err.splitlines() == [
        f'privateshared: error: {domain_file}: slot "when" has no probes; add at least one',
        f"privateshared: error: {prompt}: initial prompt lacks '{{tag}}'; "
        "the answerer must be told it",
        f"privateshared: error: {prompt}: initial prompt lacks '{{slots}}'; "
        "the answerer must be told it",
        f"privateshared: error: {domain_file}: slot \"to\": value 'Lisbon' contains 'Lisbon' "
        '(slot "from"); slot filling checks containment, so rename one of them',
        "privateshared: error: 1 of 2 domains has problems (4 in all); fix them and check again",
    ]


def test_domains_check_names_both_folders_of_a_duplicate_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for copy in ("first", "second"):
        shutil.copytree(builtin_domains_dir() / "restaurant", tmp_path / copy)
    assert main(["domains", "check", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert out.count("restaurant: ok") == 1
    [problem, summary] = err.splitlines()
    assert problem == (
        f"privateshared: error: {tmp_path / 'second' / 'domain.json'}: name 'restaurant' is "
        f"taken by another domain ({tmp_path / 'first' / 'domain.json'}); rename one"
    )
    assert "1 of 2 domains has problems (1 in all)" in summary


def test_a_run_still_stops_at_the_first_problem_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Loading domains to play stops with one line: the first problem, and where to see all."""
    root = tmp_path / "domains"
    folder = broken_copy(root, three_problems)
    break_prompt(folder, "{tag}", "{slots}")
    with pytest.raises(DomainError) as error:
        load_domains(root)
    assert str(error.value) == (
        f'{folder / "domain.json"}: slot "when" has no probes; add at least one '
        f"(and 3 more; run `privateshared domains check {root}` to see all)"
    )
    with pytest.raises(DomainError, match=r"^[^\n]*\(and 3 more; run .*domains check .*broken`"):
        load_domain(folder)

    assert main(["instances", "--domains", str(root)]) == 2
    assert capsys.readouterr().err == f"privateshared: error: {error.value}\n"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: None, []),
        (lambda d: d.update(colour="blue", tag="travel agent"),  # every pydantic error, not one
         ["tag: String should match pattern", "unknown key 'colour'"]),  # in pydantic's order
        (lambda d: d["slots"]["to"]["values"].extend(["Lisbon", "Vienna"]),
         ["value 'Lisbon' contains 'Lisbon'", "value 'Vienna' contains 'Vienna'"]),
        (lambda d: (d["slots"]["by"].update(values=3),  # shaped wrong: pydantic's line only,
                    d["slots"]["to"]["values"].append("Dublin")),  # the rest still checked
         ["by.values: Input should be a valid tuple", "value 'Dublin' contains 'Dublin'"]),
        (lambda d: [d["slots"][slot]["probes"].append("Do you know?") for slot in ("to", "by")],
         ['slot "to": probe \'Do you know?\' lacks', 'slot "by": probe \'Do you know?\' lacks']),
        (lambda d: d["second_listener"].update(tag="TRAVEL-AGENT"),
         ["second_listener.tag 'TRAVEL-AGENT' is the questioner's tag; choose another"]),
        (lambda d: d.update(initial_prompt="Hi"),  # the template belongs in its own file
         ["unknown key 'initial_prompt'; put the template in initial_prompt.txt instead"]),
    ],
    ids=["good", "two-schema-errors", "two-overlaps", "wrong-shape-and-overlap",
         "two-probes-without-questioner", "listener-tag", "prompt-in-json"],
)  # fmt: skip
def test_check_domain_lists_every_problem(
    tmp_path: Path, change: Callable[[dict[str, Any]], None], expected: list[str]
) -> None:
    folder = broken_copy(tmp_path, change)
    check = check_domain(folder)
    assert len(check.problems) == len(expected), check.problems
    for problem, fragment in zip(check.problems, expected, strict=True):
        assert problem.startswith(f"{folder / 'domain.json'}: ")
        assert fragment in problem
    assert (check.domain is None) == bool(expected)
    assert check.name == "travel-booking"


@pytest.mark.parametrize(
    ("domain_json", "expected"),
    [
        (None, "domain.json: file not found; a domain folder needs domain.json"),
        ('{"name": "x",\n  oops}', "domain.json: invalid JSON at line 2 column 3"),
        ("[]", "domain.json: not a JSON object; write the domain as one"),
        (b"\xff\xfe", "domain.json: not UTF-8 text; save it as UTF-8"),
    ],
    ids=["missing", "bad-json", "not-an-object", "not-utf8"],
)
def test_an_unreadable_domain_file_is_the_folders_only_problem(
    tmp_path: Path, domain_json: str | bytes | None, expected: str
) -> None:
    # The prompt file is missing too, but nothing more is said until domain.json can be read.
    if isinstance(domain_json, bytes):
        tmp_path.joinpath("domain.json").write_bytes(domain_json)
    elif domain_json is not None:
        tmp_path.joinpath("domain.json").write_text(domain_json)
    check = check_domain(tmp_path)
    assert len(check.problems) == 1 and check.domain is None
    assert check.problems[0].startswith(str(tmp_path / expected))


def test_missing_prompt_file_is_reported_beside_the_rest(tmp_path: Path) -> None:
    folder = broken_copy(tmp_path, lambda d: d["slots"]["when"].update(probes=[]))
    (folder / "initial_prompt.txt").unlink()
    assert check_domain(folder).problems == (
        f"{folder / 'initial_prompt.txt'}: file not found; add the answerer's initial prompt",
        f'{folder / "domain.json"}: slot "when" has no probes; add at least one',
    )  # and no "missing key 'initial_prompt'": the key is not for domain.json


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("{tag} {slots} ANSWER: ASIDE: ME:", []),
        ("ANSWER: ASIDE: ME:", ["'{tag}'", "'{slots}'"]),  # each missing one on its own line
        ("", ["'{tag}'", "'{slots}'", "'ANSWER:'", "'ASIDE:'", "'ME:'"]),  # empty lacks all
    ],
    ids=["complete", "two-placeholders", "empty"],
)
def test_prompt_problems(prompt: str, expected: list[str]) -> None:
    assert prompt_problems(prompt) == [
        f"initial prompt lacks {label}; the answerer must be told it" for label in expected
    ]


def contains(slot: str, value: str, inner_slot: str, inner: str) -> str:
    return (
        f'slot "{slot}": value {value!r} contains {inner!r} (slot "{inner_slot}"); '
        "slot filling checks containment, so rename one of them"
    )


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([("from", "Lisbon"), ("to", "Oslo")], []),
        # the same value in two slots: one pair, said once
        ([("from", "Lisbon"), ("to", "Lisbon")], [contains("to", "Lisbon", "from", "Lisbon")]),
        # the longer value is named as the container whichever comes first
        ([("by", "Night train express"), ("class", "Night train")],
         [contains("by", "Night train express", "class", "Night train")]),
        ([("to", "LISBON Oriente"), ("from", "Lisbon")],  # slot filling ignores case
         [contains("to", "LISBON Oriente", "from", "Lisbon")]),
        ([("to", "Rome"), ("to", "Rome Termini"), ("from", "Rome Termini East")],
         [contains("to", "Rome Termini", "to", "Rome"),
          contains("from", "Rome Termini East", "to", "Rome"),
          contains("from", "Rome Termini East", "to", "Rome Termini")]),
        ([("to", "Oslo"), ("to", "OSLO")],
         ['slot "to": value \'Oslo\' is listed twice; remove one']),
        # blank is inside every value; it is named once, not once per value
        ([("to", ""), ("from", "Oslo")], ['slot "to": value \'\' is blank; remove it']),
        ([("to", " Oslo")], ['slot "to": value \' Oslo\' has surrounding spaces; trim it']),
        ([("by", "SWER")],
         ["slot \"by\": value 'SWER' occurs in the tag 'ANSWER:', so every answer would contain "
          "it; choose another value"]),
    ],
    ids=["distinct", "same-value", "containment-either-order", "case", "three-overlaps",
         "listed-twice", "blank", "padded", "inside-answer-tag"],
)  # fmt: skip
def test_value_problems(values: list[tuple[str, str]], expected: list[str]) -> None:
    assert value_problems(values) == expected

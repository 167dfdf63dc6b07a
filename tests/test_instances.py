"""Instances: the seeded generator, the committed default file, and clembench's files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from privateshared.bench.cli import main
from privateshared.domains.clembench_texts import ResourcesError
from privateshared.domains.instance_defaults import DEFAULT_SEED
from privateshared.domains.instances import (
    CLEMBENCH_ORDER,
    InstancesError,
    default_instance,
    default_instances_path,
    experiment_order,
    generate_instances,
    playable_instances,
    read_instances,
    two_listener_instances_path,
)
from privateshared.domains.loader import load_domains
from tests.conftest import SHARED_RECORDS

needs_records = pytest.mark.skipif(
    not SHARED_RECORDS.is_dir(), reason="../shared/clembench-records is not on this machine"
)


def test_default_file_is_reproduced_byte_for_byte(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    committed = default_instances_path().read_bytes()
    assert main(["instances", "--seed", str(DEFAULT_SEED)]) == 0
    assert capsys.readouterr().out.encode() == committed
    out = tmp_path / "instances.json"
    assert main(["instances", "--seed", str(DEFAULT_SEED), "--out", str(out)]) == 0
    assert out.read_bytes() == committed


def test_another_seed_gives_other_instances(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["instances", "--seed", str(DEFAULT_SEED + 1)]) == 0
    assert capsys.readouterr().out.encode() != default_instances_path().read_bytes()


def test_default_instances_are_random_in_every_respect() -> None:
    domains = load_domains()
    file = read_instances(default_instances_path())
    assert [experiment.name for experiment in file.experiments] == list(CLEMBENCH_ORDER)
    assert sorted(CLEMBENCH_ORDER) == sorted(domains)
    for experiment in file.experiments:
        domain = domains[experiment.name]
        specs = experiment.game_instances
        assert [spec.game_id for spec in specs] == list(range(10))
        slots = list(domain.slots)
        for spec in specs:
            assert all(spec.slots[slot] in domain.slots[slot].values for slot in slots)
            assert spec.tag == domain.tag
            assert spec.initial_prompt == domain.render_initial_prompt(spec.slots)
        # Across ten instances, every random choice takes more than one value.
        assert len({tuple(spec.slots.values()) for spec in specs}) == 10
        assert len({spec.request_order for spec in specs}) > 1
        assert len({tuple(spec.requests.values()) for spec in specs}) > 1
        orders = {tuple(round_probes) for spec in specs for round_probes in spec.probes.values()}
        assert len(orders) > 10  # probing orders differ between rounds, not only slot order
        phrasings = {tuple(r.values()) for spec in specs for r in spec.probes.values()}
        assert len(phrasings) > 10


def test_generation_is_deterministic_per_domain() -> None:
    domains = list(load_domains().values())
    both = generate_instances(domains, seed=5)
    alone = generate_instances(domains[1:], seed=5)
    # Adding a domain does not change the instances of the others.
    by_name = {experiment.name: experiment for experiment in both.experiments}
    assert all(by_name[experiment.name] == experiment for experiment in alone.experiments)
    assert len(alone.experiments) == len(both.experiments) - 1
    assert generate_instances(domains, seed=5) == both


def test_default_instance_resolves_texts() -> None:
    instance = default_instance("travel-booking", 3)
    travel = load_domains()["travel-booking"]
    for slot, text in instance.requests.items():
        assert text in travel.slots[slot].requests
    assert len(instance.probes) == 6
    with pytest.raises(InstancesError, match="no default instance 'cooking'"):
        default_instance("cooking", 0)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "file not found"),
        ("{not json", "not valid JSON"),
        ('{"experiments": []}', "experiments: Tuple should have at least 1 item"),
        ('{"experiments": [{"name": "x"}]}', "experiments.0.game_instances: Field required"),
    ],
    ids=["missing", "not-json", "empty", "no-instances"],
)
def test_invalid_instances_file_gives_one_line(
    tmp_path: Path, content: str | None, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "instances.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(InstancesError, match=expected):
        read_instances(path)
    assert main(["run", "--instances", str(path), "--results-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected in err and str(path) in err
    assert not (tmp_path / "r").exists()  # nothing was played or written


def test_instance_whose_slots_disagree_is_rejected(tmp_path: Path) -> None:
    data = json.loads(default_instances_path().read_text())
    data["experiments"][0]["game_instances"][4]["request_order"].pop()
    path = tmp_path / "instances.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InstancesError, match="request_order must list every slot exactly once"):
        read_instances(path)


@needs_records
def test_clembench_file_needs_its_texts(tmp_path: Path) -> None:
    file = read_instances(SHARED_RECORDS / "instances.json")
    assert [e.name for e in file.experiments][:3] == [
        "travel-booking",
        "job-interview",
        "restaurant",
    ]
    with pytest.raises(InstancesError, match="pass --resources"):
        playable_instances(file, load_domains())
    # With a resources folder in clembench's layout, the indices resolve into its texts.
    for experiment in file.experiments:
        spec = experiment.game_instances[0]
        folder = tmp_path / experiment.name
        folder.mkdir()
        texts = {slot: [f"{slot} text {i}" for i in range(10)] for slot in spec.slots}
        (folder / "requests.json").write_text(json.dumps(texts))
        (folder / "probing_questions.json").write_text(json.dumps(texts))
    with pytest.raises(ResourcesError, match=r"reprompts\.json: cannot read it"):
        playable_instances(file, load_domains(), resources=tmp_path)
    (tmp_path / "reprompts.json").write_text(json.dumps({"suffixes": ["", "Again."]}))
    playable = playable_instances(file, load_domains(), resources=tmp_path)
    first = playable[0][2][0]
    index = file.experiments[0].game_instances[0].requests["from"]
    assert first.requests["from"] == f"from text {index}"
    # Probes are worded as clembench words them, one try per suffix.
    assert first.probe_wording.tries == (
        "ME:  {question} Answer this question with yes or no and then stop.",
        "ME: Again. {question} Answer this question with yes or no and then stop.",
    )


def test_two_listener_file_is_reproduced_byte_for_byte(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    committed = two_listener_instances_path().read_bytes()
    assert main(["instances", "--two-listeners", "--seed", str(DEFAULT_SEED)]) == 0
    assert capsys.readouterr().out.encode() == committed
    experiments = [e.name for e in read_instances(two_listener_instances_path()).experiments]
    assert experiments == ["travel-booking-late-joiner", "travel-booking-handover",
                           "job-interview-late-joiner", "job-interview-handover"]  # fmt: skip
    for experiment in read_instances(two_listener_instances_path()).experiments:
        changes = [spec.audience for spec in experiment.game_instances]
        assert len(changes) == 10 and all(change is not None for change in changes)
        # The change comes at seeded turns, 1 to n - 2, not always the same one.
        assert len({change.after_turn for change in changes if change}) > 1


@needs_records
def test_experiments_line_up_with_clembench_s_by_index_and_name(tmp_path: Path) -> None:
    """Our default file lists clembench's experiments in the order of clembench's own instances
    file, so a run's folders (`<index>_<experiment>`) are the ones published clembench runs
    have: merged into one results folder, the same index holds the same experiment."""
    clembench = read_instances(SHARED_RECORDS / "instances.json")
    ours = read_instances(default_instances_path())
    assert [e.name for e in ours.experiments] == [e.name for e in clembench.experiments]
    assert main(["run", "--model", "oracle", "--results-dir", str(tmp_path)]) == 0
    played = {path.name for path in tmp_path.glob("*/privateshared/*_*") if path.is_dir()}
    published = {path.name for path in SHARED_RECORDS.glob("*/privateshared/*_*") if path.is_dir()}
    assert published and published <= played


def test_other_domains_follow_clembench_s_experiments_by_name() -> None:
    shipped = load_domains()
    extra = shipped["restaurant"].model_copy(update={"name": "bakery"})
    another = shipped["restaurant"].model_copy(update={"name": "aquarium"})
    names = [d.name for d in experiment_order([extra, *shipped.values(), another])]
    assert names == [*CLEMBENCH_ORDER, "aquarium", "bakery"]

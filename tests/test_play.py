"""`privateshared play` driven through a pseudo-terminal, as a person would: both seats, a reply
that breaks the format, and Ctrl-C."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from privateshared.bench.cli import main
from privateshared.bench.testing.fake_endpoint import FakeOpenAI
from privateshared.bench.testing.fake_players import default_players
from privateshared.domains.instances import default_instance

PRIVATESHARED = Path(sys.executable).parent / "privateshared"
INSTANCE = default_instance("travel-booking", 0)
pytestmark = pytest.mark.skipif(not PRIVATESHARED.exists(), reason="console script not installed")


class Terminal:
    """A command on a pseudo-terminal of its own: its controlling terminal, so that Ctrl-C typed
    on it interrupts the command as in a shell."""

    def __init__(self, argv: list[str]) -> None:
        self.leader, follower = pty.openpty()

        def take_terminal() -> None:
            os.setsid()
            fcntl.ioctl(follower, termios.TIOCSCTTY, 0)
            signal.signal(signal.SIGINT, signal.SIG_DFL)

        self.process = subprocess.Popen(
            argv, stdin=follower, stdout=follower, stderr=follower, preexec_fn=take_terminal
        )
        os.close(follower)
        self.output = ""
        self.seen = 0

    def expect(self, pattern: str, timeout: float = 60) -> str:
        """Read until `pattern` (a regex) shows after what was read before; return the text up
        to its end."""
        deadline = time.monotonic() + timeout
        while True:
            match = re.search(pattern, self.output[self.seen :])
            if match:
                text = self.output[self.seen : self.seen + match.end()]
                self.seen += match.end()
                return text
            left = deadline - time.monotonic()
            assert left > 0, f"no {pattern!r} in:\n{self.output[-2000:]}"
            ready, _, _ = select.select([self.leader], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.leader, 65536)
                except OSError:  # the command ended and closed the terminal
                    chunk = b""
                if not chunk:
                    assert re.search(pattern, self.output[self.seen :]), self.output[-2000:]
                self.output += chunk.decode(errors="replace").replace("\r\n", "\n")

    def send(self, text: str) -> None:
        os.write(self.leader, text.encode())

    def finish(self, timeout: float = 60) -> int:
        """Read to the end; the command's exit code."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.leader], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(self.leader, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                self.output += chunk.decode(errors="replace").replace("\r\n", "\n")
            elif self.process.poll() is not None:
                break
        # Wait before closing our end: closing it hangs up the terminal, which would kill with
        # SIGHUP a command still on its way out (a loaded machine, say), not yet exited.
        code = self.process.wait(timeout=30)
        os.close(self.leader)
        return code


def play(tmp_path: Path, *arguments: str) -> Terminal:
    return Terminal([str(PRIVATESHARED), "play", "--experiment", "travel-booking",
                     "--game-id", "0", "--results-dir", str(tmp_path), *arguments])  # fmt: skip


def slot_asked(text: str) -> str:
    return next(slot for slot, request in INSTANCE.requests.items() if request in text)


def slot_probed(text: str, round_index: int) -> str:
    probes = INSTANCE.probes[round_index].items()
    return next(slot for slot, question in probes if question in text)


def test_answerer_seat_whole_episode_with_a_broken_reply(tmp_path: Path) -> None:
    terminal = play(tmp_path, "--as", "answerer", "--name", "ada")
    intro = terminal.expect(r"try, as it does for a model\.")
    assert "FROM: Edinburgh" in intro and "Your private values" in intro
    asked: list[str] = []
    broken = False
    while True:
        turn = terminal.expect(r"(aside|you)> |Played\.|Aborted")
        if "Played." in turn or "Aborted" in turn:
            break
        if turn.endswith("aside> "):
            slot = slot_probed(turn, len(asked))
            if not broken:  # the first side question gets no tag: a failed try
                broken = True
                terminal.send("yes\n")
                assert "That breaks the format (it must start with ASIDE:)" in terminal.expect(
                    r"failed try\."
                )
                continue
            terminal.send(f"ASIDE: {'yes' if slot in asked else 'no'}\n")
        else:
            asked.append(slot_asked(turn))
            terminal.send(f"ANSWER: {INSTANCE.slots[asked[-1]]}.\n")
    assert terminal.finish() == 0
    folder = tmp_path / "ada-t0.0--ada-t0.0" / "privateshared" / "0_travel-booking" / "episode_0"
    scores = json.loads((folder / "scores.json").read_text())["episode scores"]
    # Every probe right in the end, every value given: 100; 5 answers, 30 probes, 1 re-prompt.
    assert scores["Main Score"] == 100
    assert scores["Request Count"] == 36 and scores["Violated Request Count"] == 1
    interactions = json.loads((folder / "interactions.json").read_text())
    assert interactions["players"]["Player 1"] == "Answerer: ada"
    tries = [e["action"] for turn in interactions["turns"] for e in turn
             if e["action"]["type"] == "probe question"]  # fmt: skip
    assert tries[1]["content"].startswith("ME: Your last reply did not follow the format.")
    assert "ada-t0.0--ada-t0.0" in (tmp_path / "results.md").read_text()


def test_questioner_seat_whole_episode_with_a_move_that_is_none(tmp_path: Path) -> None:
    terminal = play(tmp_path, "--as", "questioner")
    terminal.expect(r"once every slot is recorded\.")
    slots = list(INSTANCE.slots)
    terminal.expect(r"move> ")
    terminal.send(f"ask {slots[0]}: Where does your trip start?\n")
    for index, slot in enumerate(slots):
        terminal.expect(r"move> ")
        if index == 0:
            terminal.send("please tell me everything\n")  # not a move: a failed call
            terminal.expect(r"move> ")
        terminal.send(f"record {slot}: {INSTANCE.slots[slot]}\n")
        terminal.expect(r"move> ")
        following = slots[index + 1] if index + 1 < len(slots) else None
        terminal.send(f"ask {following}: And your {following}?\n" if following else "finish\n")
    terminal.expect(r"Played\. Main Score 100\.00")
    assert "That breaks the format (not a move: 'please tell me everything')" in terminal.output
    assert terminal.finish() == 0
    folder = tmp_path / "oracle-t0.0--human-t0.0" / "privateshared" / "0_travel-booking"
    scores = json.loads((folder / "episode_0" / "scores.json").read_text())["episode scores"]
    # 5 asks, 5 records and a finish are valid; the stray line is the one invalid call of 12.
    assert scores["Questioner Call Validity"] == pytest.approx(11 / 12)
    # Every slot recorded true and no rule of the game broken (a stray line is invalid, not a
    # policy violation): the task is complete.
    assert scores["Questioner Task Completion"] == 1
    assert json.loads((folder / "experiment.json").read_text())["questioner"] == "human"


def test_ctrl_c_leaves_no_records_and_the_next_play_starts_anew(tmp_path: Path) -> None:
    terminal = play(tmp_path, "--as", "answerer")
    terminal.expect(r"aside> ")
    terminal.send("ASIDE: no\n")
    terminal.expect(r"aside> ")
    terminal.send("\x03")  # Ctrl-C, typed on the terminal
    terminal.expect(r"this episode was not saved")
    assert terminal.finish() == 130
    assert not list(tmp_path.rglob("*.json"))
    again = play(tmp_path, "--as", "answerer")
    first = again.expect(r"aside> ")
    assert "You are the answerer" in first and "try 2" not in first
    again.send("\x03")
    assert again.finish() == 130
    assert not list(tmp_path.rglob("*.json"))


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--as", "answerer", "--experiment", "nope"], "no instance nope; experiments: "),
        (["--as", "questioner", "--model", "human"], "one seat is yours"),
        (["--as", "answerer", "--game-id", "42"], "#42; experiments:"),
        (["--as", "answerer", "--questioner", "smollm2"], "play does not start local models"),
    ],
)
def test_bad_choices_get_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], arguments: list[str], message: str
) -> None:
    assert main(["play", *arguments, "--results-dir", str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and message in error
    assert not list(tmp_path.iterdir())


def test_a_model_answers_a_person_who_asks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The partner may be a model behind an endpoint: here the fake one, answering perfectly."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-play")
    with FakeOpenAI(default_players()) as server:
        terminal = play(tmp_path, "--as", "questioner", "--model", "fake-model",
                        "--base-url", server.base_url)  # fmt: skip
        slots = list(INSTANCE.slots)
        terminal.expect(r"move> ")
        # The fake model knows the slot a question is about when the question names it.
        terminal.send(f"ask {slots[0]}: Could you tell me about your {slots[0]}?\n")
        for index, slot in enumerate(slots):
            answer = terminal.expect(r"move> ")
            assert f"Answer: {INSTANCE.slots[slot]}." in answer  # what the model answered
            terminal.send(f"record {slot}: {INSTANCE.slots[slot]}\n")
            terminal.expect(r"move> ")
            following = slots[index + 1] if index + 1 < len(slots) else None
            question = f"ask {following}: Could you tell me about your {following}?\n"
            terminal.send(question if following else "finish\n")
        terminal.expect(r"Played\. Main Score 100\.00")
        assert terminal.finish() == 0
    folder = tmp_path / "fake-model-t0.0--human-t0.0" / "privateshared" / "0_travel-booking"
    assert (folder / "episode_0" / "scores.json").is_file()

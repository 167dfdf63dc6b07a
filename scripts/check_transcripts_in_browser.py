"""Open a transcript and the index in headless Chromium and check that they render the dialogue.

Not a pytest test: it needs a browser (Debian: `apt-get install -y chromium`). It loads the pages
from disk (file://, no server), dumps the DOM Chromium built and checks it holds the episode's
first question and answer, every probing round, and a link to every episode; and that the
accuracy plot parses as SVG with every line and interval band it draws. It also saves a
screenshot of the transcript, and of the plot, to look at.

    python scripts/check_transcripts_in_browser.py                 # plays oracle and mock first
    python scripts/check_transcripts_in_browser.py records/ --episode records/<pair>/...
    python scripts/check_transcripts_in_browser.py records/ --screenshot /tmp/transcript.png

Exits 0 when every check passes, 1 when one fails, 2 when Chromium or the records are missing.
"""

from __future__ import annotations

import argparse
import contextlib
import html
import io
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

from privateshared.bench.cli import main as cli_main
from privateshared.bench.reporting.record_files import read_interactions
from privateshared.bench.reporting.transcripts.index import (
    INDEX_FILE,
    TRANSCRIPT_FILE,
    write_transcripts,
)
from privateshared.graph.records import ANSWERER, GAME_NAME, QUESTIONER, Interactions

PLOT_FILE = "accuracy_by_round.svg"
BROWSERS = ("chromium", "chromium-browser", "google-chrome")
INSTALL_HINT = "install it with: apt-get install -y chromium"
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
)  # fmt: skip
TIMEOUT = 90
Check = tuple[bool, str]


def find_browser() -> str | None:
    """The path of a Chromium executable, or None."""
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)


def run_browser(browser: str, page: Path, *options: str) -> str:
    """Open `page` in a fresh headless profile; return what the browser printed."""
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        command = [browser, *FLAGS, f"--user-data-dir={profile}", *options, page.as_uri()]
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT, check=True)
    return done.stdout


def play_fresh_run(folder: Path) -> Path:
    """Play the default run (oracle and mock) into `folder` through the command line."""
    print(f"playing oracle and mock into {folder} ...")
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli_main(
            ["run", "--model", "oracle", "--model", "mock", "--results-dir", str(folder)]
        )
    if code != 0:
        raise SystemExit(f"the run failed (exit {code})")
    return folder


def has_early_value(interactions: Interactions) -> bool:
    """Whether an answer gave a value before it was asked (the liveliest page to look at)."""
    return any(
        "shared_early" in (event.action.model_extra or {})
        for turn in interactions.turns
        for event in turn
    )


def pick_episode(results: Path) -> Path:
    """A played episode with an early value if there is one, else the first episode."""
    folders = sorted(
        path.parent for path in results.glob(f"*/{GAME_NAME}/*/episode_*/{TRANSCRIPT_FILE}")
    )
    if not folders:
        raise SystemExit(f"{results}: no {TRANSCRIPT_FILE} found; is it a results folder?")
    for folder in folders:
        if (folder / "scores.json").exists() and has_early_value(
            read_interactions(folder / "interactions.json")
        ):
            return folder
    return folders[0]


def first_text(interactions: Interactions, sender: str) -> str | None:
    """The first message `sender` sent to the game master in the dialogue."""
    for turn in interactions.turns:
        for event in turn:
            if event.action.type == "get message" and event.sender == sender:
                return str(event.action.content)
    return None


def in_dom(text: str, dom: str) -> bool:
    """Whether `text` shows in the DOM Chromium serialised (text nodes escape &, < and >)."""
    return html.escape(text, quote=False) in dom


def check_transcript(dom: str, interactions: Interactions) -> list[Check]:
    """The page shows the first question and answer, and every probing round, folded."""
    checks: list[Check] = []
    for role, sender in (("question", QUESTIONER), ("answer", ANSWERER)):
        text = first_text(interactions, sender)
        if text is None:
            checks.append((True, f"no first {role} to look for (aborted before it)"))
        else:
            checks.append((in_dom(text, dom), f"first {role} shown: {text!r}"))
    rounds = len(interactions.probes)
    for index in range(rounds):
        checks.append((f"Probing round {index}:" in dom, f"probing round {index} shown"))
    folded = dom.count("<details")
    checks.append((folded == rounds, f"{folded} folded rounds for {rounds} probing rounds"))
    checks.append(("<script" not in dom, "no script element in the page"))
    return checks


def check_index(dom: str, results: Path) -> list[Check]:
    """The index links every transcript in the folder."""
    pages = sorted(results.glob(f"*/{GAME_NAME}/*/episode_*/{TRANSCRIPT_FILE}"))
    missing = [
        page
        for page in pages
        if f'href="{html.escape(quote(page.relative_to(results).as_posix()))}"' not in dom
    ]
    checks: list[Check] = [
        (not missing, f"index links {len(pages) - len(missing)}/{len(pages)} transcripts")
    ]
    checks.extend((False, f"  not linked: {page}") for page in missing[:5])
    return checks


def check_plot(dom: str, drawn: str) -> list[Check]:
    """The plot parses as SVG (a broken file becomes a page with a parsererror) and keeps every
    line and every interval band of the file `drawn`, with at least one band."""
    lines, bands = drawn.count('class="line"'), drawn.count('class="band"')
    return [
        (dom.startswith("<svg") and "parsererror" not in dom, "parsed as SVG, no error"),
        (dom.count('class="line"') == lines > 0, f"{lines} lines drawn"),
        (dom.count('class="band"') == bands > 0, f"{bands} interval bands drawn"),
    ]


def report(title: str, checks: Sequence[Check]) -> bool:
    """Print the checks; True if all passed."""
    print(title)
    for passed, what in checks:
        print(f"  {'ok  ' if passed else 'FAIL'} {what}")
    return all(passed for passed, _ in checks)


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "results", nargs="?", type=Path, help="results folder (default: a fresh run)"
    )
    parser.add_argument("--episode", type=Path, help="episode folder to open (default: picked)")
    parser.add_argument("--screenshot", type=Path, default=Path("/tmp/transcript.png"))
    parser.add_argument(
        "--plot-screenshot", type=Path, default=Path("/tmp/accuracy_by_round.png"),
        help=f"where the screenshot of {PLOT_FILE} goes",
    )  # fmt: skip
    parser.add_argument("--window-size", default="1000,1400")
    parser.add_argument(
        "--open-rounds", action="store_true", help="unfold every probing round in the screenshot"
    )
    return parser.parse_args(argv)


def _screenshot(browser: str, page: Path, args: argparse.Namespace) -> None:
    source = page
    with tempfile.TemporaryDirectory() as tmp:
        if args.open_rounds:  # a copy with the rounds unfolded, next to nothing it links to
            source = Path(tmp) / page.name
            source.write_text(
                page.read_text(encoding="utf-8").replace("<details ", "<details open ")
            )
        size = f"--window-size={args.window_size}"
        run_browser(browser, source, f"--screenshot={args.screenshot.resolve()}", size)
    print(f"screenshot: {args.screenshot}")


def main(argv: Sequence[str] | None = None) -> int:
    args = _arguments(argv)
    browser = find_browser()
    if browser is None:
        print(
            f"error: no Chromium found (looked for {', '.join(BROWSERS)}); {INSTALL_HINT}",
            file=sys.stderr,
        )
        return 2
    with tempfile.TemporaryDirectory(prefix="transcripts-") as tmp:
        results = args.results or play_fresh_run(Path(tmp) / "records")
        if not (results / INDEX_FILE).exists():
            write_transcripts(results)
        episode = args.episode or pick_episode(results)
        if not (episode / TRANSCRIPT_FILE).exists():
            print(f"error: {episode / TRANSCRIPT_FILE} does not exist", file=sys.stderr)
            return 2
        interactions = read_interactions(episode / "interactions.json")
        page_dom = run_browser(browser, episode / TRANSCRIPT_FILE, "--dump-dom")
        index_dom = run_browser(browser, results / INDEX_FILE, "--dump-dom")
        passed = report(f"{episode / TRANSCRIPT_FILE}:", check_transcript(page_dom, interactions))
        passed &= report(f"{results / INDEX_FILE}:", check_index(index_dom, results))
        _screenshot(browser, episode / TRANSCRIPT_FILE, args)
        plot = results / PLOT_FILE
        if plot.exists():
            drawn = plot.read_text(encoding="utf-8")
            plot_dom = run_browser(browser, plot, "--dump-dom")
            passed &= report(f"{plot}:", check_plot(plot_dom, drawn))
            width, height = (drawn.split(f'{name}="', 1)[1].split('"', 1)[0].split(".")[0]
                             for name in ("width", "height"))  # fmt: skip
            shot = f"--screenshot={args.plot_screenshot.resolve()}"
            run_browser(browser, plot, shot, f"--window-size={width},{height}")
            print(f"screenshot: {args.plot_screenshot}")
    print("all checks passed" if passed else "some checks FAILED")
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())

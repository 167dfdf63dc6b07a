"""The switch that makes every skip fail (tests/conftest.py, PRIVATESHARED_NO_SKIP=1).

Tests that need ../shared skip where it is missing; CI sets the switch so that such a run fails
instead of passing without them. A small generated suite, run with the repository's conftest,
skips in every way pytest offers: a skipif mark, pytest.skip() in a test and in a fixture, and
importorskip for a whole module.
"""

from __future__ import annotations

import pytest

from tests.conftest import NO_SKIP, REPO

pytest_plugins = ["pytester"]

SKIPPING = """
import pytest


@pytest.fixture
def records():
    pytest.skip("no records for the fixture")


@pytest.mark.skipif(True, reason="no records for the mark")
def test_marked():
    pass


def test_called():
    pytest.skip("no records for the call")


def test_with_fixture(records):
    pass


def test_passes():
    pass


@pytest.mark.xfail(reason="a known bug, which is no skip")
def test_known_bug():
    assert False
"""

SKIPPING_MODULE = """
import pytest

pytest.importorskip("privateshared_has_no_such_module")


def test_never_collected():
    pass
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest((REPO / "tests" / "conftest.py").read_text())
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")  # as ours
    pytester.makepyfile(test_skipping=SKIPPING, test_skipping_module=SKIPPING_MODULE)
    return pytester


def test_without_the_switch_skips_skip(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(NO_SKIP, raising=False)
    result = suite.runpytest()
    result.assert_outcomes(passed=1, skipped=4, xfailed=1)
    assert result.ret == pytest.ExitCode.OK


def test_with_the_switch_every_skip_fails_with_its_reason(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(NO_SKIP, "1")
    result = suite.runpytest("test_skipping.py")
    # A skip in setup (a mark, a fixture) fails the setup, which pytest counts as an error.
    result.assert_outcomes(passed=1, failed=1, errors=2, xfailed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines_random([
        f"Skipped: no records for the {where} ({NO_SKIP}=1 forbids skips at *test_skipping.py:*)"
        for where in ("mark", "call", "fixture")
    ])  # fmt: skip

    module = suite.runpytest("test_skipping_module.py")
    module.assert_outcomes(errors=1)
    assert module.ret == pytest.ExitCode.INTERRUPTED  # a collection error stops the run
    module.stdout.fnmatch_lines([
        "Skipped: could not import 'privateshared_has_no_such_module'*"
        f"({NO_SKIP}=1 forbids skips at *test_skipping_module.py:*)",
    ])  # fmt: skip


@pytest.mark.parametrize("value", ["0", ""])
def test_only_1_turns_the_switch_on(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(NO_SKIP, value)
    suite.runpytest().assert_outcomes(passed=1, skipped=4, xfailed=1)

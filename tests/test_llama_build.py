"""llama.cpp built for any CPU: the build's options and variants, our cache's key, the
features a library reports, and the line a crashed server gets (bench/running/llama_build.py,
bench/running/local_model.py's exit_line).

What the installed build loads on this machine is checked on the library itself in
tests/test_local_model.py.
"""

from __future__ import annotations

import importlib.metadata
import re
import signal
import tomllib
from pathlib import Path

import pytest

from privateshared.bench.running import local_model
from privateshared.bench.running.llama_build import (
    BUILD_COMMAND,
    CMAKE_OPTIONS,
    VARIANTS,
    compiled_features,
    cpu_flags,
    crash_fix,
    pinned_version,
    recipe_key,
    variants_for,
)
from privateshared.bench.running.local_model import LocalModelError, exit_line, server_environment

REPO = Path(__file__).resolve().parents[1]
ZEN4 = frozenset({"fpu", "pni", "ssse3", "sse4_2", "avx", "avx2", "bmi2", "fma", "f16c",
                  "avx512f", "avx512vbmi", "avx512_vnni", "avx512_bf16"})  # fmt: skip
SAPPHIRE_RAPIDS = ZEN4 | {"amx_int8", "amx_tile", "amx_bf16"}
OLD_ATOM = frozenset({"fpu", "sse2", "ssse3", "sse4_2"})  # no AVX at all (Goldmont and older)


def test_the_build_is_for_any_cpu_and_leaves_out_what_is_never_loaded() -> None:
    options = dict(option.removeprefix("-D").split("=", 1) for option in CMAKE_OPTIONS)
    # CPU code as variants that llama.cpp picks from when it starts; never -march=native.
    assert options["GGML_BACKEND_DL"] == options["GGML_CPU_ALL_VARIANTS"] == "ON"
    assert options["GGML_NATIVE"] == "OFF"
    for part in ("COMMON", "TOOLS", "EXAMPLES", "SERVER", "TESTS"):
        assert options[f"LLAMA_BUILD_{part}"] == "OFF", part


@pytest.mark.parametrize(
    ("system", "machine", "first"),
    [("linux", "x86_64", "x64"), ("linux", "AMD64", "x64"), ("linux", "aarch64", "armv8.0_1"),
     ("darwin", "arm64", "apple_m1")],
    ids=["x86-64", "amd64-spelling", "arm64-linux", "macos"],
)  # fmt: skip
def test_every_platform_s_first_variant_runs_on_all_its_cpus(
    system: str, machine: str, first: str
) -> None:
    variants = variants_for(system, machine)
    assert variants[0] == first
    # AMX's variant crashes: never built, on any platform.
    assert not any("sapphirerapids" in v for vs in VARIANTS.values() for v in vs)


def test_an_unknown_platform_is_one_line() -> None:
    with pytest.raises(LookupError, match="install llama-cpp-python your own way"):
        variants_for("linux", "riscv64")


def test_the_cache_key_changes_with_every_input_of_the_build() -> None:
    x86 = variants_for("linux", "x86_64")
    key = recipe_key("0.3.36", x86, "linux", "x86_64")
    assert key == recipe_key("0.3.36", x86, "linux", "x86_64")
    others = {
        recipe_key("0.3.35", x86, "linux", "x86_64"),
        recipe_key("0.3.36", x86[:1], "linux", "x86_64"),
        recipe_key("0.3.36", x86, "darwin", "x86_64"),
        recipe_key("0.3.36", x86, "linux", "aarch64"),
    }
    assert key not in others and len(others) == 4


@pytest.mark.parametrize(
    ("requirement", "version"),
    [
        ('llama-cpp-python[server]==0.3.36; extra == "local"', "0.3.36"),
        ("llama_cpp_python == 0.3.2", "0.3.2"),
        ("Llama-Cpp-Python==1.0.0", "1.0.0"),
    ],
    ids=["extra-and-marker", "underscores-spaces", "case"],
)
def test_pinned_version(requirement: str, version: str) -> None:
    assert pinned_version(["numpy>=1.26", requirement]) == version


def test_an_unpinned_requirement_is_no_version() -> None:
    with pytest.raises(LookupError):
        pinned_version(["llama-cpp-python>=0.3"])


def test_the_installed_distribution_pins_what_pyproject_pins() -> None:
    local = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["local"]  # fmt: skip
    version = pinned_version(importlib.metadata.requires("privateshared") or [])
    assert version == pinned_version(local)


PORTABLE_INFO = "CPU : LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 | "
NATIVE_INFO = (
    "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | "
    "AVX512 = 1 | AVX512_VBMI = 1 | AVX512_VNNI = 1 | AVX512_BF16 = 1 | LLAMAFILE = 1 | "
    "OPENMP = 1 | REPACK = 1 | "
)
AMX_INFO = NATIVE_INFO.replace("LLAMAFILE", "AMX_INT8 = 1 | LLAMAFILE")
MAC_INFO = "CPU : NEON = 1 | ARM_FMA = 1 | FP16_VA = 1 | DOTPROD = 1 | Metal : EMBED_LIBRARY = 1 | "


@pytest.mark.parametrize(
    ("log", "features"),
    [
        (f"llama_model_loader: ...\n{PORTABLE_INFO}\nINFO: started", set()),
        (NATIVE_INFO, {"SSE3", "SSSE3", "AVX", "AVX2", "F16C", "FMA", "BMI2", "AVX512",
                       "AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16"}),
        (AMX_INFO, {"AMX_INT8"}),  # checked as a subset below
        (MAC_INFO, {"NEON", "ARM_FMA", "FP16_VA", "DOTPROD"}),  # Metal's features not read
        ("CPU : AVX = 0 | AVX2 = 1 | ", {"AVX2"}),  # only what is on
    ],
    ids=["portable", "native", "amx", "metal-after-cpu", "zeros"],
)  # fmt: skip
def test_compiled_features(log: str, features: set[str]) -> None:
    found = compiled_features(log)
    assert found is not None and features <= found
    if "AMX" not in log:
        assert found == features


def test_a_log_without_system_info_has_no_features() -> None:
    assert compiled_features("Traceback ...\nValueError: Failed to load model") is None


def test_cpu_flags_of_x86_and_arm64() -> None:
    assert "avx2" in cpu_flags("processor: 0\nflags\t\t: fpu avx avx2\nbugs: x\n")
    assert "asimd" in cpu_flags("processor: 0\nFeatures\t: fp asimd evtstrm\n")
    assert cpu_flags("nothing here") == frozenset()


@pytest.mark.parametrize(
    ("ours", "info", "cpu", "expected"),
    [
        (False, AMX_INFO, SAPPHIRE_RAPIDS, "built with AMX kernels"),
        (False, NATIVE_INFO, OLD_ATOM, "built for a CPU with AVX, AVX2"),  # SIGILL elsewhere
        (False, NATIVE_INFO, ZEN4, "llama-cpp-python's own build"),
        (False, None, None, "llama-cpp-python's own build"),
        # Ours loads the variant the CPU runs: AVX-512's here, and that is no fault.
        (True, NATIVE_INFO, ZEN4, "the build for any CPU already"),
        (True, PORTABLE_INFO, OLD_ATOM, "the build for any CPU already"),
        (True, MAC_INFO.split(" FP16")[0], None, "the build for any CPU already"),
    ],
    ids=["amx", "missing-instructions", "pip-native", "pip-no-log", "ours-avx512",
         "ours-baseline", "ours-arm64"],
)  # fmt: skip
def test_crash_fix(ours: bool, info: str | None, cpu: frozenset[str] | None, expected: str) -> None:
    fix = crash_fix(ours, compiled_features(info) if info else None, cpu)
    assert expected in fix
    # The rebuild is advised exactly when it changes the library.
    assert (BUILD_COMMAND in fix) == ("already" not in fix)


def test_a_crashed_server_s_line_names_model_signal_log_and_fix() -> None:
    log = Path("records/logs/llama-server-smollm2.log")
    line = exit_line("smollm2", -signal.SIGSEGV, log, f"...\n{AMX_INFO}\n", ours=False)
    assert line.startswith("smollm2: the local llama.cpp server this run started has exited ")
    assert "(killed by SIGSEGV)" in line and f"its log: {log};" in line
    assert "finished episodes are kept" in line and BUILD_COMMAND in line
    assert "\n" not in line
    # Never the advice a remote endpoint gets: the server is the run's own.
    assert not re.search(r"start the server|base.url|--timeout", line)


@pytest.mark.parametrize(
    ("returncode", "said"),
    [
        (-signal.SIGKILL, "killed by SIGKILL"),
        (1, "with code 1"),
        (None, "seen from a worker process"),
    ],
    ids=["oom-killer", "exit-code", "from-a-worker"],
)
def test_other_ends_of_a_server(returncode: int | None, said: str) -> None:
    line = exit_line("local:m.gguf", returncode, Path("x.log"), "", ours=True)
    assert said in line and "its log: x.log" in line
    assert BUILD_COMMAND not in line  # no rebuild for what a rebuild cannot change


def test_the_server_loads_a_user_s_own_build_as_it_is_else_ours_else_says_how_to_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ours = tmp_path / "ours"
    monkeypatch.setattr(local_model, "library_dir", lambda: ours)
    monkeypatch.setattr(local_model, "own_libraries", lambda: tmp_path / "site-packages")
    assert server_environment() == {}  # a native or GPU build of the user's: played as it is
    monkeypatch.setattr(local_model, "own_libraries", lambda: None)
    with pytest.raises(LocalModelError, match=f"not built on this machine .*; build it: "
                                              f"{BUILD_COMMAND}$"):  # fmt: skip
        server_environment()
    ours.mkdir()
    (ours / "build.json").write_text("{}")
    assert server_environment() == {"LLAMA_CPP_LIB_PATH": str(ours)}

"""The public names of `privateshared.bench`, for type checkers and for the lazy loader in
__init__.py, which imports each from its module on first use."""

from .running.benchmark import arun_benchmark as arun_benchmark
from .running.benchmark import run_benchmark as run_benchmark

"""The testing kit, which users run too: a fake OpenAI-compatible endpoint and perfect players.

- `fake_endpoint.py`: a chat-completions server on 127.0.0.1 (standard library only) with a
  latency per call and injectable faults. `python -m privateshared.bench.testing.fake_endpoint`
  serves perfect players, so `privateshared run --model fake-model --base-url URL` tries the
  whole model path without a key or a network.
- `fake_players.py`: those players (answerer, questioner, judge), reading only what a model
  would read.
"""

# Nothing is imported here: `python -m privateshared.bench.testing.fake_endpoint` runs that module
# as a script, which an import of it here would load twice.

"""Transcript pages: one self-contained HTML page per episode, and an index of the folder.

- `index.py`: reads the episode folders, writes each page and the index.
- `page.py`: one episode's page from its records: the dialogue, the probing rounds, the outcome.
- `probes.py`: a probing round, folded under its turn; `calls.py`: the questioner's function
  calls and belief state; `html.py`: escaping, CSS and formatting shared by all of them.
"""

from privateshared.bench.reporting.transcripts.index import (
    INDEX_FILE,
    TRANSCRIPT_FILE,
    TranscriptError,
    transcript_page,
    write_transcripts,
)

__all__ = [
    "INDEX_FILE",
    "TRANSCRIPT_FILE",
    "TranscriptError",
    "transcript_page",
    "write_transcripts",
]

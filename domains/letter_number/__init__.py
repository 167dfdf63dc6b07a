"""Letter-number: the holder of a secret code tells a code breaker which number each letter
stands for. An abstract setting: no world knowledge helps to guess or to keep score."""

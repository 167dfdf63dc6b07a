"""Domains: the settings a dialogue can take place in, each one folder of data.

`load_domains()` reads and validates every folder here that holds a `domain.json`;
`registry.known_domains()` adds those of installed packages and of the user's folders (any
folder, outside the package too); `instances.py` samples domains into the game instances an
experiment plays.
"""

"""core: the ground every stage stands on.

Errors located in their file, canonical JSON bytes, code fingerprints and the code cache, keyed
random streams, regular expressions with a time limit, the registry of named transforms,
length matching, streamed atomic writes, and the time and memory budgets every command and
worker runs under: small pieces with no knowledge of families or
releases.

May import: nothing else of memspec (first stage).
"""

"""engine: from a family to its instances.

Sampling slots from keyed streams, rendering behind the sandboxed Jinja environment
(``render`` is the one interface; its ``jinja_`` modules are the only ones that touch Jinja's
internals), inputs kept by value, the family's checks, answer tests, generation of groups and
variants, parallel chunks, and the content index that finds duplicates.

May import: core, spec, formats, analysis.
"""

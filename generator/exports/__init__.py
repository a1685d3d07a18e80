"""exports: other layouts written from a built release.

Declared exports (templates over a release's instances) and the inspect task with its scoring,
written so that it runs without memspec.

May import: core, spec, formats, analysis, engine, audit, release.
"""

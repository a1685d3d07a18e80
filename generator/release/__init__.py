"""release: freezing and verifying releases.

Freezing (generate every family, audit it, write every file, pin them in a manifest, all or
nothing), shards built apart and merged, verifying a release against its manifest, reading a
release's data back, and its statistics page with charts.

May import: core, spec, formats, analysis, engine, audit.

``memspec.release.<name>`` for a name of the former module ``memspec.release`` (``freeze``,
``find_release``, ...) still works for one version (now ``memspec.release.freezing``), with a
DeprecationWarning.
"""

from .._moved import forward_names

__getattr__ = forward_names(__name__, "freezing")

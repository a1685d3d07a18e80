"""report: pages people read.

The HTML report of a release and its audit, the text and JSON forms of audit and panel
results, and the preview of a family's instances.

May import: core, spec, formats, analysis, engine, audit, release, exports.

``memspec.report.<name>`` for a name of the former module ``memspec.report`` still works for
one version (now ``memspec.report.report``), with a DeprecationWarning.
"""

from .._moved import forward_names

__getattr__ = forward_names(__name__, "report")

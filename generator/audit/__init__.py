"""audit: could a system without memory pass this release?

Memoryless adversaries and policies, the view of an item they get, the structural checks
(balance, leaks, counterfeits) and the checks that need the specs a release was built from.

May import: core, spec, formats, analysis, engine.

``memspec.audit.<name>`` for a name of the former module ``memspec.audit`` still works for one
version (now ``memspec.audit.run``), with a DeprecationWarning.
"""

from .._moved import forward_names

__getattr__ = forward_names(__name__, "run")

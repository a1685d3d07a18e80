"""spec: reading what authors declare, strictly.

Strict YAML with line numbers, the JSON Schemas, projects and the ``memspec:`` library, pools,
families, paradigms and releases, the catalog of a project, scaffolds for new families and
projects, and reading instance records against their schema.

May import: core.

``memspec.spec.<name>`` for a name of the former module ``memspec.spec`` still works for
one version (now ``memspec.spec.spec``), with a DeprecationWarning.
"""

from .._moved import forward_names

__getattr__ = forward_names(__name__, "spec")

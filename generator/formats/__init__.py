"""formats: the files a release is made of, and what differs between its layouts.

Manifests and SHA256SUMS, the Parquet copies, the dataset card, Croissant metadata, the loader
configs, the release checks' declarations and the naming of release folders. Reading and
writing these files needs no generation, so scoring and the audit can read a release too.

May import: core, spec.
"""

"""Reviews of overloads and specialised values: the sidecar store (atomic, locked, keyed by fingerprints) and the
``check`` that CI runs against it."""

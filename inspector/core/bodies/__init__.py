"""Bodies: the nodes of a function overload or an aten call group seen as one unit, their literal slots, their
fingerprints (names ignored) and template fingerprints (literals masked), and the group keys that let work be
done once per distinct body instead of once per call."""

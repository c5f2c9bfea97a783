"""Folding a flat dynamo export into model-local functions: one function per aten op, one overload per distinct
body, the aten signature kept in the doc string; readable overload names."""

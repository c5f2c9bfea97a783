"""``python -m inspector`` is the ``onnx-inspector`` command."""

from inspector.cli import entry

entry()

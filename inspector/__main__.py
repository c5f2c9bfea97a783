"""``python -m inspector`` is the ``onnx-inspector`` command."""

import sys

from inspector.cli import main

sys.exit(main())

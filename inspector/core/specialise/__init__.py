"""Specialised values: which literals of a family's bodies vary, derive from aten arguments (links, by evidence)
or were computed from shapes; their categories, the ONNX defaults left out, and the body text that marks them."""

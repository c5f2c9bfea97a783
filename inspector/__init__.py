"""ONNX Inspector: review ONNX models exported from PyTorch."""

__version__ = "0.1.0"

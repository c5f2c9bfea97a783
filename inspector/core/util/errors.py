"""Errors a user sees: one line each, never a traceback."""


class InspectorError(Exception):
    """Base of every error shown to a user as one line (CLI exit code 2)."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


class ModelLoadError(InspectorError):
    """The file is missing, unreadable or not an ONNX model."""


class UnsafePathError(InspectorError):
    """External data points outside the model's folder."""

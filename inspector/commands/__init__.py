"""Subcommands of ``onnx-inspector``; each module has ``main(argv) -> int``."""

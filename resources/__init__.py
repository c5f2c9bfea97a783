"""Package data of ONNX Inspector: the aten schema catalogue, templates and sample models.

The folder lives at the top of the repository and is installed as ``inspector.resources``.
"""

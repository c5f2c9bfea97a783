"""The engine: plain Python over the ONNX protobuf, no Qt, in packages by concern with data flowing one way.

    util        errors, atomic file I/O, protobuf encoding, text and JSON safety (imports nothing of ours)
    aten        what torch and onnxscript say: aten schemas, the torchlib catalogue (generated package data)
    model       a file becomes a model index: load, scan, function keys, aten calls from fx metadata, modules
    bodies      a body per function overload or aten call: literals, fingerprints, group keys
    specialise  specialised values of a family: categories, link evidence, ONNX defaults, body text
    fold | diff | review    what is done with them: fold into local functions, compare two exports, review
    summary, search         views over one index for the commands, the API and the app

A module imports only from its own package and the packages above it in this list (checked by import-linter's
layers contract in ``pyproject.toml``); nothing here imports ``inspector.render``, ``report``, ``gui`` or Qt.
"""

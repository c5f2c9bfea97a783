"""Bottom layer: the one error type and exit code, atomic writes, chunked protobuf encoding, terminal/JSON/markup
text safety and human-readable sizes. Imports nothing from the rest of ``inspector``."""

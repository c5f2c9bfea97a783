"""A file becomes a model: loading (untrusted bytes, bounded), one scan over every node, function keys and call
sites, aten calls and the ``nn.Module`` tree from fx metadata, signatures bound to the aten catalogue, tensor
facts, and the ``ModelIndex`` that every later layer reads."""

"""Embedding models behind one small interface (``protocol.py``), a module per provider, and the local ONNX runtime."""

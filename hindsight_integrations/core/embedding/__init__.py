"""Embedding models behind one small interface, and the local model's ONNX runtime."""

"""The local model run by onnxruntime: export (needs torch, once), int8 copy, encoder."""

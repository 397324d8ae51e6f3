"""The local model run by onnxruntime: the export cache, export (needs torch, once), tokenizer, int8 copy, encoder."""

# The MCP memory server image. CPU-only torch is installed first so the local embedding
# model never drags in a CUDA build; set TORCH_SPEC / PIP_EXTRA_INDEX_URL to pick a wheel.
FROM python:3.11-slim
ARG TORCH_SPEC="torch==2.13.0"
ENV PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false \
    HINDSIGHT_CACHE_DIR=/opt/hindsight-cache
WORKDIR /app
RUN pip install --no-cache-dir "$TORCH_SPEC"
COPY pyproject.toml README.md ./
COPY hindsight_integrations ./hindsight_integrations
RUN pip install --no-cache-dir ".[local,server,replicas]"
# Export the embedding model to ONNX at build time, so replicas do not each export on start.
RUN python -c "from hindsight_integrations.core.embeddings import LocalEmbedder; e = LocalEmbedder(backend='onnx'); e.warm(); print(e.backend_in_use)"
EXPOSE 8765
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=5 \
  CMD python -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:8765/health', timeout=2)" || exit 1
CMD ["hindsight", "serve", "--transport", "http", "--host", "0.0.0.0", "--port", "8765"]

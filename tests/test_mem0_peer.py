"""The OpenAI-compatible embedding endpoint that ``hindsight bench peers`` gives mem0."""

from __future__ import annotations

import httpx
import numpy as np
import openai
import pytest

from hindsight_integrations.bench.embedding_server import EmbeddingServer


def test_embedding_endpoint_serves_the_local_model(embedder) -> None:
    texts = ["I adopted a greyhound called Pepper.", "Valencia is lovely in spring."]
    expected = np.array(embedder.embed(texts))
    with EmbeddingServer(embedder) as server:
        client = openai.OpenAI(api_key=server.api_key, base_url=server.base_url, max_retries=0)
        as_floats = client.embeddings.create(input=texts, model=embedder.name, encoding_format="float")
        assert [d.index for d in as_floats.data] == [0, 1] and as_floats.model == embedder.name
        assert np.allclose([d.embedding for d in as_floats.data], expected, atol=1e-6)
        # without encoding_format the client asks for base64 and decodes it itself
        decoded = client.embeddings.create(input=texts[1], model=embedder.name, dimensions=embedder.dimension)
        assert np.allclose(decoded.data[0].embedding, expected[1], atol=1e-6)
        assert server.requests == 2 and server.texts == 3

        with pytest.raises(openai.BadRequestError, match="not 'text-embedding-3-small'"):
            client.embeddings.create(input=texts, model="text-embedding-3-small")
        with pytest.raises(openai.BadRequestError, match="not 1536"):
            client.embeddings.create(input=texts, model=embedder.name, dimensions=1536)
        stranger = openai.OpenAI(api_key="guess", base_url=server.base_url, max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            stranger.embeddings.create(input=texts, model=embedder.name)
        headers = {"authorization": f"Bearer {server.api_key}"}
        assert httpx.post(f"{server.base_url}/chat/completions", json={}, headers=headers).status_code == 404
        assert httpx.post(f"{server.base_url}/embeddings", content=b"{not json", headers=headers).status_code == 400
        assert server.requests == 2  # refused requests embed nothing

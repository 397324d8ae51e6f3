"""Write the mean query and passage vectors of multilingual-e5-small that its centred relevance floor subtracts.

e5 gives every text a large shared component (unrelated sentences sit at cosine ~0.75), and a
larger one between texts of one language, so a plain cosine floor cannot tell "about this" from
"about nothing" (core/embedding/centring.py). Subtracting the mean vector of the text's language,
for queries and for passages apart, removes most of it. The means are taken over product prose,
not over any benchmark: 200 English sentences from the specification and 200 Chinese ones from
the articles it came from (../shared/SPEC.md, ../shared/seeds/).

    python benchmarks/e5_means.py [--shared ../shared]
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np

from hindsight_integrations.core.embedding.multilingual import MultilingualEmbedder

OUT = Path(__file__).resolve().parents[1] / "hindsight_integrations/core/embedding/means/multilingual-e5-small.npz"
PER_LANGUAGE = 200


def _sentences(text: str, *, chinese: bool) -> list[str]:
    parts = re.split(r"[。！？!?\n]|(?<=[.;:])\s", text)
    keep = [p.strip(" -#*|`>") for p in parts]
    cjk = re.compile(r"[\u3400-\u9fff]")
    return [p for p in keep if 12 <= len(p) <= 200 and bool(cjk.search(p)) == chinese]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[2] / "shared")
    args = parser.parse_args()
    english = _sentences((args.shared / "SPEC.md").read_text(encoding="utf-8"), chinese=False)
    seeds = "\n".join(p.read_text(encoding="utf-8") for p in sorted((args.shared / "seeds").iterdir()))
    chinese = _sentences(seeds, chinese=True)
    rng = np.random.default_rng(0)
    model = MultilingualEmbedder()
    means = {}
    for language, sentences in (("en", english), ("zh", chinese)):
        picked = [str(s) for s in rng.choice(sentences, PER_LANGUAGE, replace=False)]
        means[f"query_{language}"] = model.embed_array(picked).mean(axis=0).astype(np.float32)
        means[f"passage_{language}"] = model.embed_index_array(picked).mean(axis=0).astype(np.float32)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez(OUT, **means)
    print(f"wrote {OUT} from {len(english)} English and {len(chinese)} Chinese sentences ({PER_LANGUAGE} of each)")


if __name__ == "__main__":
    main()

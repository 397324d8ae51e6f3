"""Rule-based conflict detection: which subject/attribute a statement sets (docs/architecture.md, "Writing").

A new value for the same subject and attribute supersedes the old record (kept as history,
never deleted). The rules cover the simple, common cases — where someone lives or works,
their name, a project's database, language, cloud or OS, "my X is Y" — and deliberately
nothing fuzzy: "likes red" and "hates red clothes" are different attributes, so anything
not matched here gets no slot and never supersedes anything.
"""

from __future__ import annotations

import re

_CATEGORIES: dict[str, tuple[str, ...]] = {
    "database": (
        "mysql",
        "postgresql",
        "postgres",
        "sqlite",
        "mongodb",
        "mongo",
        "redis",
        "mariadb",
        "oracle",
        "sql server",
        "mssql",
        "dynamodb",
        "cassandra",
        "clickhouse",
        "elasticsearch",
        "supabase",
        "firestore",
    ),
    "language": (
        "python",
        "java",
        "golang",
        "rust",
        "typescript",
        "javascript",
        "kotlin",
        "c#",
        "c++",
        "ruby",
        "php",
        "swift",
    ),
    "cloud": ("aws", "gcp", "google cloud", "azure", "digitalocean", "heroku", "vercel", "alibaba cloud", "aliyun"),
    "os": ("ubuntu", "debian", "centos", "fedora", "windows", "macos", "arch linux", "alpine", "rhel"),
    "frontend": ("react", "vue", "angular", "svelte", "next.js", "nextjs", "nuxt"),
}

# One pass over the text finds every category (a named group each); the word-boundary checks
# sit outside the alternation, so the scan stays cheap on every write.
_CATEGORY_PATTERN = re.compile(
    r"(?<![\w.])(?:"
    + "|".join(
        f"(?P<{attribute}>{'|'.join(re.escape(v) for v in values)})" for attribute, values in _CATEGORIES.items()
    )
    + r")(?!\w)"
)

_PATTERNS: list[tuple[re.Pattern[str], str, str]] = [
    (re.compile(r"\b(i|we) (now )?(live|am living|moved|relocated)( to| in)\b", re.I), "user", "location"),
    (re.compile(r"\b(i|we) (now )?(work|am working) (at|for)\b", re.I), "user", "employer"),
    (re.compile(r"\bmy name is\b|\bcall me\b", re.I), "user", "name"),
    (re.compile(r"我(现在)?住在|我搬到了?"), "user", "location"),
    (re.compile(r"我(现在)?在.{1,12}(工作|上班)"), "user", "employer"),
    (re.compile(r"我叫|我的名字是"), "user", "name"),
]

_MY_X_IS = re.compile(r"\b(?:my|our) ([a-z][a-z ]{1,30}?) (?:is|are|was changed to|changed to|is now)\b", re.I)


def detect_slot(content: str) -> str | None:
    """Return ``"subject:attribute"`` if the text sets a recognisable attribute, else None."""
    for pattern, subject, attribute in _PATTERNS:
        if pattern.search(content):
            return f"{subject}:{attribute}"
    lowered = content.lower()
    named = {match.lastgroup for match in _CATEGORY_PATTERN.finditer(lowered)}
    for attribute in _CATEGORIES:
        if attribute in named and _about_project(lowered, attribute):
            return f"project:{attribute}"
    match = _MY_X_IS.search(content)
    if match:
        attribute = re.sub(r"\s+", "_", match.group(1).strip().lower())
        if attribute not in {"favorite", "favourite"}:
            return f"user:{attribute}"
    return None


def _about_project(lowered: str, attribute: str) -> bool:
    if attribute in lowered:
        return True
    cues = (
        "project",
        "we use",
        "we're using",
        "uses",
        "using",
        "runs on",
        "our ",
        "stack",
        "backend",
        "deploy",
        "switched",
        "migrat",
        "项目",
        "用的",
    )
    return any(cue in lowered for cue in cues)

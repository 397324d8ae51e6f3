"""Rule-based conflict detection: which subject/attribute a statement sets (docs/architecture.md, "Writing").

A new value for the same subject and attribute supersedes the old record (kept as history,
never deleted). ``detect_slot`` names that ``"subject:attribute"`` with offline rules, English
and Chinese, checked in this order:

* explicit attributes of the user — name, phone, email, address, team, role/title, location
  (live/moved/based; city and home count as location; 住在/搬到/搬去/在X住, time words in
  between allowed), employer (work at/for, started a new job, joined/left/hired by/now at an
  organisation written with a capital; 在X工作/上班, 换了工作, 跳槽, 入职, 辞职), diet
  (vegetarian/vegan/eat meat again; 吃素/不吃肉), manager, partner, car — and of the project:
  deadline (deadline, due date, is due; 截止日期/期限) and budget (budget; 预算);
* a project's database, language, cloud, OS or frontend named with a project cue;
* "my/our X is Y" and "the/my/our X is now / changed to / moved to Y", X normalised: leading
  "new", "current", articles dropped, synonyms folded (phone number, mobile, cell → phone;
  boss → manager; wife, boyfriend → partner; city, home → location; favorite color →
  favourite_colour). Vague heads ("my guess is", a bare "my favourite is") get no slot.

A "user" attribute said of someone else is that person's slot (``priya:phone``), a named
project's attribute is that project's (``project ember:database``) and a deadline is narrowed
to what is due when the text says (``project:deadline of report``): ``subjects.py``.

Deliberately nothing fuzzy: likes and dislikes get no slot ("likes red" and "hates red
clothes" are different attributes), and anything not matched here never supersedes anything.
Known gaps: "I left Paris" reads as leaving an employer; a bare "my manager is tired" still
takes the manager slot; objects are not compared, so two different meetings "moved to" a new
time share a slot.

``change_cue`` says whether a text announces a change of an earlier value ("now", "new X",
"moved to", "no longer", "cancelled", "update:", 改成, 搬到, 换了, 不再, 取消, 推迟…).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .subjects import owner_of, project_slot
from .text import Searcher, in_spans, rule_spans

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
_PROJECT_CUES = (
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

_I = r"\b(?:i|we)"  # the speaker
_AUX = r"(?:'m|\s+am|'re|\s+are|'ve|\s+have|\s+had|'d|\s+was|\s+were)?"  # I'm, I have, we were…
_ADV = r"(?:\s+(?:now|just|recently|finally|already|currently|still|also|officially|actually)){0,8}"
_NAME_AHEAD = r"\s+(?-i:(?!The\b|A\b|An\b|My\b|Our\b)[A-Z])"  # a capitalised object: an organisation, a person
_DIETS = (
    r"(?:vegetarian|vegan|pescatarian|pescetarian|keto|paleo|gluten[- ]free|flexitarian|omnivore|carnivore"
    r"|lactose[- ]intolerant|halal|kosher)"
)
_FOODS = r"(?:meat|fish|pork|beef|chicken|dairy|eggs|seafood|animal\s+products)"
_PARTNERS = r"(?:partner|girlfriend|boyfriend|wife|husband|spouse|fianc[ée]e?)"
_MANAGERS = r"(?:manager|boss|supervisor|team\s+lead)"


def _rules(*patterns: str | Searcher) -> tuple[Searcher, ...]:
    return tuple(re.compile(p, re.I) if isinstance(p, str) else p for p in patterns)


class _Followed:
    """``first`` and, starting later on its line, ``then``: what ``first(?=.*then)`` says, in linear time.

    With ``either_order`` also ``then`` followed by ``first`` (``first.*then|then.*first``), the
    leftmost of the two. The regular expression retries ``.*`` from every start, the square of
    the text; here each line is read a bounded number of times. Matches like a pattern: the
    match returned is ``first``'s (or ``then``'s, in the other order).
    """

    def __init__(self, first: str, then: str, *, either_order: bool = False) -> None:
        self._first = re.compile(first, re.I)
        self._then = re.compile(then, re.I)
        self._either_order = either_order

    def search(self, string: str, pos: int = 0) -> re.Match[str] | None:
        """The leftmost match of ``first`` with ``then`` after it on its line (either way round if asked)."""
        found = _followed(self._first, self._then, string, pos)
        if not self._either_order:
            return found
        other = _followed(self._then, self._first, string, pos)
        if found is None or (other is not None and other.start() < found.start()):
            return other
        return found


def _followed(first: re.Pattern[str], then: re.Pattern[str], text: str, pos: int) -> re.Match[str] | None:
    """The first match of ``first`` at or after ``pos`` such that ``then`` starts after it on the same line."""
    later: re.Match[str] | None = None  # the leftmost ``then`` at or after the last search's start
    line_end = -1  # the end of the line of the latest ``first`` (each line is looked up once)
    for match in first.finditer(text, pos):
        if later is None or later.start() < match.end():
            later = then.search(text, match.end())
            if later is None:
                return None  # no ``then`` after this one: none after any later ``first`` either
        if line_end < match.end():
            found = text.find("\n", match.end())
            line_end = len(text) if found < 0 else found
        if later.start() <= line_end:
            return match
    return None


class _Leftmost:
    """The leftmost match of any of ``rules`` (what their alternation would find first)."""

    def __init__(self, *rules: str | Searcher) -> None:
        self._rules = _rules(*rules)

    def search(self, string: str, pos: int = 0) -> re.Match[str] | None:
        """The match that starts first among the rules' first matches (the earlier rule on a tie)."""
        found = [m for rule in self._rules if (m := rule.search(string, pos)) is not None]
        return min(found, key=lambda m: m.start()) if found else None


# (subject, attribute, rules), checked in order: the first rule that matches names the slot.
_SLOT_RULES: tuple[tuple[str, str, tuple[Searcher, ...]], ...] = (
    (
        "user",
        "phone",
        _rules(
            r"\b(?:phone|mobile|cell|cellphone|telephone)(?:\s+phone)?\s*(?:number|no\.|#)",
            _Followed(r"\b(?:my|new|our)\s+(?:\w+\s+)?(?:number|phone|mobile|cell)\b", r"\d[\d\s().-]{5,40}\d"),
            r"\b(?:call|text|reach)\s+me\s+(?:at|on)\s+\+?\(?\d",
            _Leftmost(r"电话|手机号|号码", _Followed(r"手机", r"\d{5,}")),
        ),
    ),
    (
        "user",
        "name",
        _rules(r"\bmy\s+name\s+is\b|\bcall\s+me\s+(?!at\b|on\b|back\b|later\b|when\b|if\b)", r"我叫|我的名字"),
    ),
    (
        "user",
        "email",
        _rules(
            _Followed(r"\be-?mail\b", r"[\w.+-]{1,64}@[\w-]{1,63}\.\w", either_order=True),
            r"\b(?:my|our)\s+(?:new\s+|current\s+|work\s+|personal\s+)?e-?mail(?:\s+address)?\s+(?:is|was|has|changed)\b",
            r"\bnew\s+e-?mail\b",
            r"我的(?:新)?(?:邮箱|电子邮件|邮件地址|email)",
        ),
    ),
    (
        "user",
        "address",
        _rules(
            r"\b(?:my|our)\s+(?:new\s+|current\s+|home\s+|mailing\s+|postal\s+|shipping\s+){0,6}address\b",
            r"\bnew\s+address\b",
            rf"{_I}{_AUX}{_ADV}\s+(?:live|living)\s+at\s+\d",
            r"我(?:的|家)(?:新)?(?:地址|住址|收货地址)",
        ),
    ),
    (
        "user",
        "team",
        _rules(
            rf"{_I}{_AUX}{_ADV}\s+(?:on|in|joined|joining|moved\s+to|switched\s+to|transferred\s+to|part\s+of)"
            r"\s+(?:the\s+|a\s+|a\s+new\s+|another\s+)?(?:[\w-]+\s+){0,2}team\b",
            rf"{_I}{_AUX}{_ADV}\s+(?:switched|changed)\s+teams\b",
            r"我.{0,6}?(?:在|加入了?|调到了?|调去了?|转到了?|去了)[\u4e00-\u9fffA-Za-z]{1,10}?(?:组|团队|部门)",
            r"我.{0,4}?换了?(?:个)?(?:组|团队|部门)",
        ),
    ),
    (
        "user",
        "role",
        _rules(
            r"\bmy\s+(?:new\s+|current\s+|official\s+){0,3}(?:job\s+)?(?:title|role|position)\b",
            rf"{_I}{_AUX}{_ADV}\s+(?:got\s+|been\s+)?promoted\b",
            rf"{_I}{_AUX}{_ADV}\s+work(?:ing)?\s+as\b",
            r"\bnew\s+(?:role|position|title)\s+as\b",
            r"我的(?:新)?(?:职位|职称|岗位|头衔)|我.{0,4}?(?:升职|被提拔|晋升)",
            r"我(?:现在)?(?:是|当上了?|成为了?).{0,8}?(?:工程师|经理|总监|主管|设计师|组长|负责人)",
        ),
    ),
    (
        "user",
        "location",
        _rules(
            rf"{_I}{_AUX}{_ADV}\s+(?:live|living|lived|moved|moving|relocated|relocating|based|staying|settled)"
            r"\s+(?:back\s+)?(?:to|in)\b",
            r"\bmy\s+(?:new\s+)?(?:home|city)\s+is\b",
            r"我.{0,8}?(?:住在|住到|搬到|搬去|搬来|搬回|搬家到|搬家去|迁到|定居|落户)",
            r"我.{0,6}?在[\u4e00-\u9fffA-Za-z]{1,10}?住|我家在",
        ),
    ),
    (
        "user",
        "employer",
        _rules(
            rf"{_I}{_AUX}{_ADV}\s+(?:work|working|worked|employed)\s+(?:at|for|by)\b",
            rf"{_I}{_AUX}{_ADV}\s+(?:started|began|start|got|landed|accepted|took)\s+(?:a\s+)?(?:new\s+)?"
            r"(?:job|position|gig|job\s+offer)\b",
            rf"{_I}{_AUX}{_ADV}\s+joined{_NAME_AHEAD}",
            rf"\bi(?:'m|\s+am)\s+(?:now|currently)\s+(?:at|with){_NAME_AHEAD}",
            rf"{_I}{_AUX}{_ADV}\s+(?:got\s+|been\s+|was\s+)?hired\s+(?:by|at)\b",
            rf"{_I}{_AUX}{_ADV}\s+(?:left|quit|resigned\s+from)(?:\s+(?:my\s+job|the\s+company|my\s+company)|{_NAME_AHEAD})",
            r"\bmy\s+(?:new\s+|current\s+)?(?:employer|company|workplace)\b",
            r"我.{0,6}?在.{1,12}?(?:工作|上班|任职|实习)",
            r"我.{0,6}?(?:换了?(?:一)?(?:份|个)?(?:新)?工作|跳槽|入职|辞职|离职|加入了?.{1,10}?公司)",
            r"我的?(?:公司|单位|雇主)(?:是|换成|改成|变成)",
        ),
    ),
    (
        "user",
        "diet",
        _rules(
            rf"\bi(?:'m|\s+am){_ADV}(?:\s+(?:no\s+longer|not))?\s+(?:a\s+)?(?:strict\s+)?{_DIETS}",
            rf"\bi{_AUX}{_ADV}\s+(?:went|gone|became|become|turned|going)\s+(?:back\s+to\s+being\s+)?(?:fully\s+)?"
            rf"(?:a\s+)?{_DIETS}",
            rf"\bi{_ADV}\s+(?:(?:no\s+longer|don't|do\s+not|started|stopped|never)\s+)?eat(?:s|ing)?\s+(?:no\s+)?"
            rf"{_FOODS}\b(?!\s+(?:for|at|tonight|today|yesterday|with))",
            rf"\bi{_ADV}\s+(?:gave\s+up|quit|avoid|cut\s+out)\s+{_FOODS}\b",
            r"\bmy\s+diet\b",
            r"我.{0,6}?(?:吃素|吃全素|素食|纯素|不吃肉|吃肉|吃荤|戒肉|不吃荤)",
        ),
    ),
    (
        "user",
        "manager",
        _rules(
            rf"\bmy\s+(?:new\s+|current\s+|direct\s+|line\s+){{0,4}}{_MANAGERS}\s+(?:is|is\s+now|will\s+be){_NAME_AHEAD}",
            rf"(?-i:[A-Z])\w{{0,40}}\s+(?:is|is\s+now|will\s+be)\s+my\s+(?:new\s+)?{_MANAGERS}\b",
            rf"{_I}{_ADV}\s+(?:now\s+)?report\s+to\b",
            r"我的(?:新)?(?:领导|老板|上司|经理|主管|直属领导)|我.{0,4}?向.{1,8}?汇报",
        ),
    ),
    (
        "user",
        "partner",
        _rules(
            rf"\bmy\s+(?:new\s+|current\s+)?{_PARTNERS}(?:'s\s+name)?\s+(?:is|is\s+now|is\s+called|is\s+named)"
            rf"{_NAME_AHEAD}",
            rf"(?-i:[A-Z])\w{{0,40}}\s+(?:is|is\s+now)\s+my\s+(?:new\s+)?{_PARTNERS}\b",
            rf"\bi(?:'m|\s+am){_ADV}\s+(?:dating|seeing|married\s+to|engaged\s+to)\b",
            rf"\bi{_AUX}{_ADV}\s+(?:married|broke\s+up\s+with|divorced|got\s+engaged)\b",
            r"我(?:的)?(?:新)?(?:女朋友|男朋友|老婆|老公|妻子|丈夫|对象|伴侣|未婚夫|未婚妻)(?:是|叫)",
        ),
    ),
    (
        "user",
        "car",
        _rules(
            rf"\bi{_ADV}\s+drive\s+(?:a|an)\b",
            r"\b(?:bought|got|sold|leased)\s+(?:a|an|my)\s+(?:new\s+|used\s+|second-hand\s+)?car\b",
            r"我(?:的)?(?:新)?车是|我.{0,4}?(?:买|换|卖)了?(?:一)?(?:辆|台)?(?:新)?车|我(?:现在)?开(?:的是|一辆)",
        ),
    ),
    (
        "project",
        "deadline",
        _rules(
            r"\b(?:deadline|due\s+date)s?\b",
            r"\b(?:is|are|was|now|be)\s+due\s+(?:on|by|next|this|tomorrow|today|in)\b",
            r"截止日期|截止时间|截止|期限|交付日期|交付时间|到期日|deadline",
        ),
    ),
    # "ran over budget" says how an event went, not what the budget is
    ("project", "budget", _rules(r"(?<!over )(?<!under )(?<!within )(?<!on )\bbudget\b", r"预算")),
)

_SUBJECT_OF = {"deadline": "project", "budget": "project"}
_SYNONYMS = {
    "phone": "phone",
    "phone_number": "phone",
    "phone_no": "phone",
    "mobile": "phone",
    "mobile_number": "phone",
    "mobile_phone": "phone",
    "cell": "phone",
    "cell_number": "phone",
    "cell_phone": "phone",
    "cellphone": "phone",
    "cell_phone_number": "phone",
    "telephone": "phone",
    "telephone_number": "phone",
    "number": "phone",
    "email": "email",
    "e_mail": "email",
    "email_address": "email",
    "e_mail_address": "email",
    "home_address": "address",
    "mailing_address": "address",
    "postal_address": "address",
    "job_title": "role",
    "title": "role",
    "position": "role",
    "job": "role",
    "employer": "employer",
    "company": "employer",
    "workplace": "employer",
    "boss": "manager",
    "supervisor": "manager",
    "line_manager": "manager",
    "direct_manager": "manager",
    "team_lead": "manager",
    "girlfriend": "partner",
    "boyfriend": "partner",
    "wife": "partner",
    "husband": "partner",
    "spouse": "partner",
    "fiance": "partner",
    "fiancee": "partner",
    "fiancé": "partner",
    "fiancée": "partner",
    "city": "location",
    "home": "location",
    "home_city": "location",
    "location": "location",
    "due_date": "deadline",
}
_DROPPED_WORDS = frozenset({"new", "current", "old", "present", "updated", "latest", "actual", "the", "a", "an", "own"})
_VAGUE_HEADS = frozenset(
    [
        "favorite",
        "favourite",
        "guess",
        "point",
        "question",
        "problem",
        "issue",
        "concern",
        "fault",
        "pleasure",
        "turn",
        "bad",
        "opinion",
        "understanding",
        "hope",
        "advice",
        "idea",
        "feeling",
        "impression",
        "worry",
        "request",
        "answer",
        "reply",
        "thought",
        "mistake",
        "view",
        "plan",
        "goal",
        "dream",
        "wish",
        "excuse",
        "name",
    ]
)
_MY_X_IS = re.compile(
    r"\b(?:my|our)\s+([a-z][a-z -]{1,30}?)\s+(?:is|are|was\s+changed\s+to|changed\s+to|has\s+changed\s+to"
    r"|has\s+been\s+changed\s+to|is\s+now)\b",
    re.I,
)
_X_IS_NOW = re.compile(
    r"\b(?:the|my|our)\s+([a-z][a-z -]{1,30}?)\s+(?:is\s+now|are\s+now|has\s+changed\s+to|changed\s+to"
    r"|was\s+changed\s+to|has\s+been\s+changed\s+to|is\s+changed\s+to|(?:has\s+|was\s+|has\s+been\s+)?moved\s+to"
    r"|(?:was\s+|has\s+been\s+)?updated\s+to|(?:has\s+)?switched\s+to)\b",
    re.I,
)

_CHANGE_CUE = re.compile(
    r"\b(?:now|again|instead|any\s?more|no\s+longer|no\s+more|actually|used\s+to|called\s+off|pushed\s+back"
    r"|brought\s+forward|moved\s+up|switch(?:ed|ing)?|chang(?:ed|ing)|mov(?:ed|ing)|relocat(?:ed|ing)"
    r"|rescheduled|postponed|delayed|replaced|quit|left|resigned|cancel(?:l?ed|ling|s)?|joined|hired|promoted"
    r"|started|stopped|became|become|went\s+" + _DIETS + r")\b"
    r"|\b(?:update|updated|correction)\s*:"
    r"|\bnew\s+(?!york|zealand|jersey|delhi|mexico|orleans|hampshire|england|year)[a-z]"
    r"|改成|改为|改到|改在|改了|改期|搬到|搬去|搬来|搬回|搬家|换了|换成|换到|换掉|不再|现在|已经.{0,3}不|取消"
    r"|推迟|延期|延后|提前到|提前了|变成|变为|调到|调整为|更新|从今以后|以后都|又开始|重新|跳槽|辞职|离职"
    r"|新的|不[\u4e00-\u9fff]{1,3}了",
    re.I,
)


# Attributes of a person that last until changed: a statement setting one is never a passing
# event, even when it says when ("I moved to Lisbon yesterday", "started at Feedzai this week").
LASTING_ATTRIBUTES = frozenset(
    {"name", "phone", "email", "address", "team", "role", "location", "employer", "diet", "manager", "partner", "car"}
)


def is_lasting(slot: str | None) -> bool:
    """Whether ``slot`` (``"subject:attribute"``) is one of someone's ``LASTING_ATTRIBUTES``."""
    return slot is not None and slot.rpartition(":")[2] in LASTING_ATTRIBUTES


def detect_slot(content: str) -> str | None:
    """Return ``"subject:attribute"`` if the text sets a recognisable attribute, else None.

    The rules run on the text's bounded spans (``text.rule_spans``): a text of normal length is
    one span, and a long one costs time in proportion to its length whatever the rule.
    """
    spans = rule_spans(content)
    return _explicit_slot(content, spans) or _category_slot(content) or _generic_slot(content, spans)


def change_cue(content: str) -> bool:
    """Whether the text signals a change of an earlier value ("now", "moved to", "no longer", 改成, 不再…)."""
    return in_spans(_CHANGE_CUE, content)


def _explicit_slot(content: str, spans: Sequence[str]) -> str | None:
    for subject, attribute, rules in _SLOT_RULES:
        for rule in rules:
            for span in spans:
                if match := rule.search(span):
                    if subject == "project":
                        return project_slot(content, attribute)
                    return f"{owner_of(span, match.start()) or subject}:{attribute}"
    return None


def _category_slot(content: str) -> str | None:
    lowered = content.lower()
    named = {match.lastgroup for match in _CATEGORY_PATTERN.finditer(lowered)}
    for attribute in _CATEGORIES:
        if attribute in named and _about_project(lowered, attribute):
            return project_slot(content, attribute)
    return None


def _about_project(lowered: str, attribute: str) -> bool:
    return attribute in lowered or any(cue in lowered for cue in _PROJECT_CUES)


def _generic_slot(content: str, spans: Sequence[str]) -> str | None:
    for pattern in (_MY_X_IS, _X_IS_NOW):
        match = next((m for span in spans if (m := pattern.search(span))), None)
        attribute = _attribute(match.group(1)) if match else None
        if match and attribute:
            subject = _SUBJECT_OF.get(attribute, "user")
            if subject == "project":
                return project_slot(content, attribute)
            return f"{owner_of(match.string, match.start()) or subject}:{attribute}"
    return None


def _attribute(phrase: str) -> str | None:
    """``"new phone number"`` → ``phone``, ``"favorite color"`` → ``favourite_colour``; None when vague."""
    words = [w for w in phrase.lower().replace("-", " ").split() if w not in _DROPPED_WORDS]
    if not words or words[0] in ("it", "this", "that", "there", "what", "one") or " ".join(words) in _VAGUE_HEADS:
        return None
    key = "_".join(words).replace("favorite", "favourite").replace("color", "colour")
    return _SYNONYMS.get(key, key)


__all__ = ["LASTING_ATTRIBUTES", "change_cue", "detect_slot", "is_lasting"]

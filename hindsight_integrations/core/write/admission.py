"""What is worth remembering, and how much, by rules that run offline (docs/architecture.md, "Writing").

Admission is generous, ranking is not: every user statement that carries content becomes a
memory, and importance (not the filter) decides how it ranks and how long it survives decay.
A minimum word count used to drop real facts ("I am allergic to peanuts.", "Use tabs not
spaces"), and keyword matching used to store questions ("Which framework do I like?") as
preferences and tool tracebacks as context. So, in order:

1. Dropped outright: empty text, punctuation or emoji only, greetings, acknowledgements,
   thanks and chain-of-thought.
2. Kept as conversation turns only (``remember=False``, kind TURN): questions and requests
   with no statement in them, and error output (tracebacks, ``KeyError: …``, any failing tool
   result). Neither says anything true about the user or the project. A question that also
   states something ("I moved to Berlin last week, any tips?") keeps its statement.
3. User statements get a kind from what they mean: corrections, preferences and standing
   instructions (first-person likes, diet and health, imperatives addressed to the assistant),
   constraints, decisions, personal and project context, habits and tools, events; anything
   else is a plain fact. Importance: explicit preference, constraint or correction 0.9;
   decisions, habits, personal and project context 0.8; events 0.7; plain statements 0.5;
   short low-content statements 0.3.
4. Tool results are kept when they describe configuration or state, dropped when they are
   transient lookups or errors; assistant and system turns only when they state a decision or
   an action (they mostly restate the user).

Every pattern is lower-case and compiled once: ``assess`` lowercases once and runs on every
write, so it stays at tens of microseconds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..language.text import in_spans, rule_spans
from ..model.records import Kind, Role

_SEP = r"[\s!.,?~。！，？、:;)(…\-]*"
# No word here is two others run together ("goodbye" is "good" + "bye", "no thanks" is "no" + "thanks",
# each still matched): a text of such words could split two ways per word, exponential to refuse.
_ACK_WORD = (
    r"(hi|hello|hey|yo|hiya|howdy|greetings|good (afternoon|evening|night|day)|morning|"
    r"thanks?( you)?( so much| a lot| very much)?|thank u|thx|ty|tysm|cheers|"
    r"ok(ay)?|k++|sure( thing)?|cool|great|nice|awesome|good|fine|got it|gotcha|sounds good|makes sense|i see|"
    r"yes( please)?|yeah|yep|yup|no|nope|right|exactly|indeed|true|of course|absolutely|will do|"
    r"bye|see (you|ya)|later|lol|lmao|ha[ha]*+|he[he]*+|hm++|u[hm]++|oh|ah|wow|alright|perfect|np|"
    r"looks good|lgtm|that (works|worked|helps|helped|fixed it)|it works( now)?|works for me|"
    r"good to know|that'?s (great|perfect|fine|good|right|all|it)|"
    r"no (problem|worries)|don'?t worry( about it)?|never ?mind|nvm|you'?re welcome|welcome|there|all|everyone|"
    r":\)|:d|:p|xd|"
    r"again|olá|ola|hola|oi|bom dia|boa (tarde|noite)|buen[oa]s( d[ií]as| tardes| noches)?|bonjour|bonsoir|salut|"
    r"coucou|ciao|salve|hallo|servus|moin|guten (morgen|tag|abend)|hej|hei|namaste|merci( beaucoup)?|gracias|"
    r"obrigad[oa]|danke( sch[öo]n)?|grazie|tchau|adi[oó]s|au revoir|tsch[üu]ss|"
    r"你好|您好|大家好|谢谢你?|多谢|感谢|好的|好吧|好|嗯++|哈++|呵++|再见|拜拜|晚安|早上好|收到|明白了?|知道了|了解|"
    r"懂了|行|可以|没问题|不客气|没事|对|是的|哦++|噢++)"
)
ACK_MAX_CHARS = 200
"""Longest text read as a bare acknowledgement (a long "thanks so much, that works perfectly, see you
tomorrow!" is 55): past it a text says more than thanks, and the match stays short whatever the words."""
_ACK = re.compile(rf"^(?=[\s\S]{{0,{ACK_MAX_CHARS}}}\Z){_SEP}{_ACK_WORD}({_SEP}{_ACK_WORD})*{_SEP}$")
_CONTENT_CHAR = re.compile(r"[^\W_]")  # a letter, digit or CJK character: emoji and punctuation are not
_THOUGHT = re.compile(r"^\s*(<think>|thought:|thinking:|let me think|reasoning:|chain of thought)")

# Error output: a Python traceback anywhere, or a first line such as "KeyError: 'x'", "Error: …",
# "fatal: …". Any role pasting these is reporting a failure, not stating a fact.
_ERROR = re.compile(
    r"traceback \(most recent call last\)|"
    r"^\s*([\w.]*(error|exception)|fatal|panic|errno \d+|e\d{3,4})(\[\w+\])?\s*:"
)
# Tool results fail in more shapes; a tool has no opinion to lose, so the net is wider.
_TOOL_ERROR = re.compile(
    r"^\W*(error|err|failed|failure|exception|fatal)\b|\b(connection refused|timed out|permission denied|"
    r"no such file or directory|command not found|segmentation fault|exit (code|status) [1-9]|"
    r"status( code)? [45]\d\d)\b"
)

# Questions. A sentence is one when it ends in "?" or is built like one: a wh-word followed by
# an auxiliary ("which framework do i like"), an auxiliary followed by a subject ("is the db
# postgres"), a request for information, or a Chinese question form. "What I want is …" and
# "When I was young …" are statements: the wh-word is followed by a subject, not an auxiliary.
_AUX = (
    r"(do|does|did|is|are|was|were|am|can|could|would|will|should|shall|may|might|have|has|had|"
    r"isn'?t|aren'?t|don'?t|doesn'?t|didn'?t|can'?t|won'?t|wouldn'?t|shouldn'?t)"
)
_SUBJECT = r"(i|you|we|they|he|she|it|there|this|that|these|those|my|your|our|their|his|her|its|the|anyone)"
_INTERROGATIVE = re.compile(
    rf"^\W*((what|which|who|whom|whose|where|when|why|how)('s|'re|'d| {_AUX}\b| \w+ {_AUX} {_SUBJECT}\b|"
    rf" (about|else|come|much|many|long|often|far|old|to|if|not)\b)|{_AUX} {_SUBJECT}\b|any (tips|ideas|suggestions|"
    r"recommendations|advice|thoughts)\b|(thoughts|ideas|suggestions)\W*$|do you know\b|"
    # one-off requests ("write a poem", "tell me about Berlin"); with a standing qualifier they are
    # instructions ("write all commit messages in English") and stay statements
    r"(please\W+)?(tell me|show me|explain|(write|draft|generate|create|find) (a|an|me)|summari[sz]e|translate|"
    r"give me|search for|look up|list (all|the|my)|help me)\b"
    r"(?!.*\b(always|never|only|every|all|from now on|in (english|french|german|"
    r"spanish|italian|chinese|japanese|british|american|plain))\b))|"
    r"[吗呢]\W*$|^\W*(为啥|几)|(什么|哪[里个些种儿]?|谁|怎么|多少)(?![都也里个些种儿])|"
    r"是不是|有没有|能不能|可不可以|要不要|对不对|好不好"
)
_QUESTION_MARK = re.compile(r"[?？]")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*|\n+")
_CLAUSE = re.compile(r"[,;:，；：]|\s[-–—]\s")
# A first-person clause states something even before a "?": "I use vim, thoughts?"
_STATEMENT_OPENER = re.compile(r"^\W*(i|i'm|i've|i'd|we|we're|we've|we'll)\b|^\W*我")
# "Could you always answer in French?" asks for a standing instruction, not for information.
_POLITE_INSTRUCTION = re.compile(
    r"^\W*(can|could|would|will) you (please )?(always|never|stop|avoid|not|no longer|from now on|remember)\b"
)

_CORRECTION = re.compile(
    r"\b(actually|correction|i meant|i mean|not (?!only|just)[^.,]{1,40}? but|instead of|no longer|"
    r"changed (it|that|to)|switched (to|from)|turns out|scratch that|that'?s (wrong|not right|incorrect)|"
    r"i was wrong|mistake)\b|update:|"
    r"^\W*(no|nope|wrong)\W+(it'?s|it is|i|we|that'?s|the|my|our)\b|"
    r"其实|更正|纠正|不是.{1,20}而是|改成|改为|搞错|说错|我是说|我的意思是|不再"
)
_PREFERENCE = re.compile(
    # first-person likes and dislikes
    r"\b(i (really |strongly |much |definitely )?(prefer|like|love|hate|dislike|enjoy|want|need|can'?t stand|"
    r"can'?t (eat|drink|have))|i don'?t (like|want|eat|drink|enjoy)|i (never|always|only) |my favou?rite|"
    # diet and health: hard constraints on anything the assistant suggests
    r"i'?m (allergic|vegetarian|vegan|pescatarian|lactose|gluten|celiac|coeliac|diabetic|intolerant|kosher|halal)|"
    r"i am (allergic|vegetarian|vegan|pescatarian|lactose|gluten|celiac|coeliac|diabetic|intolerant|kosher|halal)|"
    r"allergic to|call me|from now on|going forward)\b|"
    # imperatives addressed to the assistant; verbs that also start one-off tasks ("write a poem")
    # count only with a standing qualifier ("always answer in French", "reply in English only")
    r"^\W*(please\W+)?(use|always|never|don'?t|do not|avoid|stop|keep|prefer|no more|make sure|"
    r"only (use|reply|answer|respond|write|speak|show|give))\b(?!\W*$)|"
    r"^\W*(please\W+)?(answer|reply|respond|write|speak|talk|format|address)\b.*\b(always|never|only|every|all|"
    r"in (english|french|german|spanish|italian|chinese|japanese|british|american|plain))\b|"
    r"please (always|never|use|don'?t|do not|keep|make|avoid|stop)|"
    r"喜欢|偏好|讨厌|爱吃|爱喝|希望|过敏|素食|吃素|忌口|不吃|不喝|请(总是|一直|不要|别|用|务必)|总是|从不|永远|"
    r"以后(都|请|别|不要|不|一律|只|用|总)|^\W*(请|你)?(千万)?别(?![人的处])|别(用|再|给|加|写|说|回|发|放)|不要"
)
_CONSTRAINT = re.compile(
    r"\b(must|must not|mustn'?t|should not|shouldn'?t|do not|don'?t|not allowed|required?|"
    r"requirement|deadline|due (on|by|date|\d)|budget|limit|at most|at least|no more than|maximum|minimum|"
    r"before (the )?(end|eod|noon|midnight|launch|release|\d|monday|tuesday|wednesday|thursday|friday)|"
    r"by (monday|tuesday|wednesday|thursday|friday|saturday|sunday|eod|the end))\b|"
    r"必须|不能|不可以|截止|预算|最多|至少|之前完成"
)
_DECISION = re.compile(
    r"\b((we|i) (have |'ve )?(chose|chosen|picked|went with|decided|settled on|agreed|opted for|selected)|"
    r"(we|i)('re| are| am|'m) going with|(we|i)('ll| will) go with|let'?s go with|let'?s use|decided to|decision|"
    r"the plan is|we'?re switching|we agreed)\b|"
    r"决定|选了|选择了|选定|定了|就用|采用|计划是|方案是"
)
_CONTEXT = re.compile(
    r"\b(project|we use|we'?re using|we run|we deploy|our (team|stack|app|service|db|database|api|product|company|"
    r"repo|code|server|client|customers?)|the (stack|database|server|repo|codebase|service|app)|runs on|deployed|"
    r"database|framework|version|i work (at|for|on|as|in)|my (name|job|role|company|team|email|address|phone|"
    r"manager|boss|order|account|birthday|wife|husband|partner|son|daughter|kids?|dog|cat|city|home|age)|i live|"
    r"i'?m (a|an) |i am (a|an) |i moved|i'?m from|i am from|i was born|i have (a|an|two|three|\d)|"
    r"order (number|#|no)|ticket|account)\b|"
    r"项目|数据库|我们用|部署|我叫|我住在|我在.{0,10}(工作|上班)|我是|我家|我的(名字|工作|公司|狗|猫|孩子|老婆|老公)|搬到"
)
# Habits and tools: how this user works or lives ("I use vim keybindings", "I deploy with Kamal").
_HABIT = re.compile(
    r"\b(i|we) (usually |mostly |normally |often |typically |mainly )?(use|drink|eat|run|deploy|code|program|"
    r"write|develop|host|cook|commute|wear|play|build|ship|test|edit|type)s?\b|"
    r"^\W*我(们)?(一般|通常|平时|每天|经常|主要)?(用|喝|吃|跑|部署|写|开发|在用|使用)"
)
_EVENT = re.compile(
    r"\b(today|tomorrow|tonight|yesterday|next (week|month|year|monday|tuesday|wednesday|thursday|friday)|"
    r"this (week|weekend|month)|on (monday|tuesday|wednesday|thursday|friday|saturday|sunday)|meeting|appointment|"
    r"flight|trip|interview|birthday party|at \d{1,2}(:\d\d)?\s?(am|pm))\b|明天|今天|昨天|下周|会议|约了|面试|航班"
)
_TRANSIENT_TOOL = re.compile(
    r"\b(weather|temperature|forecast|current time|time is|stock price|exchange rate|search results?|"
    r"news|traffic)\b",
)
_STATE_TOOL = re.compile(
    r"\b(config|configuration|setting|version|installed|status|created|updated|saved|path|port|url|env)\b"
)
_DIGIT = re.compile(r"\d")
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_CJK = re.compile(r"[\u4e00-\u9fff\u3040-\u30ff\uac00-\ud7af]")
_TODAY = re.compile(r"\b(today|tonight)\b|今天")
_TOMORROW = re.compile(r"\b(tomorrow)\b|明天")
_THIS_WEEK = re.compile(r"\b(this week|this weekend|on (monday|tuesday|wednesday|thursday|friday|saturday|sunday))\b")
_NEXT_WEEK = re.compile(r"\bnext (week|monday|tuesday|wednesday|thursday|friday)\b|下周")
_ASSISTANT_DECISION = re.compile(
    r"\b(we decided|decided to|decision|we'?ll go with|let'?s go with|the plan is|agreed|i'?ve (set|configured|created|"
    r"scheduled|booked|deployed|changed|updated)|is now (set|configured|scheduled)|todo|next step)\b|"
    r"决定|计划是|已(设置|创建|安排)",
)


CONTEXT_IMPORTANCE = 0.8
"""Decisions, habits, personal and project context (see the module docstring)."""


@dataclass(frozen=True)
class WriteDecision:
    """The filter's verdict on one piece of text.

    ``remember`` False with kind TURN means: keep it in the conversation (the working window),
    never as a long-term memory. ``importance`` still ranks the turn itself.
    """

    remember: bool
    kind: Kind
    importance: float
    reason: str
    ttl_seconds: int | None = None


def _word_count(text: str) -> int:
    """Words, counting two CJK characters as one (Chinese has no spaces)."""
    return len(_WORD.findall(text)) + len(_CJK.findall(text)) // 2


def _statement_part(text: str) -> str:
    """The part of ``text`` that states something: '' when it only asks (or asks and greets).

    Most writes have no question mark and no question form, and return at once.
    """
    if not _QUESTION_MARK.search(text) and not _INTERROGATIVE.search(text):
        return text
    kept: list[str] = []
    for sentence in (span for part in _SENTENCE.split(text) for span in rule_spans(part)):
        sentence = sentence.strip()
        if not sentence or _ACK.match(sentence):
            continue
        if not _QUESTION_MARK.search(sentence) and not _INTERROGATIVE.search(sentence):
            kept.append(sentence)
            continue
        # A question sentence may open with a statement: "I moved to Berlin last week, any tips?"
        clauses = _CLAUSE.split(sentence)
        for clause in clauses[:-1]:
            clause = clause.strip()
            if not clause or _ACK.match(clause):
                continue
            words = _word_count(clause)
            if _INTERROGATIVE.search(clause) or not (words >= 4 or (words >= 2 and _STATEMENT_OPENER.match(clause))):
                break
            kept.append(clause)
    return " ".join(kept)


def assess(content: str, role: Role = Role.USER) -> WriteDecision:
    """Decide whether ``content`` is worth a long-term memory, as what kind, how important."""
    text = content.strip().lower()  # the patterns are lower-case: one lower() beats IGNORECASE matching
    if not _CONTENT_CHAR.search(text):
        return WriteDecision(False, Kind.TURN, 0.0, "empty, punctuation or emoji only")
    if _THOUGHT.search(text):
        return WriteDecision(False, Kind.TURN, 0.0, "chain-of-thought is never stored")
    if _ACK.match(text):
        return WriteDecision(False, Kind.TURN, 0.2, "greeting or acknowledgement")
    if _ERROR.search(text) or (role is Role.TOOL and in_spans(_TOOL_ERROR, text)):
        return WriteDecision(False, Kind.TURN, 0.2, "error output: kept as a conversation turn only, not a fact")
    if role is Role.TOOL:
        if in_spans(_TRANSIENT_TOOL, text) and not in_spans(_STATE_TOOL, text):
            return WriteDecision(False, Kind.TURN, 0.2, "transient tool lookup")
        return WriteDecision(True, Kind.CONTEXT, 0.8, "tool result describing state")
    if role is not Role.USER:
        # Assistant and system turns mostly restate the user; keep only decisions and actions.
        said = _statement_part(text)
        if in_spans(_ASSISTANT_DECISION, said) and _word_count(said) >= 4:
            return WriteDecision(True, Kind.CONTEXT, 0.7, "decision or action stated by the assistant")
        return WriteDecision(False, Kind.TURN, 0.3, f"{role.value} turn without a decision or new fact")
    if _POLITE_INSTRUCTION.match(text):
        return WriteDecision(True, Kind.PREFERENCE, 0.9, "standing instruction phrased as a question")
    said = _statement_part(text)
    if not said:
        return WriteDecision(False, Kind.TURN, 0.3, "question or request: kept as a conversation turn only")
    return _user_statement(said)


def _user_statement(text: str) -> WriteDecision:
    """Kind and importance of a user statement (admitted whatever its length: importance ranks it).

    Each rule is tried on the text's bounded spans (``text.rule_spans``); in a text longer than
    one span, a rule's ``^`` is the start of a span, i.e. of one of its sentences.
    """
    if in_spans(_CORRECTION, text):
        return WriteDecision(True, Kind.CORRECTION, 0.9, "correction of an earlier fact")
    if in_spans(_PREFERENCE, text):
        return WriteDecision(True, Kind.PREFERENCE, 0.9, "explicit preference or instruction")
    if in_spans(_DECISION, text):
        return WriteDecision(True, Kind.CONTEXT, 0.8, "decision")
    if in_spans(_EVENT, text):
        return WriteDecision(True, Kind.EVENT, 0.7, "time-bound event", ttl_seconds=event_ttl(text))
    if in_spans(_CONSTRAINT, text):
        return WriteDecision(True, Kind.CONTEXT, 0.9, "explicit constraint")
    if in_spans(_HABIT, text):
        return WriteDecision(True, Kind.PREFERENCE, 0.8, "habit or tool the user relies on")
    if in_spans(_CONTEXT, text):
        return WriteDecision(True, Kind.CONTEXT, CONTEXT_IMPORTANCE, "project or personal context")
    if _word_count(text) < 4 and not _DIGIT.search(text):
        return WriteDecision(True, Kind.FACT, 0.3, "short statement: kept, ranked low")
    return WriteDecision(True, Kind.FACT, 0.5, "user statement")


def event_ttl(text: str) -> int | None:
    """Time-bound facts expire: 'tomorrow' is stale in a couple of days, 'next week' in ten.

    Also what an LLM extraction calls an event gets its TTL here: the model says what happens,
    the rules when it is over.
    """
    text = text.lower()
    if in_spans(_TODAY, text):
        return 2 * 86400
    if in_spans(_TOMORROW, text):
        return 3 * 86400
    if in_spans(_THIS_WEEK, text):
        return 8 * 86400
    if in_spans(_NEXT_WEEK, text):
        return 15 * 86400
    return None

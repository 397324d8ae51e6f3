"""Word lists and compiled patterns behind ``values.py``'s value extraction.

Split out of ``values.py`` to keep each module a readable size: this module holds only data
(month, weekday, relative-day, currency and city tables, Chinese numerals) and the regular
expressions built from them; ``values.py`` holds the extractors that normalise what these
patterns match and the public API. Nothing here imports from ``values.py``.
"""

from __future__ import annotations

import re

_MONTHS = {
    "january": 1,
    "jan": 1,
    "february": 2,
    "feb": 2,
    "march": 3,
    "mar": 3,
    "april": 4,
    "apr": 4,
    "may": 5,
    "june": 6,
    "jun": 6,
    "july": 7,
    "jul": 7,
    "august": 8,
    "aug": 8,
    "september": 9,
    "sept": 9,
    "sep": 9,
    "october": 10,
    "oct": 10,
    "november": 11,
    "nov": 11,
    "december": 12,
    "dec": 12,
}
_MONTH_NAMES = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_WEEKDAYS = {
    "monday": "monday",
    "mon": "monday",
    "tuesday": "tuesday",
    "tues": "tuesday",
    "tue": "tuesday",
    "wednesday": "wednesday",
    "wed": "wednesday",
    "thursday": "thursday",
    "thurs": "thursday",
    "thur": "thursday",
    "thu": "thursday",
    "friday": "friday",
    "fri": "friday",
    "saturday": "saturday",
    "sat": "saturday",
    "sunday": "sunday",
    "sun": "sunday",
}
_ZH_WEEKDAYS = {
    "一": "monday",
    "二": "tuesday",
    "三": "wednesday",
    "四": "thursday",
    "五": "friday",
    "六": "saturday",
    "日": "sunday",
    "天": "sunday",
    "末": "weekend",
}
_ZH_QUALIFIER = {"下": "next", "上": "last", "这": "", "本": "", "": ""}
_RELATIVE = {
    "today": "today",
    "tonight": "tonight",
    "tomorrow": "tomorrow",
    "yesterday": "yesterday",
    "day after tomorrow": "day after tomorrow",
    "day before yesterday": "day before yesterday",
    "next week": "next week",
    "last week": "last week",
    "this week": "this week",
    "next month": "next month",
    "last month": "last month",
    "this month": "this month",
    "next year": "next year",
    "last year": "last year",
    "this year": "this year",
    "next weekend": "next weekend",
    "last weekend": "last weekend",
    "weekend": "weekend",
    "今天": "today",
    "今晚": "tonight",
    "明天": "tomorrow",
    "明早": "tomorrow",
    "明晚": "tomorrow",
    "昨天": "yesterday",
    "后天": "day after tomorrow",
    "前天": "day before yesterday",
    "下周": "next week",
    "下星期": "next week",
    "下个星期": "next week",
    "上周": "last week",
    "上星期": "last week",
    "上个星期": "last week",
    "本周": "this week",
    "这周": "this week",
    "这个星期": "this week",
    "下个月": "next month",
    "下月": "next month",
    "上个月": "last month",
    "上月": "last month",
    "这个月": "this month",
    "本月": "this month",
    "明年": "next year",
    "去年": "last year",
    "今年": "this year",
    "周末": "weekend",
}
_CURRENCIES = {
    "$": "usd",
    "us$": "usd",
    "usd": "usd",
    "dollar": "usd",
    "dollars": "usd",
    "bucks": "usd",
    "美元": "usd",
    "美金": "usd",
    "€": "eur",
    "eur": "eur",
    "euro": "eur",
    "euros": "eur",
    "欧元": "eur",
    "£": "gbp",
    "gbp": "gbp",
    "pound": "gbp",
    "pounds": "gbp",
    "英镑": "gbp",
    "¥": "cny",
    "￥": "cny",
    "元": "cny",
    "块": "cny",
    "块钱": "cny",
    "人民币": "cny",
    "rmb": "cny",
    "cny": "cny",
    "yuan": "cny",
    "日元": "jpy",
    "jpy": "jpy",
    "yen": "jpy",
}
_ZH_CITIES = {
    "北京": "beijing",
    "上海": "shanghai",
    "广州": "guangzhou",
    "深圳": "shenzhen",
    "杭州": "hangzhou",
    "南京": "nanjing",
    "苏州": "suzhou",
    "成都": "chengdu",
    "重庆": "chongqing",
    "武汉": "wuhan",
    "西安": "xian",
    "天津": "tianjin",
    "长沙": "changsha",
    "厦门": "xiamen",
    "青岛": "qingdao",
    "大连": "dalian",
    "沈阳": "shenyang",
    "郑州": "zhengzhou",
    "合肥": "hefei",
    "昆明": "kunming",
    "香港": "hong kong",
    "澳门": "macau",
    "台北": "taipei",
    "东京": "tokyo",
    "纽约": "new york",
    "伦敦": "london",
    "巴黎": "paris",
    "新加坡": "singapore",
}
_SCALES = {"k": 1000, "thousand": 1000, "million": 10**6, "billion": 10**9, "bn": 10**9, "千": 1000, "万": 10**4}
_SCALES["亿"] = 10**8
_ZH_DIGITS = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_ZH_UNITS = {"十": 10, "百": 100, "千": 1000}
_ZH_BIG_UNITS = {"万": 10**4, "亿": 10**8}
# Capitalised words that start no name: pronouns, articles, titles, greetings and the like.
_NOT_NAMES = frozenset(
    [
        "i",
        "i'm",
        "i've",
        "i'd",
        "i'll",
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "of",
        "on",
        "at",
        "in",
        "to",
        "for",
        "from",
        "by",
        "with",
        "without",
        "about",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "my",
        "our",
        "your",
        "his",
        "her",
        "their",
        "its",
        "it",
        "it's",
        "this",
        "that",
        "these",
        "those",
        "not",
        "no",
        "yes",
        "please",
        "thanks",
        "thank",
        "hi",
        "hello",
        "hey",
        "dear",
        "ok",
        "okay",
        "mr",
        "mrs",
        "ms",
        "dr",
        "sir",
        "madam",
        "update",
        "correction",
        "note",
        "actually",
        "also",
        "so",
        "then",
        "if",
        "when",
        "what",
        "who",
        "where",
        "why",
        "how",
        "we",
        "you",
        "he",
        "she",
        "they",
        "me",
        "us",
        "them",
    ]
)

_ZH_NUMERAL = "零〇一二两三四五六七八九十百千万亿"
_ZH_CLASSIFIERS = (
    "个|位|次|天|年|岁|周|星期|小时|分钟|秒|人|本|张|台|辆|家|件|条|层|楼|间|只|份|套|款|项|篇|页|"
    "公里|米|斤|公斤|倍|名|所|座|部|双|杯|瓶|箱|元|块|万|千|亿|百"
)
_MONTH_ALT = "|".join(sorted(_MONTHS, key=len, reverse=True))
_WEEKDAY_ALT = "|".join(sorted(_WEEKDAYS, key=len, reverse=True))
_CURRENCY_WORDS = "|".join(c for c in sorted(_CURRENCIES, key=len, reverse=True) if c.isalpha() and c.isascii())
_CURRENCY_CJK = "|".join(sorted((c for c in _CURRENCIES if not c.isascii() and len(c) > 1), key=len, reverse=True))
# Thousands groups are bounded (30 digits, 12 groups): "111,111,…" tried from every group is
# otherwise quadratic. A plain run of digits is read whole, however long (one pass).
_NUMBER = r"\d{1,3}(?:\.\d{3}){2,12}(?![\d.])|\d{1,30}(?:,\d{3}){1,12}(?:\.\d{1,30})?|\d+(?:\.\d+)?"

_URL = re.compile(r"(?:https?://|www\.)[^\s<>\"'，。）)]+", re.I)
# The lengths an address can have (RFC 5321: 64 before the @, 63 a label): an unbounded local
# part is tried from every character of a long word, the square of its length.
_EMAIL = re.compile(r"[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,8}", re.ASCII)
_DOMAIN = re.compile(
    r"(?<![A-Za-z0-9_@.-])[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:com|org|net|io|dev|ai|cn|co|app)(?![A-Za-z0-9_-])", re.I
)
_ISO_DATE = re.compile(r"(?<!\d)(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?!\d)")
_ZH_DATE = re.compile(rf"(?:(\d{{4}})年)?([\d{_ZH_NUMERAL}]{{1,3}})月([\d{_ZH_NUMERAL}]{{1,3}})[日号]")
_DAY_MONTH = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?(?:\s+of)?\s+({_MONTH_ALT})\.?(?:,?\s+(\d{{4}}))?\b", re.I)
_MONTH_DAY = re.compile(rf"\b({_MONTH_ALT})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(\d{{4}})\b)?", re.I)
_SLASH_DATE = re.compile(r"(?<![\d/])(\d{1,2})/(\d{1,2})(?:/(\d{2}|\d{4}))?(?![\d/])")
_IP = re.compile(r"(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?![\d.])")
_PHONE = re.compile(
    r"(?<![A-Za-z0-9_+,.-])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)[\s.-]?)?\d{2,4}(?:[.-]\d{2,5}){1,3}(?![A-Za-z0-9_-])"
    r"|(?<![A-Za-z0-9_+])\+\d{1,3}(?:[\s.-]?\(?\d{2,5}\)?){2,4}(?![A-Za-z0-9_-])"
)
_CLOCK_12 = re.compile(r"(?<![\d:])(\d{1,2})(?::(\d{2}))?\s*(a\.?m\.?|p\.?m\.?)(?![a-z])", re.I)
_CLOCK_24 = re.compile(r"(?<![\d:])(\d{1,2}):(\d{2})(?::\d{2})?(?![\d:])")
_NOON = re.compile(r"\b(noon|midday|midnight)\b", re.I)
_ZH_TIME = re.compile(
    rf"(上午|早上|早晨|中午|下午|傍晚|晚上|凌晨)?([\d{_ZH_NUMERAL}]{{1,3}})点(?:钟)?(半|一刻|三刻|([\d{_ZH_NUMERAL}]{{1,3}})分)?"
)
_SCALED = re.compile(rf"(?<![A-Za-z0-9_.])({_NUMBER})\s*(k|thousand|million|billion|bn|千|万|亿)(?![a-z])", re.I)
_CODE = re.compile(
    r"(?<![A-Za-z0-9_.-])(?=[A-Za-z0-9_.-]*[A-Za-z])(?=[A-Za-z0-9_.-]*\d)[A-Za-z0-9][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*"
)
_PLAIN_NUMBER = re.compile(_NUMBER)
_CURRENCY = re.compile(
    rf"\b(?:{_CURRENCY_WORDS})\b|(?:US)?\$|{_CURRENCY_CJK}|[€£¥￥]|(?<=[\d{_ZH_NUMERAL}])\s?[元块]", re.I
)
_ZH_WEEKDAY = re.compile(r"(下个?|上个?|这个?|本)?(?:周|星期|礼拜)([一二三四五六日天末])")
_EN_WEEKDAY = re.compile(rf"\b(?:(next|last|this|coming)\s+)?(?:({_WEEKDAY_ALT})\b\.?)", re.I)
_RELATIVE_WORDS = re.compile(
    r"\b(?:"
    + "|".join(w.replace(" ", r"\s+") for w in sorted((w for w in _RELATIVE if w.isascii()), key=len, reverse=True))
    + r")\b|"
    + "|".join(sorted((w for w in _RELATIVE if not w.isascii()), key=len, reverse=True)),
    re.I,
)
_EN_MONTH = re.compile(r"\b(" + "|".join(_MONTH_NAMES) + r")\b", re.I)
_ZH_MONTH = re.compile(rf"([\d{_ZH_NUMERAL}]{{1,3}})月(?!份?[\d{_ZH_NUMERAL}])")
_ZH_COUNT = re.compile(rf"(第)?([{_ZH_NUMERAL}]{{1,20}})(?=(?:{_ZH_CLASSIFIERS}))|第([{_ZH_NUMERAL}]{{1,20}})")
_ZH_CITY = re.compile("|".join(sorted(_ZH_CITIES, key=len, reverse=True)))
_ZH_PLACE = re.compile(r"(?:在|到|去|于|来自|回)([\u4e00-\u9fff]{2,4}?(?:市|省|县|区|镇|路|街))")
_CAPITALISED = re.compile(r"[A-ZÀ-Þ][A-Za-zÀ-ÿ'’-]*(?:[ \t]+[A-ZÀ-Þ][A-Za-zÀ-ÿ'’-]*)*")
_URL_PREFIX = re.compile(r"^(?:https?://)?(?:www\.)?")
_NOT_DIGIT = re.compile(r"\D")
_DIGIT_RUN = re.compile(r"\d+")
_MODAL_AFTER_MAY = re.compile(r"(?<!\s)\s+(?:i|we|you|he|she|they|it|be|not)\b", re.I)  # "May I …": the verb
_SENTENCE_ENDS = frozenset('.!?:;\n"“([。！？：；')

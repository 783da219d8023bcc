"""Words as datatrove's Gopher and FineWeb rules count them: spaCy's English tokenizer's cuts, compiled.

datatrove splits a document into words with spaCy's blank English pipeline before counting words,
symbols, stop words and n-grams; a threshold means what it says only over the same words. spaCy
is a peer, not a dependency (a 40 MB install and ~2 MB/CPU-s), so :func:`token_bounds` cuts text
the way its tokenizer does, by the same kind of rules, in one compiled loop:

* Chunks are the runs of non-whitespace characters (``str.isspace``).
* Affixes come off a chunk from both ends, one per step, as long as one matches: a prefix is one
  mark (brackets, quotes, ``# * & _ < > , : ; ! ?``, ``§ % = — –``, currency signs, ``So``
  symbols; ``+`` unless a digit follows) or a run of full stops; a suffix is one of those marks
  (not the prefix-only ones), a run of full stops, ``'s``, a unit or currency sign after a digit,
  ``+`` after a digit, or a full stop after a lower-case letter, a digit, a mark or a quote, or
  after two capitals (``U.S.`` and ``Mr`` keep theirs: ``S.`` is a capital's, not a sentence's).
* What is left is one word if it is a URL (``example.com/a``, ``https://...``); otherwise it is
  cut at infixes: a run of full stops or ``…``, an ``So`` symbol, ``+ - * ^`` between digits, a
  full stop from a lower-case letter to a capital, a comma between letters, a dash run
  (``- -- --- – — —— ~``) between a letter or digit and a letter, ``: < > = /`` between a letter or
  digit and a letter.
* Contractions split as spaCy's exceptions list them: ``n't`` off its verb (``do n't``, ``ca n't``),
  ``'m 're 've 'll 'd`` off a pronoun (``I 'm``, ``they 're``); ``cannot`` is ``can not``.

What spaCy does that this does not (its exceptions table, ~1,300 entries: abbreviations such as
``Mr.``/``e.g.`` keep their full stop, emoticons stay whole, ``dont``/``whats`` split) is listed,
with how often it changes a decision, in docs/signals.md; ``benchmarks/signals.py`` measures it.
:func:`split_words` returns the words of one text (tests, the docs' examples).
"""

from __future__ import annotations

import unicodedata

import numpy as np

from core.compiled import jit, leaf_jit
from core.filters.signal_schema import DUP_NGRAMS, TOP_NGRAMS

#: datatrove's PUNCTUATION_SET: a word of only these is a symbol, not a word (Gopher's word count and
#: mean length are over the others). Its ASCII and Unicode marks, the control characters it adds (C0 but
#: tab and newline, DEL, C1), and its terminal
#: punctuation (core.filters.signals.TERMINAL_PUNCTUATION, added where the flags are built).
PUNCTUATION = ("!/—”:％１〈&(、━\\【#%「」，】；+^]~“《„';’{|∶´[=-`*．（–？！：$～«〉,><》)?）。…@_.\"}►»"
               + "".join(map(chr, [*range(0, 9), *range(11, 32), *range(127, 160)])))
#: Marks that come off either end of a chunk, one at a time (spaCy's punctuation and quote classes).
_AFFIX_MARKS = "…,:;!?¿؟¡()[]{}<>_#*&。？！，、；：～·।،۔؛٪'\"”“`‘´’‚„»«「」『』（）〔〕【】《》〈〉〈〉⟦⟧—–"
#: Marks that come off the front only (``+`` only where no digit follows: the kernel checks).
_PREFIX_MARKS = "§%=+$£€¥฿₽﷼₴₠₡₢₣₤₥₦₧₨₩₪₫₭₮₯₰₱₲₳₵₶₷₸₹₺₻₼₾₿"
_QUOTES = "'\"”“`‘´’‚,„»«「」『』（）〔〕【】《》〈〉〈〉⟦⟧"
#: Marks after which a full stop is a suffix (besides digits, lower-case letters and quotes).
_DOT_AFTER = "%²-+|…,:;!?¿؟¡()[]{}<>_#*&。？！，、；：～·।،۔؛٪"
#: Units that come off a number's end (``6oz``, ``5km``, ``20%``): spaCy's Latin-script units.
UNITS = tuple(["km", "km²", "km³", "m", "m²", "m³", "dm", "dm²", "dm³", "cm", "cm²", "cm³", "mm", "mm²", "mm³", "ha", "µm", "nm", "yd", "in", "ft", "kg", "g", "mg", "µg", "t", "lb", "oz", "m/s", "km/h", "kmh", "mph", "hPa", "Pa", "mbar", "mb", "MB", "kb", "KB", "gb", "GB", "tb", "TB", "T", "G", "M", "K", "%"])
CURRENCY = ("$", "£", "€", "¥", "฿", "US$", "C$", "A$", "₽", "﷼", "₴")
#: Words that a contraction's ``'m 're 've 'll 'd`` come off (lower case; the kernel folds ASCII case).
PRONOUNS = ("i", "you", "he", "she", "it", "we", "they", "who", "what", "where", "when", "why", "how", "there",
            "that", "this", "these", "those", "could", "should", "would", "might", "must")

#: Pieces spaCy's English exceptions keep whole, the ones prose and chat use: emoticons, abbreviations
#: whose full stop stays, two apostrophes.
WHOLE = tuple(
    [":)", ":-)", ";)", ";-)", ":(", ":-(", ":P", ":p", ":-P", ":-p", ":D", ":-D", ":/", ":-/", "=(", "=)", "):", "(:", ":*", ":-*", "<3", "[:", ":]", ":|", ":-|", "xD", "XD", "8)", ":'(", ":')", ":o", ":O", ":-o", ":-O", "=D", "=/", ":3", ":>", ";D", ":-]", "(=", "=]", "=[", "^_^", "-_-", "o.O", "O.o", ":))", ":((", ";_;", "</3", "<33", ":0", ":-0", ":x", ":X", ":-x", "''", "’’", "e.g.", "i.e.", "E.g.", "I.e.", "a.m.", "p.m.", "vs.", "v.s.", "Mr.", "Mrs.", "Ms.", "Dr.", "Prof.", "St.", "Jr.", "Inc.", "Ltd.", "Co.", "co.", "Corp.", "Bros.", "Gov.", "Sen.", "Rep.", "Rev.", "Gen.", "Mt.", "Adm.", "Jan.", "Feb.", "Mar.", "Apr.", "Jun.", "Jul.", "Aug.", "Sep.", "Sept.", "Oct.", "Nov.", "Dec.", "and/or", "w/o", "Ph.D.", "D.C.", "N.Y.", "Messrs.", "Mass.", "Calif.", "Fla."]
) + tuple(f"{c}." for c in "abcdefghijklmnopqrstuvwxyzäöü")
#: Pieces they cut in two (left, right): contractions written without an apostrophe, and a few more.
_NT_VERBS = ("do", "does", "did", "is", "was", "were", "are", "have", "has", "had", "could", "should", "would",
             "ai", "ca", "wo")
CUT = tuple(
    tuple(pair.split("+")) for pair in
    ["i+m", "I+m", "i+ve", "I+ve", "i+d", "I+d", "you+re", "You+re", "they+re", "he+s", "she+s", "who+s", "that+s", "That+s", "what+s", "What+s", "gon+na", "Gon+na", "got+ta", "Got+ta", "can+not", "Can+not", "c'm+on", "c’m+on", "y'+all"]
) + tuple((v, "nt") for v in _NT_VERBS) + tuple((v.capitalize(), "nt") for v in _NT_VERBS)

SPACE, ALPHA, PUNCT, LOWER, UPPER, AFFIX, PREFIX, QUOTE, DIGIT, ICON, DOT_AFTER, TERMINAL, BREAK = (
    1 << i for i in range(13))


def char_flags_of(ch: str, terminals: str = "") -> int:
    """The kernel's flags of one character (``terminals``: more characters that count as punctuation,
    flagged TERMINAL as well: FineWeb's sentence ends)."""
    flags = 0
    if ch.isspace():
        flags |= SPACE
    if ch.isalpha():
        flags |= ALPHA
        flags |= UPPER if ch.isupper() else 0
        flags |= LOWER if not ch.isupper() else 0  # spaCy's lower class holds the scripts without case too
    if ch in PUNCTUATION or ch in terminals:
        flags |= PUNCT
    if ch in terminals:
        flags |= TERMINAL
    if len(f"a{ch}b".splitlines()) == 2:  # a line break to str.splitlines
        flags |= BREAK
    if ch in _AFFIX_MARKS:
        flags |= AFFIX
    if ch in _PREFIX_MARKS:
        flags |= PREFIX
    if ch in _QUOTES:
        flags |= QUOTE
    if "0" <= ch <= "9":
        flags |= DIGIT
    if unicodedata.category(ch) == "So":
        flags |= ICON
    if ch in _DOT_AFTER:
        flags |= DOT_AFTER
    return flags


def _encode(words: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Strings as one code-point array and their end offsets (a table the kernel can read)."""
    joined = "".join(words)
    raw = np.frombuffer(joined.encode("utf-32-le"), np.uint32).astype(np.int64)
    return raw, np.cumsum(np.array([len(w) for w in words], np.int64))


UNIT_CODES, UNIT_ENDS = _encode(tuple(sorted(UNITS, key=len, reverse=True)))  # longest first: it wins
CURRENCY_CODES, CURRENCY_ENDS = _encode(tuple(sorted(CURRENCY, key=len, reverse=True)))
PRONOUN_CODES, PRONOUN_ENDS = _encode(PRONOUNS)
#: The longest unit or currency sign: a digit this far before a word's end at most lets one come off.
_AFTER_DIGIT_LONGEST = max(map(len, UNITS + CURRENCY))


def _fnv(codes: list[int]) -> int:
    value = 0xCBF29CE484222325
    for c in codes:
        value = ((value ^ c) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return value


def _exception_table() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(sorted FNV-1a hashes of the exceptions, their code points, each one's end there, its cut or 0)."""
    pieces = [(word, 0) for word in WHOLE] + [(left + right, len(left)) for left, right in CUT]
    entries = sorted((_fnv([ord(c) for c in word]), word, cut) for word, cut in pieces)
    hashes = np.array([h for h, _, _ in entries], np.uint64)
    codes, ends = _encode(tuple(word for _, word, _ in entries))
    return hashes, codes, ends, np.array([cut for _, _, cut in entries], np.int64)


EXCEPTION_HASHES, EXCEPTION_CODES, EXCEPTION_ENDS, EXCEPTION_CUTS = _exception_table()
_EXCEPTION_LONGEST = int(np.diff(EXCEPTION_ENDS, prepend=0).max())


def _exception_filter() -> np.ndarray:
    """``[length, (first * 31 + last) % 1024]``: whether an exception of that length, first and last
    code point may exist. Nearly every word of a text is no exception; this says so in two reads,
    before the word is hashed and searched for (a third of the splitter's time on Wikipedia text)."""
    table = np.zeros((_EXCEPTION_LONGEST + 1, 1024), np.bool_)
    for word in [*WHOLE, *(left + right for left, right in CUT)]:
        table[len(word), (ord(word[0]) * 31 + ord(word[-1])) % 1024] = True
    return table


_EXCEPTION_FILTER = _exception_filter()


@leaf_jit
def _ends_with(raw: np.ndarray, flags: np.ndarray, start: int, end: int, codes: np.ndarray,
               ends: np.ndarray) -> int:  # pragma: no cover - compiled
    """Length of the first table entry (longest first) that ``raw[start:end]`` ends with, a digit before it."""
    begin = 0
    for e in range(len(ends)):
        size = ends[e] - begin
        if size < end - start and flags[end - size - 1] & DIGIT:
            same = True
            for k in range(size):
                if raw[end - size + k] != codes[begin + k]:
                    same = False
                    break
            if same:
                return size
        begin = ends[e]
    return 0


@leaf_jit
def _is_table_word(raw: np.ndarray, start: int, end: int, codes: np.ndarray, ends: np.ndarray) -> bool:  # pragma: no cover
    """Whether ``raw[start:end]``, ASCII capitals folded, is an entry of the table."""
    begin = 0
    for e in range(len(ends)):
        if ends[e] - begin == end - start:
            same = True
            for k in range(end - start):
                c = raw[start + k]
                if 65 <= c <= 90:
                    c += 32
                if c != codes[begin + k]:
                    same = False
                    break
            if same:
                return True
        begin = ends[e]
    return False


@leaf_jit
def _prefix(raw: np.ndarray, flags: np.ndarray, start: int, end: int) -> int:  # pragma: no cover - compiled
    """Length of the prefix at ``start`` (0: none)."""
    c = raw[start]
    if c == 46:  # a run of two or more full stops
        k = start
        while k < end and raw[k] == 46:
            k += 1
        return k - start if k - start >= 2 else 0
    if c == 43:  # "+" unless a digit follows
        return 0 if start + 1 < end and flags[start + 1] & DIGIT else 1
    if end - start >= 3 and c == 85 and raw[start + 1] == 83 and raw[start + 2] == 36:  # US$
        return 3
    if end - start >= 2 and (c == 67 or c == 65) and raw[start + 1] == 36:  # C$, A$
        return 2
    return 1 if flags[start] & (AFFIX | PREFIX | ICON) else 0


@leaf_jit
def _suffix(raw: np.ndarray, flags: np.ndarray, start: int, end: int, unit_codes: np.ndarray, unit_ends: np.ndarray,
            currency_codes: np.ndarray, currency_ends: np.ndarray) -> int:  # pragma: no cover - compiled
    """Length of the suffix ending at ``end`` (0: none); the one starting furthest left wins, as a regex search."""
    size = end - start
    k = end
    while k > start and raw[k - 1] == 46:
        k -= 1
    if end - k >= 2:  # a run of full stops
        return end - k
    digit = False  # units and currency signs come off after a digit only: none, no table to search
    for k in range(max(start, end - 1 - _AFTER_DIGIT_LONGEST), end - 1):
        digit = digit or (flags[k] & DIGIT) != 0
    if digit:
        n = _ends_with(raw, flags, start, end, unit_codes, unit_ends)
        if n:
            return n
        n = _ends_with(raw, flags, start, end, currency_codes, currency_ends)
        if n:
            return n
    if size >= 2 and (raw[end - 2] == 39 or raw[end - 2] == 0x2019) and (raw[end - 1] == 115 or raw[end - 1] == 83):
        return 2  # 's
    c = raw[end - 1]
    if flags[end - 1] & (AFFIX | ICON):
        return 1
    if size >= 2:
        before = flags[end - 2]
        if c == 43 and before & DIGIT:
            return 1
        if c == 46:
            if before & (DIGIT | LOWER | QUOTE | DOT_AFTER):
                return 1
            if size >= 3 and before & UPPER and flags[end - 3] & UPPER:
                return 1
            d = raw[end - 2] | 32
            # °F, °C, °K: spaCy's look-behind sees the degree sign even once it came off as a prefix
            if end >= 3 and raw[end - 3] == 0xB0 and (d == 102 or d == 99 or d == 107):
                return 1
    return 0


@leaf_jit
def _is_url(raw: np.ndarray, flags: np.ndarray, start: int, end: int) -> bool:  # pragma: no cover - compiled
    """Whether ``raw[start:end]`` is a URL as spaCy's pattern reads one: an optional ``scheme://``, a
    host of dotted labels ending in a lower-case top-level domain of 2+ letters, an optional port, an
    optional path after ``/ ? #``. (Its IP-address and ``user@`` forms are left out.)"""
    j = start
    k = start
    while k + 2 < end and raw[k] != 47:  # a scheme: 2+ letters, digits or "+ - . _" before "://"
        if raw[k] == 58 and raw[k + 1] == 47 and raw[k + 2] == 47:
            if k - start >= 2:
                j = k + 3
            break
        if not (flags[k] & (ALPHA | DIGIT) or raw[k] == 43 or raw[k] == 45 or raw[k] == 46 or raw[k] == 95):
            break
        k += 1
    at = -1
    a = j
    while a < end and raw[a] != 47:  # "user@" or "user:pass@" before the host (the last @ before a path)
        if raw[a] == 64:
            at = a
        a += 1
    if at >= 0:
        j = at + 1
    labels = 0
    while True:
        label = j
        while j < end and (flags[j] & (ALPHA | DIGIT) or raw[j] == 95 or raw[j] == 45 or (raw[j] >= 0xA1 and raw[j] <= 0xFFFF
                                                                                        and not flags[j] & (SPACE | PUNCT))):
            j += 1
        if j == label:
            return False
        if j < end and raw[j] == 46 and j + 1 < end:
            labels += 1
            j += 1
            continue
        if labels == 0 or j - label < 2:
            return False
        for t in range(label, j):  # the top-level domain: lower-case letters only
            if not flags[t] & LOWER:
                return False
        break
    if j < end and raw[j] == 58:  # port
        p = j + 1
        while p < end and flags[p] & DIGIT:
            p += 1
        if 2 <= p - j - 1 <= 5:
            j = p
    return j == end or raw[j] == 47 or raw[j] == 63 or raw[j] == 35


@leaf_jit
def _infix(raw: np.ndarray, flags: np.ndarray, start: int, end: int, k: int) -> int:  # pragma: no cover - compiled
    """Length of the infix at ``k`` (0: none) inside ``raw[start:end]``."""
    c = raw[k]
    if c == 46 and k + 1 < end and raw[k + 1] == 46:
        j = k
        while j < end and raw[j] == 46:
            j += 1
        return j - k
    if c == 0x2026 or flags[k] & ICON:
        return 1
    if k == start or k + 1 >= end:
        return 0
    before, after = flags[k - 1], flags[k + 1]
    if (c == 43 or c == 45 or c == 42 or c == 94) and before & DIGIT and (after & DIGIT or raw[k + 1] == 45):
        return 1
    if c == 46 and before & (LOWER | QUOTE) and after & (UPPER | QUOTE):
        return 1
    if c == 44 and before & ALPHA and after & ALPHA:
        return 1
    if before & (ALPHA | DIGIT):
        if c == 45 or c == 0x2014:  # dash runs: - -- --- and — ——
            most = 3 if c == 45 else 2
            j = k
            while j < end and raw[j] == c and j - k < most:
                j += 1
            for run in range(j - k, 0, -1):
                if k + run < end and flags[k + run] & ALPHA:
                    return run
            return 0
        if (c == 0x2013 or c == 126 or c == 58 or c == 60 or c == 62 or c == 61 or c == 47) and after & ALPHA:
            return 1
    return 0


@leaf_jit
def _exception(raw: np.ndarray, start: int, end: int) -> int:  # pragma: no cover - compiled
    """The index of ``raw[start:end]`` in the exceptions table (by its hash, then its code points), or -1."""
    if end - start > _EXCEPTION_LONGEST or not _EXCEPTION_FILTER[end - start, (raw[start] * 31 + raw[end - 1]) % 1024]:
        return -1
    h = np.uint64(0xCBF29CE484222325)
    for k in range(start, end):
        h = (h ^ np.uint64(raw[k])) * np.uint64(0x100000001B3)  # wraps: 64-bit FNV-1a
    e = np.searchsorted(EXCEPTION_HASHES, h)
    if e == len(EXCEPTION_HASHES) or EXCEPTION_HASHES[e] != h:
        return -1
    begin = EXCEPTION_ENDS[e - 1] if e else 0
    if EXCEPTION_ENDS[e] - begin != end - start:
        return -1
    for k in range(end - start):
        if EXCEPTION_CODES[begin + k] != raw[start + k]:
            return -1
    return int(e)


@leaf_jit
def _special(raw: np.ndarray, start: int, end: int) -> bool:  # pragma: no cover - compiled
    """Whether affixes stop coming off ``raw[start:end]``: it is an exception or a contraction."""
    return _exception(raw, start, end) >= 0 or _contraction(raw, start, end, PRONOUN_CODES, PRONOUN_ENDS) != 0


@leaf_jit
def _contraction(raw: np.ndarray, start: int, end: int, pronoun_codes: np.ndarray,
                 pronoun_ends: np.ndarray) -> int:  # pragma: no cover - compiled
    """Where a contraction splits ``raw[start:end]`` (0: it does not)."""
    size = end - start
    apostrophe = -1
    for k in range(start + 1, end):
        if raw[k] == 39 or raw[k] == 0x2019:
            apostrophe = k
            break
    if apostrophe < 0:
        if size == 6 and (raw[start] | 32) == 99:  # cannot -> can not
            word = (97, 110, 110, 111, 116)
            for i in range(5):
                if (raw[start + 1 + i] | 32) != word[i]:
                    return 0
            return start + 3
        return 0
    tail = end - apostrophe
    if tail == 2 and apostrophe - start >= 2 and (raw[apostrophe - 1] | 32) == 110 and (raw[end - 1] | 32) == 116:
        return apostrophe - 1  # n't off its verb
    if _is_table_word(raw, start, apostrophe, pronoun_codes, pronoun_ends):
        a = raw[apostrophe + 1] | 32 if tail > 1 else 0
        b = raw[apostrophe + 2] | 32 if tail > 2 else 0
        if (tail == 2 and (a == 109 or a == 100)) or (tail == 3 and ((a == 114 and b == 101) or (a == 118 and b == 101)
                                                                     or (a == 108 and b == 108))):
            return apostrophe
    return 0


@leaf_jit
def _merge_exceptions(raw: np.ndarray, starts: np.ndarray, stops: np.ndarray, first: int,
                      count: int) -> int:  # pragma: no cover - compiled
    """Join the words ``first..count`` of one chunk where 2-4 neighbours spell an exception kept whole
    (``12.9''`` gives ``12.9 ''``; ``a.C.`` gives ``a. C.``), as spaCy matches its exceptions again after
    cutting; the new count."""
    out = first
    i = first
    while i < count:
        joined = 1
        for m in range(min(4, count - i), 1, -1):
            e = _exception(raw, starts[i], stops[i + m - 1])
            if e >= 0 and EXCEPTION_CUTS[e] == 0:
                joined = m
                break
        starts[out], stops[out] = starts[i], stops[i + joined - 1]
        out += 1
        i += joined
    return out


@jit
def token_bounds(raw: np.ndarray, flags: np.ndarray, first: int, end: int, starts: np.ndarray,
                 stops: np.ndarray) -> int:  # pragma: no cover - compiled by numba, tested through it
    """Split characters ``first`` to ``end`` into words (the module's rules); their bounds; how many.

    ``starts``/``stops`` need room for ``end - first`` words (a word is at least one character).
    """
    count = 0
    j = first
    # a chunk has fewer suffixes than characters; never regrown: an array variable a loop may rebind costs
    # numba's reference counting (~20 ns) on every pass through that loop
    suffix_starts = np.empty(end - first, np.int64)
    while j < end:
        if flags[j] & SPACE:
            j += 1
            continue
        left = j
        chunk_first = count
        letters = True
        while j < end and not flags[j] & SPACE:
            letters = letters and (flags[j] & ALPHA) != 0
            j += 1
        right = j
        if letters and (right - left > _EXCEPTION_LONGEST or _exception(raw, left, right) < 0):
            starts[count], stops[count] = left, right  # the common case: a word of letters alone
            count += 1
            continue
        suffixes = 0
        last = -1
        while left < right and right - left != last and not _special(raw, left, right):
            last = right - left
            pre = _prefix(raw, flags, left, right)
            suf = _suffix(raw, flags, left + pre, right, UNIT_CODES, UNIT_ENDS, CURRENCY_CODES, CURRENCY_ENDS)
            if pre and suf and pre + suf > right - left:
                suf = 0
            if pre:
                starts[count], stops[count] = left, left + pre
                count += 1
                left += pre
            if suf:
                suffix_starts[suffixes] = right - suf
                suffixes += 1
                right -= suf
            if pre and left < right and _special(raw, left, right):
                break
        if left < right:
            e = _exception(raw, left, right)
            cut = _contraction(raw, left, right, PRONOUN_CODES, PRONOUN_ENDS) if e < 0 else left + EXCEPTION_CUTS[e]
            if e >= 0 and cut == left:
                starts[count], stops[count] = left, right
                count += 1
            elif cut:
                starts[count], stops[count] = left, cut
                starts[count + 1], stops[count + 1] = cut, right
                count += 2
            elif _is_url(raw, flags, left, right):
                starts[count], stops[count] = left, right
                count += 1
            else:
                piece = left
                k = left + 1
                while k < right:
                    size = 0 if flags[k] & ALPHA else _infix(raw, flags, left, right, k)  # no infix is a letter
                    if size == 0:
                        k += 1
                        continue
                    if k > piece:
                        starts[count], stops[count] = piece, k
                        count += 1
                    starts[count], stops[count] = k, k + size
                    count += 1
                    piece = k = k + size
                if piece < right:
                    starts[count], stops[count] = piece, right
                    count += 1
        stop = j
        for s in range(suffixes - 1, -1, -1):  # the suffixes, innermost first
            starts[count], stops[count] = suffix_starts[s], stop if s == 0 else suffix_starts[s - 1]
            count += 1
        if count - chunk_first > 1:
            count = _merge_exceptions(raw, starts, stops, chunk_first, count)
    return count


@jit
def _unknown(raw: np.ndarray, known: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """The code points of ``raw`` not ``known`` yet, each once, in order of first appearance (one pass;
    marked known here: the caller fills in their flags)."""
    new = np.empty(len(raw), np.int64)
    count = 0
    for i in range(len(raw)):
        c = raw[i]
        if not known[c]:
            known[c] = True
            new[count] = c
            count += 1
    return new[:count]


def char_flags(raw: np.ndarray, terminals: str = "") -> np.ndarray:
    """Flags of each code point of ``raw`` from a table over all of Unicode, each code point classified
    the first time a text of this process holds it (one compiled pass finds those, then a gather)."""
    table, known = _TABLES.get(terminals) or _TABLES.setdefault(terminals, _new_table(terminals))
    new = _unknown(raw, known)
    if len(new):
        try:
            table[new] = [char_flags_of(chr(c), terminals) for c in new.tolist()]
        except BaseException:
            known[new] = False  # not classified after all (an interrupt): classify them next time
            raise
    return table[raw]


#: Per set of extra punctuation: (flags of every code point, which of them are filled in yet).
_TABLES: dict[str, tuple[np.ndarray, np.ndarray]] = {}


def _new_table(terminals: str) -> tuple[np.ndarray, np.ndarray]:
    table, known = np.zeros(0x110000, np.uint16), np.zeros(0x110000, np.bool_)
    table[:128] = [char_flags_of(chr(c), terminals) for c in range(128)]
    known[:128] = True
    return table, known


def split_words(text: str) -> list[str]:
    """The words of ``text`` (:func:`token_bounds` over it)."""
    if not text:
        return []
    raw = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32)
    starts = np.empty(len(text), np.int64)
    stops = np.empty(len(text), np.int64)
    count = token_bounds(raw, char_flags(raw), 0, len(text), starts, stops)
    return [text[a:b] for a, b in zip(starts[:count].tolist(), stops[:count].tolist(), strict=True)]

STOP_WORDS = frozenset({"the", "be", "to", "of", "and", "that", "have", "with"})
_FNV_OFFSET, _FNV_PRIME = 0xCBF29CE484222325, 0x100000001B3
#: Word-kernel output columns, in order.
KERNEL_COLUMNS = (["words", "symbol_free_words", "symbol_free_chars", "alpha_words", "stop_words"]
                  + [f"top_{n}" for n in TOP_NGRAMS] + [f"dup_{n}" for n in DUP_NGRAMS]
                  + ["lines", "bullet_lines", "ellipsis_lines", "nonblank_lines", "punct_lines", "short_lines",
                     "dup_nonblank_chars", "gopher_lines", "dup_gopher_lines", "dup_gopher_chars", "paragraphs",
                     "dup_paragraphs", "dup_paragraph_chars"])
_WORD_COLUMNS = 5 + len(TOP_NGRAMS) + len(DUP_NGRAMS)
#: FineWeb's short line: at most this many characters.
SHORT_LINE = 30


def fnv1a(word: str) -> int:
    """The word kernel's hash of one word (FNV-1a over its code points), for the stop-word table."""
    value = _FNV_OFFSET
    for ch in word:
        value = ((value ^ ord(ch)) * _FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return value


STOP_HASHES = np.array(sorted(fnv1a(w) for w in STOP_WORDS), np.uint64)


@jit
def _groups(grams: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover - compiled
    """(group of each position, each group's count, each group's first position), groups numbered in
    order of first appearance; equal hashes, one group (an open-addressing table: no sort)."""
    size = 16
    while size < 2 * len(grams):
        size <<= 1
    mask = np.uint64(size - 1)
    slot_keys = np.empty(size, np.uint64)
    slot_groups = np.full(size, -1, np.int64)
    group = np.empty(len(grams), np.int64)
    counts = np.zeros(len(grams), np.int64)
    first = np.zeros(len(grams), np.int64)
    groups = 0
    for position in range(len(grams)):
        key = grams[position]
        slot = (key ^ (key >> np.uint64(31))) & mask
        while True:
            g = slot_groups[slot]
            if g < 0:
                slot_groups[slot] = groups
                slot_keys[slot] = key
                first[groups] = position
                counts[groups] = 1
                group[position] = groups
                groups += 1
                break
            if slot_keys[slot] == key:
                counts[g] += 1
                group[position] = g
                break
            slot = (slot + np.uint64(1)) & mask
    return group, counts[:groups], first[:groups]


@leaf_jit
def _narrow(grams: np.ndarray, hashes: np.ndarray, n: int, where: np.ndarray, candidates: int,
            shared: np.ndarray) -> int:  # pragma: no cover - compiled
    """Narrow ``where[:candidates]``, the (n-1)-grams' positions (ascending), in place to the n-grams that
    can occur twice, and extend their hashes in ``grams`` to n words; how many are left.

    An n-gram occurs twice only where both its (n-1)-grams (at ``i`` and ``i + 1``) do (``shared``),
    which in text is a small share for n >= 3, and those are among the (n-1)-grams that could: so each
    n only walks the positions left by the one before, not every word. The n-gram hash is the
    (n-1)-gram's mixed with the word that follows it. ``shared`` is cleared of the (n-1)-grams
    (position ``i + 1`` is read before it is cleared).
    """
    kept = 0
    for k in range(candidates):
        i = where[k]
        if shared[i] and shared[i + 1]:
            where[kept] = i
            grams[i] = (grams[i] ^ hashes[i + n - 1]) * np.uint64(0x100000001B3) + np.uint64(0x9E3779B97F4A7C15)
            kept += 1
        shared[i] = False
    return kept


@jit
def _ngram_columns(hashes: np.ndarray, cumulative: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - compiled
    """Fill ``out`` with the n-gram columns of one text's words (:data:`KERNEL_COLUMNS` ``top_2`` to ``dup_10``).

    Only the n-grams that can occur twice (:func:`_narrow`) are grouped (:func:`_groups` over their
    hashes), every other n-gram is known to occur once.
    """
    count = len(hashes)
    grams = (hashes ^ np.uint64(0x2545F4914F6CDD1D)) * np.uint64(0x100000001B3)  # mixed once more,
    # so an n-gram's hash is not symmetric in its words (a XOR of two plain word hashes would be)
    where = np.arange(count)  # the positions whose (n-1)-gram may occur twice: every word, to begin with
    shared = np.ones(count + 1, np.bool_)  # which of those (n-1)-grams occur more than once
    shared[count] = False
    candidates = count
    for n in range(2, 11):
        value = 0
        if count >= n:
            candidates = _narrow(grams, hashes, n, where, candidates, shared)
            group, counts, firsts = _groups(grams[where[:candidates]])
            for k in range(candidates):
                shared[where[k]] = counts[group[k]] > 1
            if n <= 4:  # the most frequent n-gram's characters (words and spaces) times its count
                top, start = 1, 0  # every n-gram once: the first one
                for g in range(len(counts)):  # groups in order of first appearance: the first seen wins a tie
                    if counts[g] > top:
                        top, start = counts[g], where[firsts[g]]
                value = (cumulative[start + n] - cumulative[start] + n - 1) * top
            else:  # characters of n-grams seen before, jumping over each repeat
                value = _repeated_chars(where[:candidates], group, counts, cumulative, n)
        out[n - 2] = value


@jit
def _repeated_chars(where: np.ndarray, group: np.ndarray, counts: np.ndarray, cumulative: np.ndarray,
                    n: int) -> int:  # pragma: no cover - compiled
    """Characters of the n-grams met again, walking left to right and jumping over each repeat (Gopher's
    duplicate n-gram rule); an n-gram that occurs once (not in ``where``) is never a repeat."""
    total = len(cumulative) - n  # n-grams in the text
    seen = np.zeros(len(counts), np.bool_)
    repeated = 0
    i = 0
    k = 0  # the first entry of ``where`` at or after i
    while i < total:
        while k < len(where) and where[k] < i:
            k += 1
        if k == len(where):
            break
        if where[k] != i:
            i = where[k]  # the n-grams between occur once: seen for the first time, one step each
            continue
        g = group[k]
        if seen[g]:
            repeated += cumulative[i + n] - cumulative[i]
            i += n
        else:
            seen[g] = True
            i += 1
    return repeated


@leaf_jit
def _same_span(raw: np.ndarray, a: int, b: int, c: int, d: int) -> bool:  # pragma: no cover - compiled
    """Whether ``raw[a:b]`` and ``raw[c:d]`` hold the same characters."""
    if b - a != d - c:
        return False
    for k in range(b - a):  # noqa: SIM110 - a loop numba compiles; all() over a generator it does not
        if raw[a + k] != raw[c + k]:
            return False
    return True


@leaf_jit
def _span_hash(raw: np.ndarray, start: int, stop: int) -> np.uint64:  # pragma: no cover - compiled
    h = np.uint64(0xCBF29CE484222325)
    for k in range(start, stop):
        h = (h ^ np.uint64(raw[k])) * np.uint64(0x100000001B3)
    return h


@jit
def _repeats(raw: np.ndarray, starts: np.ndarray, stops: np.ndarray, count: int) -> tuple[int, int]:  # pragma: no cover
    """(spans equal to an earlier one, their characters) among the first ``count`` spans: Python's
    ``seen`` set over strings, as a hash table whose equal hashes are compared character by character
    (so the counts are exact, collisions or not)."""
    size = 16
    while size < 2 * count:
        size <<= 1
    mask = np.uint64(size - 1)
    slots = np.full(size, -1, np.int64)
    hashes = np.empty(count, np.uint64)
    repeated = chars = 0
    for i in range(count):
        key = _span_hash(raw, starts[i], stops[i])
        hashes[i] = key
        slot = (key ^ (key >> np.uint64(31))) & mask
        while True:
            j = slots[slot]
            if j < 0:
                slots[slot] = i
                break
            if hashes[j] == key and _same_span(raw, starts[j], stops[j], starts[i], stops[i]):
                repeated += 1
                chars += stops[i] - starts[i]
                break
            slot = (slot + np.uint64(1)) & mask
    return repeated, chars


@leaf_jit
def _splitlines_counts(raw: np.ndarray, flags: np.ndarray, first: int, end: int) -> tuple[int, int, int]:  # pragma: no cover
    """(lines, bullet lines, ellipsis lines) of ``str.splitlines`` over ``raw[first:end]``: a line is a
    bullet when its first non-space character is ``•`` or ``-``, an ellipsis line when what is left of
    it without trailing space ends in ``...`` or ``…`` (Gopher's rules)."""
    lines = bullets = ellipses = 0
    start = first
    j = first
    while j <= end:
        if j < end and not flags[j] & BREAK:
            j += 1
            continue
        if j == end and start == end:
            break
        lines += 1
        a = start
        while a < j and flags[a] & SPACE:
            a += 1
        if a < j:
            bullets += raw[a] == 0x2022 or raw[a] == 45
            b = j - 1
            while flags[b] & SPACE:
                b -= 1
            ellipses += raw[b] == 0x2026 or (b - 2 >= a and raw[b] == 46 and raw[b - 1] == 46 and raw[b - 2] == 46)
        if j < end - 1 and raw[j] == 13 and raw[j + 1] == 10:
            j += 1  # \r\n: one break
        start = j = j + 1
    return lines, bullets, ellipses


@jit
def line_columns(raw: np.ndarray, flags: np.ndarray, first: int, end: int, out: np.ndarray) -> None:  # pragma: no cover
    """Fill ``out`` with the line and paragraph columns of ``raw[first:end]`` (:data:`KERNEL_COLUMNS`
    from ``lines``), as :mod:`core.filters.signals` defines them over Python strings: lines of
    ``str.splitlines``; the pieces of ``text.split("\\n")`` that are not blank (FineWeb); the pieces of
    ``re.split("\\n+", text)`` (Gopher's lines); the paragraphs of ``re.split("\\n{2,}", text.strip())``."""
    lines, bullets, ellipses = _splitlines_counts(raw, flags, first, end)
    pieces = 1
    for j in range(first, end):
        pieces += raw[j] == 10
    starts = np.empty(pieces, np.int64)
    stops = np.empty(pieces, np.int64)
    blank_starts = np.empty(pieces, np.int64)  # the nonblank pieces (named for reuse below)
    blank_stops = np.empty(pieces, np.int64)
    nonblank = punct = short = gopher = 0
    start = first
    piece = 0
    for j in range(first, end + 1):
        if j < end and raw[j] != 10:
            continue
        blank = True
        for k in range(start, j):
            if not flags[k] & SPACE:
                blank = False
                break
        if not blank:
            blank_starts[nonblank], blank_stops[nonblank] = start, j
            nonblank += 1
            punct += (flags[j - 1] & TERMINAL) != 0
            short += j - start <= SHORT_LINE
        if j > start or piece == 0 or piece == pieces - 1:  # Gopher keeps the empty first and last pieces
            starts[gopher], stops[gopher] = start, j
            gopher += 1
        piece += 1
        start = j + 1
    dup_gopher, dup_gopher_chars = _repeats(raw, starts, stops, gopher)
    dup_nonblank_chars = _repeats(raw, blank_starts, blank_stops, nonblank)[1]
    a, b = first, end
    while a < b and flags[a] & SPACE:
        a += 1
    while b > a and flags[b - 1] & SPACE:
        b -= 1
    paragraphs = 0
    start = a
    j = a
    while j <= b:
        if j < b and not (raw[j] == 10 and j + 1 < b and raw[j + 1] == 10):
            j += 1
            continue
        starts[paragraphs], stops[paragraphs] = start, j
        paragraphs += 1
        while j < b and raw[j] == 10:
            j += 1
        start = j
        if j == b:
            break
    dup_paragraphs, dup_paragraph_chars = _repeats(raw, starts, stops, paragraphs)
    values = (lines, bullets, ellipses, nonblank, punct, short, dup_nonblank_chars, gopher, dup_gopher,
              dup_gopher_chars, paragraphs, dup_paragraphs, dup_paragraph_chars)
    for c in range(len(values)):
        out[c] = values[c]


@jit
def word_kernel(raw: np.ndarray, flags: np.ndarray, ends: np.ndarray, stop_hashes: np.ndarray,
                 out: np.ndarray) -> None:  # pragma: no cover - compiled by numba, tested through it
    """Fill ``out[i]`` with the word columns (:data:`KERNEL_COLUMNS`) of text ``i``.

    Words as :func:`split_words` says. Each word is hashed (FNV-1a over its code points); an
    n-gram's hash is its (n-1)-gram's mixed with its last word's, grouped by a hash table.
    """
    first = 0
    for text in range(len(ends)):
        end = ends[text]
        size = end - first
        starts = np.empty(size, np.int64)
        stops = np.empty(size, np.int64)
        count = token_bounds(raw, flags, first, end, starts, stops)
        hashes = np.empty(count, np.uint64)
        lengths = np.empty(count, np.int64)
        symbol_free = symbol_free_chars = alpha_words = 0
        stop_found = np.zeros(len(stop_hashes), np.bool_)
        for w in range(count):
            h = np.uint64(0xCBF29CE484222325)
            alpha = False
            all_punct = True
            for j in range(starts[w], stops[w]):
                f = flags[j]
                h = (h ^ np.uint64(raw[j])) * np.uint64(0x100000001B3)
                alpha = alpha or (f & ALPHA) != 0
                all_punct = all_punct and (f & PUNCT) != 0
            hashes[w] = h
            lengths[w] = stops[w] - starts[w]
            alpha_words += alpha
            if not all_punct:
                symbol_free += 1
                symbol_free_chars += stops[w] - starts[w]
            for s in range(len(stop_hashes)):
                if stop_hashes[s] == h:
                    stop_found[s] = True
        out[text, 0] = count
        out[text, 1] = symbol_free
        out[text, 2] = symbol_free_chars
        out[text, 3] = alpha_words
        out[text, 4] = stop_found.sum()
        cumulative = np.zeros(count + 1, np.int64)
        for w in range(count):
            cumulative[w + 1] = cumulative[w] + lengths[w]
        _ngram_columns(hashes[:count], cumulative, out[text, 5:_WORD_COLUMNS])
        line_columns(raw, flags, first, end, out[text, _WORD_COLUMNS:])
        first = end

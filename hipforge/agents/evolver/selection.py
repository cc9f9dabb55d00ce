"""ShinkaEvolve's parent selection and novelty rejection, as pure functions.

Parent weight (ShinkaEvolve, Lange et al. 2025, "weighted" sampling):
    w_i = sigmoid(lam * (F_i - median F)) / (1 + children_i)
so programs better than the median are preferred and programs that already have many children give way.
"""

from __future__ import annotations

import math
import random
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from difflib import SequenceMatcher

# C++ and Python comments; preprocessor lines stay (a tuned #define is a real change)
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/|#(?!\s*(?:include|define|undef|if|ifdef|ifndef|elif|else|endif|pragma)\b)"
                      r"[^\n]*", re.S)
_SPACE = re.compile(r"\s+")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d*)?(?:[eE][-+]?\d+)?")  # literals, not digits inside names
# Text ratio is high for any small edit (a renamed extension in a 1.5 KB kernel scores 0.997), so the
# threshold is high too, and a child whose numeric constants differ is never a duplicate: tuning a block
# size or unroll factor is a real child, as in the parametric evolution, however similar the text.
DEDUP_THRESHOLD = 0.99


def selection_weights(scores: Sequence[float], children: Sequence[int], lam: float = 10.0) -> list[float]:
    """Unnormalized parent weights: sigmoid of the score relative to the median, over 1 + children."""
    if len(scores) != len(children):
        raise ValueError(f"{len(scores)} scores but {len(children)} child counts")
    if not scores:
        return []
    median = statistics.median(scores)
    return [_sigmoid(lam * (s - median)) / (1 + c) for s, c in zip(scores, children, strict=True)]


def pick_parent(scores: Sequence[float], children: Sequence[int], rng: random.Random, lam: float = 10.0) -> int:
    """The index of the chosen parent, drawn in proportion to selection_weights."""
    weights = selection_weights(scores, children, lam)
    if not weights:
        raise ValueError("no parent to choose from")
    return rng.choices(range(len(weights)), weights=weights, k=1)[0]


def normalize(source: str) -> str:
    """Code with comments and whitespace runs removed: reformatting or re-commenting is no new program."""
    return _SPACE.sub(" ", _COMMENT.sub("", source)).strip()


def near_duplicate(source: str, evaluated: Iterable[str], threshold: float = DEDUP_THRESHOLD) -> float | None:
    """The normalized-text similarity (difflib ratio) to the first already-evaluated source with the same
    numeric constants at or over threshold, else None."""
    mine = normalize(source)
    constants = Counter(_NUMBER.findall(mine))
    for other in map(normalize, evaluated):
        if Counter(_NUMBER.findall(other)) != constants:
            continue
        matcher = SequenceMatcher(None, mine, other, autojunk=False)
        # cheap upper bounds first: most pairs differ in length or alphabet enough to stop here
        if matcher.real_quick_ratio() >= threshold and matcher.quick_ratio() >= threshold:
            ratio = matcher.ratio()
            if ratio >= threshold:
                return ratio
    return None


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)  # no overflow for very negative scores
    return z / (1.0 + z)

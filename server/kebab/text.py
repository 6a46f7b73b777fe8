"""Text analysis shared by the index, search and the extractive answerer: one definition of a term.

Latin-script words go through Tantivy's own simple tokenizer, lowercasing and English stemming;
Korean, Japanese and Chinese runs become overlapping character bigrams, because the bindings ship
no CJK morphology and bigrams keep `설정은` and `설정을` matching.
"""

from __future__ import annotations

import re

import tantivy

_CJK_RUN = re.compile(
    r"[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff"
    r"\uac00-\ud7a3\uf900-\ufaff]+"
)
_analyzer = (
    tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
    .filter(tantivy.Filter.remove_long(40))
    .filter(tantivy.Filter.lowercase())
    .filter(tantivy.Filter.stemmer("english"))
    .build()
)

# Question words and glue that carry no topic; dropped from queries only (never from documents).
STOPWORDS = frozenset(
    _analyzer.analyze(
        "a an the and or of to in on at for with by from as is are was were be been being do does did "
        "doing i me my we our you your it its this that these those what which who whom how why when "
        "where can could should would will shall may might must there here about into than then so "
        "if not no yes any some all also just only have has had get gets use used using please want "
        "need tell explain show make way many much whose whichever s t"
    )
)


def latin_terms(text: str) -> list[str]:
    """Stemmed lowercase word terms of the non-CJK parts of `text`."""
    return _analyzer.analyze(_CJK_RUN.sub(" ", text))


def cjk_terms(text: str) -> list[str]:
    """Overlapping character bigrams of every CJK run (a lone character stands as itself)."""
    out: list[str] = []
    for run in _CJK_RUN.findall(text):
        out.extend([run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)])
    return out


def query_terms(question: str) -> tuple[list[str], list[str]]:
    """(latin, cjk) distinct query terms; stopwords dropped unless nothing else is left."""
    latin = list(dict.fromkeys(latin_terms(question)))
    content = [t for t in latin if t not in STOPWORDS]
    return (content or latin), list(dict.fromkeys(cjk_terms(question)))

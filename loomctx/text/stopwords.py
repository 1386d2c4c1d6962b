"""English and Chinese stopwords, written inline so retrieval works offline with no data files.

Function words carry little topical signal: dropping them keeps query rewrites to the words that
matter and keeps BM25 posting lists short (a query never walks the list of "the" or "的"). The
English set is matched against lowercased, unstemmed words; the Chinese set against the words
``rjieba`` produces, so it holds both single characters and common two-character particles.
"""

from __future__ import annotations


def _words(block: str) -> frozenset[str]:
    """The whitespace-separated words of ``block`` (keeps the lists readable as prose blocks)."""
    return frozenset(block.split())


ENGLISH_STOPWORDS: frozenset[str] = _words(
    """
    a about above after again against all also am an and any are aren as at be because been
    before being below between both but by can cannot could couldn did didn do does doesn doing
    don down during each either else ever every few for from further had hadn has hasn have
    haven having he her here hers herself him himself his how however i if in into is isn it
    its itself just let ll me might more most much must mustn my myself neither no nor not now
    of off often on once only or other ought our ours ourselves out over own per rather re
    really same shall shan she should shouldn so some such than that the their theirs them
    themselves then there these they this those though through thus to too under until up upon
    us ve very was wasn we were weren what when where whether which while who whom whose why
    will with within without won would wouldn yet you your yours yourself yourselves s t d m
    o y ok okay yes yeah oh please thanks thank hi hello hey
    """
)
"""Common English function words (lowercase; contraction stems such as ``don`` and ``ll``
included because the tokenizer splits "don't" into ``don`` and ``t``)."""

CHINESE_STOPWORDS: frozenset[str] = _words(
    """
    的 了 和 是 在 我 有 就 不 人 都 一 一个 上 也 很 到 说 要 去 你 会 着 没有 看 好 自己 这 那
    他 她 它 们 我们 你们 他们 她们 它们 咱们 这个 那个 这些 那些 这样 那样 这里 那里 哪 哪里
    哪个 什么 怎么 怎样 怎么样 为什么 如何 多少 几 谁 吗 呢 吧 啊 呀 哦 嗯 哈 啦 嘛 么 之 与 及
    其 或 或者 而 而且 并 并且 但 但是 可是 然而 因为 所以 因此 如果 虽然 即使 只是 不过 还是
    于是 然后 以及 以 被 把 将 让 给 从 向 对 对于 关于 由 由于 为 为了 比 跟 同 按 按照 根据
    通过 除了 已经 曾经 正在 刚才 一直 一些 一点 有些 每 各 某 该 此 本 又 再 还 才 只 就是
    都是 也是 可以 能 能够 应该 需要 可能 一定 非常 比较 更 最 太 挺 特别 其实 当然 还有 以后
    以前 之后 之前 时候 的话 等 等等 地 得 过 来 起来 下 中 里 内 所 所有 这么 那么 如此 啊呀
    请 谢谢 您 是的 不是 没 别 既 即 则 却 若 虽 且 乃 亦 之类 之一 一下 一样 一起
    """
)
"""Common Chinese function words: pronouns, particles, conjunctions, prepositions, adverbs."""

STOPWORDS: frozenset[str] = ENGLISH_STOPWORDS | CHINESE_STOPWORDS
"""Both sets; what :func:`loomctx.text.lexical.tokenize` drops when asked to."""

__all__ = ["CHINESE_STOPWORDS", "ENGLISH_STOPWORDS", "STOPWORDS"]

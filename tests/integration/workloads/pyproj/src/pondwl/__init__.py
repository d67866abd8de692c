# SPDX-License-Identifier: LGPL-2.1-or-later
"""pondwl: a word count, as an installed module and a console script."""
import collections
import re
import sys


def top(text, n):
    words = re.findall(r"[a-z]+", text.lower())
    return sorted(collections.Counter(words).items(), key=lambda kv: (-kv[1], kv[0]))[:n]


def main():
    for word, count in top(sys.stdin.read(), int(sys.argv[1]) if len(sys.argv) > 1 else 3):
        print(count, word)

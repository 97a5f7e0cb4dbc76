"""The floor of a replay of a recording: read it and count each distinct text once with tiktoken.

Whatever a replay does, it must at least read the recording (with the importer of its format) and count its
texts with the encoder, loaded from its offline copy. This does only that: the recording read by
:func:`sim.formats.read`, every distinct text of its messages (each part's text, a tool call's name and
arguments) counted once by ``cl100k_base`` through the engine's own tokenizer, encoder load included. The
replay benchmark (``benchmarks/bench_scale.py``) runs it as a process of its own beside ``csim run``.

    python benchmarks/floor.py RECORDING [--format claude-code]
"""

from __future__ import annotations

import argparse
import sys

from sim.core.tokenizers import get_tokenizer
from sim.formats import read


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("recording")
    ap.add_argument("--format", default="claude-code")
    args = ap.parse_args()
    texts = {
        t
        for conv in read(args.recording, args.format).conversations
        for m in conv.messages
        for p in m.parts
        for t in (p.text, p.name, p.args)
        if t
    }
    tok = get_tokenizer("cl100k_base")
    tokens = sum(tok.count(t) for t in texts)
    print(f"{len(texts)} distinct texts, {tokens} tokens")
    return 0


if __name__ == "__main__":
    sys.exit(main())

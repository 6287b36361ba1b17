"""Generate the example pipeline's corpus: CPython's documentation topics, one paragraph a line.

Run once with the interpreter whose documentation you want (the committed file
was made with CPython 3.11.7); the output is deterministic for a given Python::

    python scripts/make_example_data.py

The text is `pydoc_data.topics.topics` (what ``help("if")`` shows), part of
CPython, under the PSF License Version 2; see definitions/data/README.md.
Paragraphs are written as they are, with their line breaks, heading rules and
indented code blocks: cleaning them is the pipeline's first transform.
"""

from __future__ import annotations

import json
import platform
from pathlib import Path
from pydoc_data.topics import topics

OUTPUT = Path(__file__).resolve().parent.parent / "definitions" / "data"
FILE_NAME = "python_docs_paragraphs.jsonl"


def paragraphs(text: str) -> list[str]:
    """The blank-line-separated blocks of ``text``, without surrounding blank lines."""
    return [block.strip("\n") for block in text.split("\n\n") if block.strip()]


def main() -> None:
    """Write the JSON Lines file."""
    OUTPUT.mkdir(parents=True, exist_ok=True)
    rows = 0
    with open(OUTPUT / FILE_NAME, "w", encoding="utf-8", newline="\n") as file:
        for topic in sorted(topics):
            for index, text in enumerate(paragraphs(topics[topic])):
                record = {
                    "id": f"{topic}/{index}",
                    "topic": topic,
                    "paragraph": index,
                    "text": text,
                }
                file.write(json.dumps(record, ensure_ascii=False) + "\n")
                rows += 1
    print(f"wrote {rows} paragraphs of {len(topics)} topics (Python {platform.python_version()})")


if __name__ == "__main__":
    main()

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
# The daily-partitioned example: a few statement topics "published" on each of three days,
# one file per day (definitions/data/daily/<day>.jsonl).
DAILY = {
    "2024-01-01": ["assert", "del", "for"],
    "2024-01-02": ["global", "nonlocal", "return"],
    "2024-01-03": ["yield", "augassign", "in"],
}


def paragraphs(text: str) -> list[str]:
    """The blank-line-separated blocks of ``text``, without surrounding blank lines."""
    return [block.strip("\n") for block in text.split("\n\n") if block.strip()]


def write_topics(path: Path, names: list[str]) -> int:
    """Write the paragraphs of the topics ``names`` to ``path``; how many were written."""
    rows = 0
    with open(path, "w", encoding="utf-8", newline="\n") as file:
        for topic in names:
            for index, text in enumerate(paragraphs(topics[topic])):
                record = {
                    "id": f"{topic}/{index}",
                    "topic": topic,
                    "paragraph": index,
                    "text": text,
                }
                file.write(json.dumps(record, ensure_ascii=False) + "\n")
                rows += 1
    return rows


def main() -> None:
    """Write the JSON Lines files."""
    OUTPUT.mkdir(parents=True, exist_ok=True)
    rows = write_topics(OUTPUT / FILE_NAME, sorted(topics))
    print(f"wrote {rows} paragraphs of {len(topics)} topics (Python {platform.python_version()})")
    (OUTPUT / "daily").mkdir(exist_ok=True)
    for day, names in DAILY.items():
        write_topics(OUTPUT / "daily" / f"{day}.jsonl", names)


if __name__ == "__main__":
    main()

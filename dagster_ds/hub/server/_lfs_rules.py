"""Which files a repository stores with LFS: ``.gitattributes`` rules, size and binary content.

A new repository starts with the ``.gitattributes`` below (the usual Hub defaults:
archives, Arrow/Parquet, model weights, media). The preupload endpoint answers
``lfs`` for a file that matches an LFS rule of the revision's ``.gitattributes``,
is at least the server's LFS threshold in size, or looks binary (a NUL byte in
its first 512 bytes); empty files are always regular.
"""

from __future__ import annotations

import functools
import re

_LFS_EXTENSIONS = (
    "7z arrow bin bz2 ckpt ftz gz h5 joblib lz4 mds mlmodel model msgpack npy npz onnx ot"
    " parquet pb pickle pkl pt pth rar safetensors tar tflite tgz wasm xz zip zst"
    " pcm sam raw aac flac mp3 ogg wav bmp gif png tiff jpg jpeg webp mp4 webm"
)

DEFAULT_GITATTRIBUTES = (
    "".join(f"*.{ext} filter=lfs diff=lfs merge=lfs -text\n" for ext in _LFS_EXTENSIONS.split())
    + "*.lfs.* filter=lfs diff=lfs merge=lfs -text\n"
    + "*.tar.* filter=lfs diff=lfs merge=lfs -text\n"
    + "*tfevents* filter=lfs diff=lfs merge=lfs -text\n"
    + "saved_model/**/* filter=lfs diff=lfs merge=lfs -text\n"
).encode()


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    """Translate a gitattributes pattern to a regex over the repo-relative path."""
    anchored = "/" in pattern.rstrip("/")
    pattern = pattern.lstrip("/")
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    body = "".join(out)
    return re.compile(body + "$" if anchored else f"(?:^|.*/){body}$")


@functools.lru_cache(maxsize=64)
def _parse(gitattributes: bytes) -> tuple[tuple[re.Pattern[str], bool], ...]:
    rules: list[tuple[re.Pattern[str], bool]] = []
    for raw in gitattributes.decode("utf-8", errors="replace").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        pattern, *attributes = line.split()
        if "filter=lfs" in attributes:
            rules.append((_pattern_regex(pattern), True))
        elif any(a in ("-filter", "!filter") or a.startswith("filter=") for a in attributes):
            rules.append((_pattern_regex(pattern), False))
    return tuple(rules)


def matches_lfs_rule(gitattributes: bytes, path: str) -> bool:
    """Whether the last ``filter`` rule of ``.gitattributes`` matching ``path`` is LFS."""
    verdict = False
    for regex, is_lfs in _parse(gitattributes):
        if regex.match(path):
            verdict = is_lfs
    return verdict


def upload_mode(
    *, path: str, size: int, sample: bytes, gitattributes: bytes, lfs_threshold: int
) -> str:
    """``"lfs"`` or ``"regular"``: how the client must upload this file."""
    if size == 0:
        return "regular"
    if size >= lfs_threshold or b"\0" in sample or matches_lfs_rule(gitattributes, path):
        return "lfs"
    return "regular"

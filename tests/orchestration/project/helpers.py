"""The user's helper module; a test edits `shout` on disk."""


def strip(text: str) -> str:
    return text.strip()


def shout(text: str) -> str:
    return text.upper()

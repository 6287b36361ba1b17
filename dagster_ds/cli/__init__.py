"""The ``dagster-ds`` command line: cache, hash, export and hub commands.

Example:
    $ dagster-ds hash explain 5f0c...e1 9a2b...07
    $ dagster-ds cache gc --max-size 20GB
"""

from dagster_ds.cli._main import main as main

__all__ = ["main"]

"""What the tests that start their own throw-away local server share: an awkward password, and the jars."""

from __future__ import annotations

import os

from kgdb.config import Settings
from kgdb.server import server_from_settings

# Quotes, a backslash and spaces: what an argument file must carry intact.
PASSWORD = 'tr"ust me\\ 12'


def shared_lib() -> os.PathLike:
    """The folder of jars throw-away servers share (resolved into the shared jar cache where missing)."""
    shared = server_from_settings(Settings())
    shared.install_jars(log=lambda *_: None)
    return shared.lib

"""What the tests that start their own throw-away local server share: an awkward password, the jars, and the
JVM flags of a server that lives minutes."""

from __future__ import annotations

import os

from kgdb.config import Settings
from kgdb.server import server_from_settings

# Quotes, a backslash and spaces: what an argument file must carry intact.
PASSWORD = 'tr"ust me\\ 12'

# The C1 compiler alone: a test server's start takes half the CPU (about 9 s instead of 19 s here), and the
# optimising compiler's work would not pay back within a test session.
SHORT_LIVED_JVM = ("-XX:TieredStopAtLevel=1",)


def shared_lib() -> os.PathLike:
    """The folder of jars throw-away servers share (resolved into the shared jar cache where missing)."""
    shared = server_from_settings(Settings())
    shared.install_jars(log=lambda *_: None)
    return shared.lib

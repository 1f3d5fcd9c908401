"""Fixtures of the browser tier: a real headless Chromium (Debian's /usr/bin/chromium driven through
/usr/bin/chromedriver by Selenium, both named explicitly so nothing is ever downloaded) against the page
of `kgdb serve`, served by uvicorn on a free loopback port over the test Neo4j with the default data
loaded. Every test here is marked `browser`, and `db` as well (tests/conftest.py); `.ci/browser-tier`
installs the browser. Screenshots go to $KGDB_TEST_ARTEFACTS (default: the test's tmp_path).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgdb.cli import app as cli
from kgdb.cypher import Graph
from support.graphs import wipe

CHROMIUM = Path(os.environ.get("KGDB_TEST_CHROMIUM", "/usr/bin/chromium"))
CHROMEDRIVER = Path(os.environ.get("KGDB_TEST_CHROMEDRIVER", "/usr/bin/chromedriver"))


@pytest.fixture(scope="module")
def default_data(neo4j_settings, tmp_path_factory):
    """The test database holding the default data (`kgdb load freebase-subset`), and settings whose
    caches and runs stay in a throw-away folder."""
    folder = tmp_path_factory.mktemp("kgdb")
    graph = Graph.connect(neo4j_settings)
    try:
        wipe(graph)
    finally:
        graph.close()
    env = {
        "KGDB_CACHE_DIR": str(folder / "cache"),
        "KGDB_CHECKPOINTS_DIR": str(folder / "ckpt"),
        "KGDB_RUNS_DIR": str(folder / "runs"),
        "KGDB_CONFIG": str(folder / "none.toml"),
    }
    (folder / "none.toml").write_text("", encoding="utf-8")
    base = ["--uri", neo4j_settings.neo4j_uri, "--password", neo4j_settings.neo4j_password.get_secret_value()]
    loaded = CliRunner().invoke(cli, [*base, "load", "freebase-subset"], env=env)
    assert loaded.exit_code == 0, loaded.output
    return neo4j_settings.with_overrides(  # answered without an LLM, whatever the environment names
        cache_dir=folder / "cache",
        checkpoints_dir=folder / "ckpt",
        runs_dir=folder / "runs",
        llm_model=None,
        llm_base_url=None,
    )


@pytest.fixture(scope="module")
def service(default_data):
    """`kgdb serve`'s application (the page included) on a free loopback port: yields its base URL."""
    from kgdb.api import Kgdb
    from support.service_app import serving

    with Kgdb(Graph.connect(default_data)) as kg, serving(kg) as url:
        yield url


@pytest.fixture(scope="module")
def chrome():
    """A headless Chromium; skipped, with the reason, where Debian's chromium is not installed."""
    if not CHROMIUM.is_file() or not CHROMEDRIVER.is_file():
        pytest.skip(f"needs {CHROMIUM} and {CHROMEDRIVER} (`bash .ci/browser-tier` installs them)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1100"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=str(CHROMEDRIVER)))
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def artefacts(tmp_path) -> Path:
    folder = Path(os.environ["KGDB_TEST_ARTEFACTS"]) if os.environ.get("KGDB_TEST_ARTEFACTS") else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    return folder

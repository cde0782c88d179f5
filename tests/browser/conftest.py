"""A real JupyterLab server and a real (headless) Chromium for the browser tests.

The server runs from the project's venv on 127.0.0.1, a free port and a random token, inside a
temporary directory that also holds its own Jupyter config/data/runtime folders and IPython
directory (nothing is written to the user's home). Chromium is Debian's (``/usr/bin/chromium``),
launched by Playwright's Python package with ``executable_path`` — Playwright's own browser
download cannot work on our machines. Teardown: the server's shutdown API, then only the
process group this fixture started is killed if it is still alive; the folder is removed.

A missing browser is a failure, not a skip: CI installs it (``.ci/run``).
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from offline_pages import STEMS, given_reports

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
ROOT = Path(__file__).resolve().parents[2]


def chromium_path() -> str:
    env = os.environ.get("MLPL_LAB_CHROMIUM")
    for path in ([env] if env else []) + list(CHROMIUM_CANDIDATES):
        if path and os.path.exists(path):
            return path
    pytest.fail("no Chromium found (looked at /usr/bin/chromium): install Debian's browser with "
                "`apt-get install -y chromium` (CI's .ci/run does) or set MLPL_LAB_CHROMIUM; never "
                "`playwright install`", pytrace=False)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A running JupyterLab: ``url(path)`` with the token, ``root`` its notebook folder."""

    def __init__(self, root: Path, port: int, token: str, proc: subprocess.Popen):
        self.root, self.port, self.token, self.proc = root, port, token, proc

    def url(self, path: str = "lab") -> str:
        return f"http://127.0.0.1:{self.port}/{path}?token={self.token}"

    def api(self, path: str, method: str = "GET"):
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/api/{path}", method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=5) as r:
            body = r.read()
            return json.loads(body) if body else None


@pytest.fixture(scope="session")
def browser_home():
    """One temporary folder for everything the session writes (removed at the end)."""
    home = Path(tempfile.mkdtemp(prefix="mlpl-lab-browser-"))
    yield home
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def lab(browser_home):
    root = browser_home / "notebooks"
    root.mkdir()
    env = dict(os.environ)
    for var, sub in (("JUPYTER_CONFIG_DIR", "jupyter-config"), ("JUPYTER_DATA_DIR", "jupyter-data"),
                     ("JUPYTER_RUNTIME_DIR", "jupyter-runtime"), ("IPYTHONDIR", "ipython"),
                     ("MPLCONFIGDIR", "matplotlib"), ("XDG_CONFIG_HOME", "xdg-config"),
                     ("XDG_CACHE_HOME", "xdg-cache")):
        (browser_home / sub).mkdir(exist_ok=True)
        env[var] = str(browser_home / sub)
    # the project's kernel ("python3" of this venv) must stay visible
    env["JUPYTER_PATH"] = os.pathsep.join([str(Path(sys.prefix) / "share" / "jupyter")]
                                          + ([env["JUPYTER_PATH"]] if env.get("JUPYTER_PATH") else []))
    labconfig = browser_home / "jupyter-config" / "labconfig"
    labconfig.mkdir()
    (labconfig / "page_config.json").write_text(json.dumps(
        {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
    # render every cell (JupyterLab 4 renders only cells near the viewport by default)
    settings = browser_home / "lab-settings"
    (settings / "@jupyterlab" / "notebook-extension").mkdir(parents=True)
    (settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings").write_text(
        json.dumps({"windowingMode": "none"}))
    env["JUPYTERLAB_SETTINGS_DIR"] = str(settings)
    env["JUPYTERLAB_WORKSPACES_DIR"] = str(browser_home / "lab-workspaces")
    env["MLPL_LAB_PROGRESS"] = "0"
    env.pop("MPLBACKEND", None)  # CI exports Agg; the kernel must keep its inline backend
    env["MLPL_LAB_DATA"] = str(browser_home / "data")
    port, token = _free_port(), secrets.token_hex(16)
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
           "--port-retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
           "--LabApp.news_url=None", "--ServerApp.open_browser=False"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    log = open(browser_home / "server.log", "w")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=root,
                            start_new_session=True)
    server = Lab(root, port, token, proc)
    deadline = time.time() + 90
    while True:
        if proc.poll() is not None:
            log.close()
            pytest.fail("jupyter lab exited at start:\n" + (browser_home / "server.log").read_text()[-3000:])
        try:
            server.api("status")
            break
        except Exception:
            if time.time() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                pytest.fail("jupyter lab did not answer /api/status within 90 s")
            time.sleep(0.5)
    try:
        yield server
    finally:
        try:
            server.api("shutdown", method="POST")
            proc.wait(timeout=20)
        except Exception:
            pass
        if proc.poll() is None:  # only the process group this fixture started
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        log.close()


@pytest.fixture(scope="session")
def browser(browser_home):
    from playwright.sync_api import sync_playwright

    exe = chromium_path()
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, headless=True,
                               args=["--no-sandbox", "--disable-dev-shm-usage"],
                               env={**os.environ, "HOME": str(browser_home),
                                    "XDG_CONFIG_HOME": str(browser_home / "xdg-config"),
                                    "XDG_CACHE_HOME": str(browser_home / "xdg-cache")})
        yield b
        b.close()


@pytest.fixture(scope="session")
def smoke_series(browser_home):
    """The whole series executed once under smoke with the report's own export (executed notebooks
    and HTML side by side), shared by the report and book tests: the first folder of
    ``$MLPL_LAB_REPORTS`` when given, else executed here (one execution per notebook per session)."""
    given = given_reports()
    if given:
        return given[0]
    from mlpl_lab.reporting.execute import execute_notebook

    out = browser_home / "smoke"
    for stem in STEMS:
        execute_notebook(ROOT / "notebooks" / f"{stem}.ipynb", out, profile="smoke", html=True, timeout=600)
    return out


@pytest.fixture
def out_dir(tmp_path):
    """Where screenshots go (printed by the tests)."""
    return tmp_path


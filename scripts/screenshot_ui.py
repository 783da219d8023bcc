"""Headless Chromium screenshot of a flow run page in the Prefect UI: the run and its artifact table.

    python scripts/screenshot_ui.py --out ui.png                       # own server + a sample llama run
    python scripts/screenshot_ui.py --api-url http://127.0.0.1:4200/api --flow-run-id <id> --out ui.png

Without ``--api-url`` it starts ``prefect server start`` on a free 127.0.0.1 port (SQLite in a
temporary PREFECT_HOME), runs the parent flow on generated sample dumps against it, screenshots the
run's page (sub-flow timeline, logs) and its table artifact's page, and stops the server. Needs Debian's ``chromium`` (``apt-get install -y chromium``);
about a minute, so it is not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _post(url: str, body: dict) -> list[dict]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def _wait_healthy(api_url: str, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"{api_url}/health", timeout=5):
                return
        except OSError:
            if proc.poll() is not None:
                raise SystemExit("prefect server exited during start-up") from None
            time.sleep(0.5)
    raise SystemExit("prefect server did not become healthy")


def _sample_run(api_url: str, env: dict[str, str], work: Path) -> str:
    """Run the parent flow on sample dumps against the server; return its flow run id."""
    subprocess.run([sys.executable, "-m", "flows.llama", "--sample", "--sample-pages", "60", "--out", str(work / "data"),
                    "--runner", "thread"], cwd=REPO, env={**env, "PREFECT_API_URL": api_url}, check=True)
    runs = _post(f"{api_url}/flow_runs/filter", {"flows": {"name": {"any_": ["llama"]}}, "sort": "START_TIME_DESC",
                                                 "limit": 1})
    return runs[0]["id"]


def screenshot(ui_url: str, target: Path, width: int, height: int, budget_ms: int) -> None:
    """Chromium renders the single-page app (virtual time lets its API calls finish) and writes a PNG."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        raise SystemExit("no chromium found (Debian: apt-get install -y chromium)")
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        "--no-first-run", "--disable-extensions", f"--user-data-dir={profile}",
                        f"--window-size={width},{height}", f"--virtual-time-budget={budget_ms}",
                        f"--screenshot={target.resolve()}", ui_url], check=True, timeout=180,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(f"wrote {target} ({target.stat().st_size} bytes) from {ui_url}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--api-url", help="an existing server's API (default: start one)")
    parser.add_argument("--flow-run-id", help="the run to show (default: run the sample parent flow)")
    parser.add_argument("--tab", default="Artifacts", help="flow run page tab (default: %(default)s)")
    parser.add_argument("--artifact", default="llama-sources", help="table artifact for the second screenshot")
    parser.add_argument("--out", type=Path, default=Path("ui-flow-run.png"),
                        help="flow run page; the table goes to <stem>-artifact.png (default: %(default)s)")
    parser.add_argument("--size", default="1500x1100", help="window WIDTHxHEIGHT (default: %(default)s)")
    parser.add_argument("--budget-ms", type=int, default=20000, help="virtual time for the page to load")
    args = parser.parse_args(argv)
    width, height = (int(x) for x in args.size.split("x"))
    env = {**os.environ, "DO_NOT_TRACK": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
           "PREFECT_SERVER_UI_SHOW_PROMOTIONAL_CONTENT": "false"}
    with tempfile.TemporaryDirectory(prefix="kinda-ui-") as tmp:
        work, server = Path(tmp), None
        api_url = args.api_url
        try:
            if api_url is None:
                port = _free_port()
                api_url = f"http://127.0.0.1:{port}/api"
                server_env = {**env, "PREFECT_HOME": str(work / "home"), "PREFECT_UI_API_URL": api_url,
                              "PREFECT_API_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{work / 'prefect.db'}"}
                server_env.pop("PREFECT_API_URL", None)
                server = subprocess.Popen([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
                                           "--port", str(port)], env=server_env, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL, start_new_session=True)
                _wait_healthy(api_url, server)
            run_id = args.flow_run_id or _sample_run(api_url, env, work)
            ui = api_url.removesuffix("/api")
            screenshot(f"{ui}/runs/flow-run/{run_id}?tab={args.tab}", args.out, width, height, args.budget_ms)
            artifacts = _post(f"{api_url}/artifacts/filter", {"artifacts": {"flow_run_id": {"any_": [run_id]},
                                                                            "type": {"any_": ["table"]}}})
            table = next((a for a in artifacts if a["key"] == args.artifact), artifacts[0] if artifacts else None)
            if table is not None:  # the table itself, on its own page
                target = args.out.with_name(f"{args.out.stem}-artifact{args.out.suffix}")
                screenshot(f"{ui}/artifacts/artifact/{table['id']}", target, width, height, args.budget_ms)
        finally:
            if server is not None:
                os.killpg(server.pid, signal.SIGTERM)
                server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())

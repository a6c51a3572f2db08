"""A Hub dataset read (``read_documents("owner/name")``, through ``datasets``) against a misbehaving Hub stand-in on
127.0.0.1: transient 5xx and dropped connections are retried within the network bounds, as pushes are; a Hub that
keeps failing is one line."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from hub_standin import LocalHub

from envre_hf.documents import documents_to_dataset

REPO = Path(__file__).resolve().parents[2]
SHARD = "data/test-00000-of-00001.parquet"
CARD = b"---\nconfigs:\n- config_name: default\n  data_files:\n  - split: test\n    path: data/test-*\n---\n"


def test_hub_reads_survive_two_500s_and_two_dropped_connections_and_a_dead_hub_is_one_line(redocred_dev, tmp_path):
    shard = io.BytesIO()
    documents_to_dataset(redocred_dev[:2]).to_parquet(shard)
    with LocalHub() as hub:
        for repo in ("envre/five", "envre/drops", "envre/dead"):
            hub.files[("dataset", repo)], hub.shas[("dataset", repo)] = {"README.md": CARD, SHARD: shard.getvalue()}, "a" * 40
        hub.read_faults = {f"five/resolve/{'a' * 40}/data": [("status", 500, {}, "{}")] * 2,
                           f"drops/resolve/{'a' * 40}/data": [("drop",)] * 2,
                           f"dead/resolve/{'a' * 40}/data": [("status", 503, {}, "{}")] * 50}
        code = """
            import json
            from envre_hf.documents import read_documents
            from envre_hf.hub_calls import HubError
            out = {repo: [d.key for d in read_documents(f"envre/{repo}")] for repo in ("five", "drops")}
            try:
                read_documents("envre/dead")
            except HubError as err:
                out["dead"] = str(err)
            print(json.dumps(out))
        """
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_", "ENVRE_"))}
        env.update(HF_ENDPOINT=hub.endpoint, HF_HOME=str(tmp_path / "home"), HF_HUB_DISABLE_PROGRESS_BARS="1",
                   HF_DATASETS_DISABLE_PROGRESS_BARS="1", PYTHONPATH=str(REPO), ENVRE_BACKOFF="0.05")
        proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                              timeout=300, cwd=str(tmp_path))
        assert proc.returncode == 0, proc.stderr[-3000:]
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        left = {key: len(queue) for key, queue in hub.read_faults.items()}
    keys = [d.key for d in redocred_dev[:2]]
    assert out["five"] == keys and out["drops"] == keys  # each read answered after its two faults
    assert list(left.values())[:2] == [0, 0] and 50 - list(left.values())[2] == 6  # the dead Hub: 1 + 5 retries
    assert out["dead"].startswith(f"the Hub at {hub.endpoint} failed the download of dataset envre/dead: giving up "
                                  "after 6 attempts") and "HTTP" in out["dead"] and "\n" not in out["dead"]

"""Wall time of ``envre icl`` against a local OpenAI-compatible stand-in answering each completion after a fixed
delay, sequential (``--concurrency 1``) vs concurrent, on the first Re-DocRED test documents.

Each run is ``python -m envre_hf.cli.main icl ...`` in a child process, timed from its start to its exit (start-up
included: imports, reading ``--train``, the prompts); the stand-in (``tests/_chat_server.py``, on 127.0.0.1 in this
process) records when each request arrives, so the figures also split the start-up (spawn to first request) from the
requests phase (first request to exit). Both runs must write the same ``predictions.json``.

    python3 benchmarks/bench_icl_concurrency.py                     # 64 documents, 0.5 s, 1 vs 16 (goal >= 10x)
    python3 benchmarks/bench_icl_concurrency.py --docs 32 --delay 1.5 --concurrency 8   # the issue's done-when: >= 3.5x
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the stand-in is the tests' chat server
from _bench_common import DEV, REPO, TEST, machine, write_json  # noqa: E402
from _chat_server import ChatServer, digest_reply  # noqa: E402


def run_icl(server: ChatServer, test: Path, out: Path, concurrency: int) -> dict:
    """One ``envre icl`` run in a child process: its wall time, start-up and requests phase."""
    argv = [sys.executable, "-m", "envre_hf.cli.main", "icl", "--test", str(test), "--train", str(DEV), "--backend",
            "openai", "--model", "stand-in", "--base-url", server.url, "--k", "1", "--concurrency", str(concurrency),
            "--output", str(out)]
    env = {**os.environ, "PYTHONPATH": str(REPO), "OPENAI_API_KEY": "sk-bench-stand-in", "HF_HUB_OFFLINE": "1"}
    sent = len(server.requests)
    start = time.monotonic()
    proc = subprocess.run(argv, env=env, cwd=str(REPO), capture_output=True, text=True)
    wall = time.monotonic() - start
    if proc.returncode != 0:
        raise RuntimeError(f"envre icl failed:\n{proc.stderr[-3000:]}")
    first = min(r["arrived"] for r in server.requests[sent:])
    return {"concurrency": concurrency, "wall_s": round(wall, 2), "startup_s": round(first - start, 2),
            "requests_s": round(start + wall - first, 2), "requests": len(server.requests) - sent,
            "most_in_flight": server.most_in_flight}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=64, help="Re-DocRED test documents (default 64)")
    parser.add_argument("--delay", type=float, default=0.5, help="seconds the stand-in takes per completion (0.5)")
    parser.add_argument("--concurrency", type=int, default=16, help="the concurrent run's --concurrency (16)")
    parser.add_argument("--goal", type=float, default=None, help="ratio to reach (default 10 at 16, else 3.5)")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here (benchmarks/results/...)")
    args = parser.parse_args()
    goal = args.goal or (10.0 if args.concurrency >= 16 else 3.5)
    with tempfile.TemporaryDirectory(prefix="bench-icl-") as tmp:
        test = Path(tmp) / "test.json"
        test.write_text(json.dumps(json.loads(TEST.read_text())[: args.docs]))
        figures = []
        for concurrency in (1, args.concurrency):
            server = ChatServer(delay=args.delay, reply=digest_reply)  # a fresh stand-in: most_in_flight of this run
            try:
                figures.append(run_icl(server, test, Path(tmp) / f"c{concurrency}", concurrency))
            finally:
                server.close()
            print(json.dumps(figures[-1]))
        predictions = [(Path(tmp) / f"c{c}" / "predictions.json").read_bytes() for c in (1, args.concurrency)]
    sequential, concurrent = figures
    result = {
        "command": "python3 benchmarks/bench_icl_concurrency.py " + " ".join(sys.argv[1:]),
        "machine": machine(),
        "documents": args.docs,
        "delay_s": args.delay,
        "runs": figures,
        "speedup_wall": round(sequential["wall_s"] / concurrent["wall_s"], 2),
        "speedup_requests": round(sequential["requests_s"] / concurrent["requests_s"], 2),
        "goal": goal,
        "identical_predictions": predictions[0] == predictions[1],
    }
    result["goal_met_wall"] = result["speedup_wall"] >= goal  # start-up included (the done-when)
    result["goal_met_requests"] = result["speedup_requests"] >= goal
    print(json.dumps({k: v for k, v in result.items() if k not in ("machine", "runs")}))
    if args.json is not None:
        write_json(REPO / args.json, result)


if __name__ == "__main__":
    main()

"""Runs the adversarial and fault suite (testdata/suite.json) through a real
worker: every cpu entry on CPU; the cuda entries too when
KAGENT_SUITE_PLATFORM=cuda and a GPU is present."""

from __future__ import annotations

import os
import unittest
from typing import Any, Dict, List

import torch

from tests.worker_client import WorkerClient, load_suite, run_entry

SEEDS = [11, 22, 918273645]


def expected_outcomes(expect: str) -> List[str]:
    """"fail:a|b": rejected by a or by b (a cheat whose first failing check
    depends on the judge's random choice of buffers)."""
    kind, _, names = expect.partition(":")
    if not names:
        return [expect]
    return [f"{kind}:{n}" for n in names.split("|")]


class SuiteTest(unittest.TestCase):
    platform = os.environ.get("KAGENT_SUITE_PLATFORM", "cpu")

    def test_suite(self) -> None:
        if self.platform == "cuda" and not torch.cuda.is_available():
            self.skipTest("no GPU")
        entries = load_suite(self.platform)
        self.assertGreater(len(entries), 10)
        only = os.environ.get("KAGENT_SUITE_ONLY", "")
        state: Dict[str, Any] = {}
        failures = []

        def factory() -> WorkerClient:
            return WorkerClient(device=self.platform)

        try:
            for entry in entries:
                if only and only not in entry["name"]:
                    continue
                with self.subTest(entry["name"]):
                    got = run_entry(factory, state, entry, SEEDS)
                    reply = got["reply"]
                    detail = ""
                    if reply is not None:
                        res = reply.get("result") or {}
                        detail = res.get("reason") or (reply.get("error") or {}).get("message", "")
                    if got["outcome"] not in expected_outcomes(entry["expect"]):
                        failures.append(f"{entry['name']}: expected {entry['expect']}, got {got['outcome']} ({detail})")
                    if entry.get("fatal") and reply is not None:
                        fatal = (reply.get("result") or {}).get("fatal") or (reply.get("error") or {}).get("fatal")
                        if not fatal:
                            failures.append(f"{entry['name']}: expected a fatal reply")
                    if os.environ.get("KAGENT_SUITE_VERBOSE"):
                        print(f"{entry['name']}: {got['outcome']} {detail[:200]}")
        finally:
            client = state.get("client")
            if client is not None:
                client.close()
        self.assertEqual(failures, [], "\n".join(failures))


if __name__ == "__main__":
    unittest.main()

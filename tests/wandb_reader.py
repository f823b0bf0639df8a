"""Read offline W&B runs back from disk, so tests check what wandb really wrote."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from support import wait_until

__all__ = ["read_offline_runs", "read_resumed_history"]

_BLOCK = 32 * 1024
_HEADER = 7  # ":W&B" + magic (2 bytes) + version (1 byte)


def _records(path: Path) -> Iterator[Any]:
    """Yield the protobuf records of an offline ``run-<id>.wandb`` file (leveldb-style log)."""
    from wandb.proto import wandb_internal_pb2 as pb

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    pos, chunks = _HEADER, b""
    while pos + 7 <= len(data):
        if _BLOCK - pos % _BLOCK < 7:  # block trailer padding
            pos += _BLOCK - pos % _BLOCK
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        chunks += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # FULL or LAST
            record = pb.Record()
            record.ParseFromString(chunks)
            chunks = b""
            yield record


def _complete(path: Path) -> bool:
    try:
        return any(r.WhichOneof("record_type") == "exit" for r in _records(path))
    except Exception:  # a record still being written
        return False


def read_offline_runs(root: Path, expect: int = 1) -> dict[str, dict[str, Any]]:
    """Read every offline run under ``root``: name -> group, tags, config, history, summary, axes,
    alerts, artifacts (name, type, aliases, entries, metadata) and dir (the run's folder).

    wandb-core writes the run file asynchronously after ``finish()`` returns in-process, so wait
    until ``expect`` run files each hold their final ``exit`` record.
    """

    def files() -> list[Path]:
        found = sorted(root.glob("wandb/offline-run-*/run-*.wandb"))
        return found if len(found) >= expect and all(_complete(p) for p in found) else []

    runs: dict[str, dict[str, Any]] = {}
    # wandb-core finishes the file on its own time: minutes on a loaded 2-core machine
    for path in wait_until(files, timeout_s=180, what="offline W&B runs complete on disk"):
        run: dict[str, Any] = {"config": {}, "history": [], "summary": {}, "axes": {}, "alerts": []}
        run.update(artifacts=[], dir=path.parent)
        for record in _records(path):
            kind = record.WhichOneof("record_type")
            if kind == "run":
                run.update(name=record.run.display_name, group=record.run.run_group)
                run.update(job_type=record.run.job_type, notes=record.run.notes)
                run["tags"] = list(record.run.tags)
                for item in record.run.config.update:
                    run["config"][item.key] = json.loads(item.value_json)
            elif kind == "config":
                for item in record.config.update:
                    run["config"][item.key] = json.loads(item.value_json)
            elif kind == "history":
                row = {
                    i.key or "/".join(i.nested_key): json.loads(i.value_json)
                    for i in record.history.item
                }
                run["history"].append({k: v for k, v in row.items() if not k.startswith("_")})
            elif kind == "summary":
                for item in record.summary.update:
                    key = item.key or "/".join(item.nested_key)
                    run["summary"][key] = json.loads(item.value_json)
            elif kind == "alert":
                a = record.alert
                run["alerts"].append({"title": a.title, "text": a.text, "level": a.level})
            elif kind == "artifact" and record.artifact.type != "run_table":
                a = record.artifact
                run["artifacts"].append(
                    {
                        "name": a.name,
                        "type": a.type,
                        "aliases": sorted(a.aliases),
                        "entries": sorted(c.path for c in a.manifest.contents),
                        "metadata": json.loads(a.metadata or "{}"),
                    }
                )
            elif kind == "metric" and record.metric.name:
                run["axes"][record.metric.name] = record.metric.step_metric
        run["config"].pop("_wandb", None)
        runs[run["name"]] = run
    return runs


def _start_time(path: Path) -> float:
    for record in _records(path):
        if record.WhichOneof("record_type") == "run":
            return float(record.run.start_time.seconds + record.run.start_time.nanos / 1e9)
    return float("inf")


def read_resumed_history(root: Path, run_id: str, expect: int = 1) -> list[dict[str, Any]]:
    """The history of W&B run ``run_id`` across every offline folder written for it (a host
    that died leaves one, incomplete; the one that resumed the run, another), in the order they
    were started: what ``wandb sync`` uploads into that one run. Waits until ``expect`` folders
    have begun the run (wandb-core writes after ``finish()`` returns) and the last is complete
    (its ``exit`` record written)."""

    def files() -> list[Path]:
        found = sorted(root.glob(f"wandb/offline-run-*/run-{run_id}.wandb"))
        started = sorted((t, p) for p in found if (t := _start_time(p)) != float("inf"))
        # A host killed as it began a run leaves a file with no run record: nothing in it.
        if len(started) < expect or not _complete(started[-1][1]):
            return []
        return [p for _, p in started]

    history: list[dict[str, Any]] = []
    for path in wait_until(files, timeout_s=180, what=f"offline W&B run {run_id} complete"):
        for record in _records(path):
            if record.WhichOneof("record_type") == "history":
                row = {
                    i.key or "/".join(i.nested_key): json.loads(i.value_json)
                    for i in record.history.item
                }
                history.append({k: v for k, v in row.items() if not k.startswith("_")})
    return history

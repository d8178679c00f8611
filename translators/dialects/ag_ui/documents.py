"""The documents an AG-UI run keeps up to date with snapshots and JSON Patch deltas: the shared
state, each activity, each sub-agent's status. Each is one ``data-*`` part with an ``id``, which
the client replaces in place on every update."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch

from chunkbridge.kit import Chunk, MalformedEvent, require_list, require_str

__all__ = ["Documents"]


class Documents:
    """The run's documents as they stand, and the part each update becomes."""

    def __init__(self) -> None:
        self._state: Any = None
        self._activities: dict[str, Any] = {}
        self._subagents: dict[str, dict[str, Any]] = {}

    def state_snapshot(self, event: dict[str, Any]) -> Chunk:
        self._state = copy.deepcopy(event.get("snapshot"))
        return {"type": "data-state", "id": "state", "data": self._state}

    def state_delta(self, event: dict[str, Any]) -> Chunk:
        patch = require_list(event.get("delta"), "'delta'")
        self._state = _patched(self._state if self._state is not None else {}, patch)
        return {"type": "data-state", "id": "state", "data": self._state}

    def activity_snapshot(self, event: dict[str, Any]) -> Chunk:
        message = require_str(event, "messageId")
        content = copy.deepcopy(event.get("content"))
        previous = self._activities.get(message)
        if (
            event.get("replace") is False
            and isinstance(previous, dict)
            and isinstance(content, dict)
        ):
            content = {**previous, **content}
        self._activities[message] = content
        return self._activity(message, event.get("activityType"))

    def activity_delta(self, event: dict[str, Any]) -> Chunk:
        message = require_str(event, "messageId")
        patch = require_list(event.get("patch"), "'patch'")
        self._activities[message] = _patched(self._activities.get(message) or {}, patch)
        return self._activity(message, event.get("activityType"))

    def _activity(self, message: str, activity_type: Any) -> Chunk:
        data = {"activityType": activity_type, "content": self._activities[message]}
        return {"type": "data-activity", "id": message, "data": data}

    def subagent(self, event: dict[str, Any]) -> Chunk:
        run_id = require_str(event, "subagentRunId")
        status = {"SUBAGENT_STARTED": "started", "SUBAGENT_FINISHED": "finished"}.get(
            event["type"], "error"
        )
        fields = {k: v for k, v in event.items() if k not in ("type", "timestamp", "rawEvent")}
        # What each event says is kept: the part is replaced in place, and the finish event does
        # not repeat the name the start gave.
        data = self._subagents[run_id] = {**self._subagents.get(run_id, {}), **fields}
        data["status"] = status
        return {"type": "data-subagent", "id": run_id, "data": dict(data)}


def _patched(document: Any, patch: list[Any]) -> Any:
    """``document`` with the RFC 6902 ``patch`` applied (a new object: earlier chunks that
    carried the old one are not changed under the encoder's feet)."""
    try:
        return jsonpatch.apply_patch(document, patch, in_place=False)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError) as exc:
        raise MalformedEvent(f"the JSON Patch does not apply: {exc}") from exc

"""Which Claude models accept two of Anthropic's request features, as Anthropic lists them. Pure.

The lists are data, kept here and nowhere else: each is the `supportedModels` of the feature's
page in Anthropic's documentation (its front matter: platform.claude.com/docs/<lang>/
build-with-claude/context-editing.md and task-budgets.md), as read on 2026-11-26. A name
matches in any case, without leading "provider/" segments, a bracketed suffix
("claude-opus-4-6[1m]") or a date suffix: "anthropic/claude-haiku-4-5" and
"claude-haiku-4-5-20251001" are the same model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_DATE = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2})$")
_BRACKETS = re.compile(r"\[[^\]]*\]$")


def model_key(name: str) -> str:
    """`name` as the lists hold it: lower case, no provider prefix, bracket or date suffix."""
    bare = name.strip().lower().rpartition("/")[2]
    return _DATE.sub("", _BRACKETS.sub("", bare))


@dataclass(frozen=True, slots=True)
class ProviderFeature:
    request_field: str  # where the request carries it, for warnings
    beta: str  # the `anthropic-beta` header value the feature needs
    source: str  # the documentation page the list comes from
    models: frozenset[str]  # model_key of each supported model

    def supports(self, model: str) -> bool:
        return model_key(model) in self.models


def _models(*names: str) -> frozenset[str]:
    return frozenset(model_key(n) for n in names)


CONTEXT_EDITING = ProviderFeature(
    request_field="context_management",
    beta="context-management-2025-06-27",
    source="Anthropic's context editing page (build-with-claude/context-editing)",
    models=_models(
        "claude-fable-5-2",
        "claude-mythos-5-2",
        "claude-fable-5-1",
        "claude-mythos-5-1",
        "claude-fable-5",
        "claude-mythos-5",
        "claude-mythos-preview",
        "claude-opus-5-5",
        "claude-opus-5",
        "claude-sonnet-5-5",
        "claude-sonnet-5",
        "claude-haiku-5-5",
        "claude-haiku-4-5-20251001",
        "claude-opus-4-8",
        "claude-opus-4-7",
        "claude-opus-4-6",
        "claude-sonnet-4-6",
        "claude-opus-4-5-20251101",
        "claude-sonnet-4-5-20250929",
    ),
)

TASK_BUDGETS = ProviderFeature(
    request_field="output_config.task_budget",
    beta="task-budgets-2026-03-13",
    source="Anthropic's task budgets page (build-with-claude/task-budgets)",
    models=_models(
        "claude-fable-5-1",
        "claude-mythos-5-1",
        "claude-fable-5",
        "claude-mythos-5",
        "claude-opus-5-5",
        "claude-opus-5",
        "claude-opus-4-8",
        "claude-opus-4-7",
        "claude-sonnet-5-5",
        "claude-haiku-5-5",
    ),
)

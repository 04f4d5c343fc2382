"""Correct uses of the typed API: this file type-checks clean under the pinned mypy (strict) and
pyright (strict), and imports cleanly (tests/typing/test_checkers.py runs all three).

Every per-event decorator, bare on a sync handler and with every option its event takes on an
async one; every answer type; handlers typed by a wider event; the decorated function keeping
its own type; events built in code without restating their name.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, assert_type

from handler_kit import (
    ConfigChange,
    CwdChanged,
    DirectoryAdded,
    Elicitation,
    ElicitationResult,
    FileChanged,
    HookApp,
    HookEvent,
    InstructionsLoaded,
    Interrupt,
    MessageDisplay,
    Notification,
    Output,
    PermissionDenied,
    PermissionRequest,
    PostCompact,
    PostToolBatch,
    PostToolUse,
    PostToolUseFailure,
    PreCompact,
    PreToolUse,
    SessionEnd,
    SessionStart,
    Setup,
    Stop,
    StopFailure,
    SubagentStart,
    SubagentStop,
    TaskCompleted,
    TaskCreated,
    TeammateIdle,
    UserPromptExpansion,
    UserPromptSubmit,
    WorktreeCreate,
    WorktreeRemove,
    allow,
    block,
    context,
    deny,
)
from handler_kit.core.vocabulary import EventHandler, HandlerResult

app = HookApp("typing-pass-cases")

# -- every decorator: bare on a sync handler, with all its options on an async one ------------


@app.session_start
def session_start_bare(event: SessionStart) -> None:
    return None


@app.session_start(matcher="*", name="session_start_options", timeout=2, idempotent=True)
async def session_start_async(event: SessionStart) -> Output:
    return context("seen")


@app.user_prompt_submit
def user_prompt_submit_bare(event: UserPromptSubmit) -> None:
    return None


@app.user_prompt_submit(
    name="user_prompt_submit_options", timeout=2, fail_closed=True, idempotent=True
)
async def user_prompt_submit_async(event: UserPromptSubmit) -> str:
    return "seen"


@app.pre_tool_use
def pre_tool_use_bare(event: PreToolUse) -> None:
    return None


@app.pre_tool_use(
    matcher="*", name="pre_tool_use_options", timeout=2, fail_closed=True, idempotent=True
)
async def pre_tool_use_async(event: PreToolUse) -> dict[str, Any]:
    return {}


@app.post_tool_use
def post_tool_use_bare(event: PostToolUse) -> None:
    return None


@app.post_tool_use(matcher="*", name="post_tool_use_options", timeout=2, idempotent=True)
async def post_tool_use_async(event: PostToolUse) -> None:
    return None


@app.stop
def stop_bare(event: Stop) -> None:
    return None


@app.stop(name="stop_options", timeout=2, stop_loop_guard=False, idempotent=True)
async def stop_async(event: Stop) -> Output | None:
    return None


@app.post_tool_use_failure
def post_tool_use_failure_bare(event: PostToolUseFailure) -> None:
    return None


@app.post_tool_use_failure(
    matcher="*", name="post_tool_use_failure_options", timeout=2, idempotent=True
)
async def post_tool_use_failure_async(event: PostToolUseFailure) -> HandlerResult:
    return None


@app.post_tool_batch
def post_tool_batch_bare(event: PostToolBatch) -> None:
    return None


@app.post_tool_batch(name="post_tool_batch_options", timeout=2, idempotent=True)
async def post_tool_batch_async(event: PostToolBatch) -> Output:
    return context("seen")


@app.permission_request
def permission_request_bare(event: PermissionRequest) -> None:
    return None


@app.permission_request(
    matcher="*", name="permission_request_options", timeout=2, fail_closed=True, idempotent=True
)
async def permission_request_async(event: PermissionRequest) -> str:
    return "seen"


@app.permission_denied
def permission_denied_bare(event: PermissionDenied) -> None:
    return None


@app.permission_denied(matcher="*", name="permission_denied_options", timeout=2, idempotent=True)
async def permission_denied_async(event: PermissionDenied) -> dict[str, Any]:
    return {}


@app.subagent_start
def subagent_start_bare(event: SubagentStart) -> None:
    return None


@app.subagent_start(matcher="*", name="subagent_start_options", timeout=2, idempotent=True)
async def subagent_start_async(event: SubagentStart) -> None:
    return None


@app.subagent_stop
def subagent_stop_bare(event: SubagentStop) -> None:
    return None


@app.subagent_stop(
    matcher="*", name="subagent_stop_options", timeout=2, stop_loop_guard=False, idempotent=True
)
async def subagent_stop_async(event: SubagentStop) -> Output | None:
    return None


@app.stop_failure
def stop_failure_bare(event: StopFailure) -> None:
    return None


@app.stop_failure(matcher="*", name="stop_failure_options", timeout=2, idempotent=True)
async def stop_failure_async(event: StopFailure) -> HandlerResult:
    return None


@app.session_end
def session_end_bare(event: SessionEnd) -> None:
    return None


@app.session_end(matcher="*", name="session_end_options", timeout=2, idempotent=True)
async def session_end_async(event: SessionEnd) -> Output:
    return context("seen")


@app.setup
def setup_bare(event: Setup) -> None:
    return None


@app.setup(matcher="*", name="setup_options", timeout=2, idempotent=True)
async def setup_async(event: Setup) -> str:
    return "seen"


@app.instructions_loaded
def instructions_loaded_bare(event: InstructionsLoaded) -> None:
    return None


@app.instructions_loaded(
    matcher="*", name="instructions_loaded_options", timeout=2, idempotent=True
)
async def instructions_loaded_async(event: InstructionsLoaded) -> dict[str, Any]:
    return {}


@app.user_prompt_expansion
def user_prompt_expansion_bare(event: UserPromptExpansion) -> None:
    return None


@app.user_prompt_expansion(
    matcher="*", name="user_prompt_expansion_options", timeout=2, fail_closed=True, idempotent=True
)
async def user_prompt_expansion_async(event: UserPromptExpansion) -> None:
    return None


@app.message_display
def message_display_bare(event: MessageDisplay) -> None:
    return None


@app.message_display(name="message_display_options", timeout=2, idempotent=True)
async def message_display_async(event: MessageDisplay) -> Output | None:
    return None


@app.notification
def notification_bare(event: Notification) -> None:
    return None


@app.notification(matcher="*", name="notification_options", timeout=2, idempotent=True)
async def notification_async(event: Notification) -> HandlerResult:
    return None


@app.task_created
def task_created_bare(event: TaskCreated) -> None:
    return None


@app.task_created(name="task_created_options", timeout=2, idempotent=True)
async def task_created_async(event: TaskCreated) -> Output:
    return context("seen")


@app.task_completed
def task_completed_bare(event: TaskCompleted) -> None:
    return None


@app.task_completed(name="task_completed_options", timeout=2, idempotent=True)
async def task_completed_async(event: TaskCompleted) -> str:
    return "seen"


@app.teammate_idle
def teammate_idle_bare(event: TeammateIdle) -> None:
    return None


@app.teammate_idle(name="teammate_idle_options", timeout=2, idempotent=True)
async def teammate_idle_async(event: TeammateIdle) -> dict[str, Any]:
    return {}


@app.config_change
def config_change_bare(event: ConfigChange) -> None:
    return None


@app.config_change(matcher="*", name="config_change_options", timeout=2, idempotent=True)
async def config_change_async(event: ConfigChange) -> None:
    return None


@app.cwd_changed
def cwd_changed_bare(event: CwdChanged) -> None:
    return None


@app.cwd_changed(name="cwd_changed_options", timeout=2, idempotent=True)
async def cwd_changed_async(event: CwdChanged) -> Output | None:
    return None


@app.directory_added
def directory_added_bare(event: DirectoryAdded) -> None:
    return None


@app.directory_added(matcher="*", name="directory_added_options", timeout=2, idempotent=True)
async def directory_added_async(event: DirectoryAdded) -> HandlerResult:
    return None


@app.file_changed
def file_changed_bare(event: FileChanged) -> None:
    return None


@app.file_changed(matcher="*", name="file_changed_options", timeout=2, idempotent=True)
async def file_changed_async(event: FileChanged) -> Output:
    return context("seen")


@app.worktree_create
def worktree_create_bare(event: WorktreeCreate) -> None:
    return None


@app.worktree_create(name="worktree_create_options", timeout=2, idempotent=True)
async def worktree_create_async(event: WorktreeCreate) -> str:
    return "seen"


@app.worktree_remove
def worktree_remove_bare(event: WorktreeRemove) -> None:
    return None


@app.worktree_remove(name="worktree_remove_options", timeout=2, idempotent=True)
async def worktree_remove_async(event: WorktreeRemove) -> dict[str, Any]:
    return {}


@app.pre_compact
def pre_compact_bare(event: PreCompact) -> None:
    return None


@app.pre_compact(matcher="*", name="pre_compact_options", timeout=2, idempotent=True)
async def pre_compact_async(event: PreCompact) -> None:
    return None


@app.post_compact
def post_compact_bare(event: PostCompact) -> None:
    return None


@app.post_compact(matcher="*", name="post_compact_options", timeout=2, idempotent=True)
async def post_compact_async(event: PostCompact) -> Output | None:
    return None


@app.elicitation
def elicitation_bare(event: Elicitation) -> None:
    return None


@app.elicitation(matcher="*", name="elicitation_options", timeout=2, idempotent=True)
async def elicitation_async(event: Elicitation) -> HandlerResult:
    return None


@app.elicitation_result
def elicitation_result_bare(event: ElicitationResult) -> None:
    return None


@app.elicitation_result(matcher="*", name="elicitation_result_options", timeout=2, idempotent=True)
async def elicitation_result_async(event: ElicitationResult) -> Output:
    return context("seen")


@app.interrupt
def interrupt_bare(event: Interrupt) -> None:
    return None


@app.interrupt(name="interrupt_options", timeout=2, idempotent=True)
async def interrupt_async(event: Interrupt) -> HandlerResult:
    return {"systemMessage": f"Turn {event.turn_id} interrupted."}


# -- answer types, handler types ------------------------------------------------------------


@app.pre_tool_use(matcher="issue_refund", name="refund_gate", fail_closed=True)
def refund_gate(event: PreToolUse) -> Output | None:
    """The helpers return an Output; None is no opinion."""
    amount = (event.tool_input or {}).get("amount", 0)
    if amount > 500:
        return deny("Refunds over $500 need a human approver.")
    return allow() if amount else None


@app.stop
async def cite_ticket(event: Stop) -> Output | None:
    if event.stop_hook_active:
        return None
    return block("Cite the ticket number.")


@app.user_prompt_submit
def plain_context(event: UserPromptSubmit) -> str:
    return f"{event.user_name} asked"


@app.post_tool_use(matcher="Bash")
def claude_json(event: PostToolUse) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "ok"}}


@app.post_tool_use(name="string_dict")
def string_dict(event: PostToolUse) -> dict[str, str]:
    return {"systemMessage": "checked"}


@app.session_start(timeout=4.5)
def any_answer(event: SessionStart) -> Any:
    return None


@app.pre_tool_use(name="any_event")
def any_event(event: HookEvent) -> None:
    """A handler of the base model handles every event."""


@app.subagent_stop
def stop_handler_on_subagent_stop(event: Stop) -> None:
    """SubagentStop is a Stop: a Stop handler takes it."""


@app.task_completed(name="task_created_on_completed")
def task_created_on_completed(event: TaskCreated) -> None:
    """TaskCompleted is a TaskCreated."""


@app.on("PreToolUse", matcher="Bash", name="generic_registration")
def generic_registration(event: PreToolUse) -> None:
    """HookApp.on registers by name, for any event (even a runtime's own)."""


def typed_elsewhere(event: PreToolUse) -> Output:
    return allow()


handler: EventHandler[PreToolUse] = typed_elsewhere
app.pre_tool_use(name="registered_later")(typed_elsewhere)


# -- the decorated function keeps its own type ------------------------------------------------

# called by its parameter's name: the function itself, not a Callable[[PreToolUse], ...]
assert_type(refund_gate(event=PreToolUse(tool_name="issue_refund")), Output | None)


async def later() -> HandlerResult:
    assert_type(await cite_ticket(event=Stop()), Output | None)
    awaited: Awaitable[Output | None] = cite_ticket(Stop())
    return await awaited


# -- events built in code, their name filled in -------------------------------------------------

pre = PreToolUse(tool_name="Bash", tool_input={"command": "npm test"})
named = PreToolUse(hook_event_name="PreToolUse", tool_name="Bash")
stop = Stop(stop_hook_active=False, last_assistant_message="Done.")

EVENTS = (
    SessionStart(),
    UserPromptSubmit(),
    PreToolUse(),
    PostToolUse(),
    Stop(),
    PostToolUseFailure(),
    PostToolBatch(),
    PermissionRequest(),
    PermissionDenied(),
    SubagentStart(),
    SubagentStop(),
    StopFailure(),
    SessionEnd(),
    Setup(),
    InstructionsLoaded(),
    UserPromptExpansion(),
    MessageDisplay(),
    Notification(),
    TaskCreated(),
    TaskCompleted(),
    TeammateIdle(),
    ConfigChange(),
    CwdChanged(),
    DirectoryAdded(),
    FileChanged(),
    WorktreeCreate(),
    WorktreeRemove(),
    PreCompact(),
    PostCompact(),
    Elicitation(),
    ElicitationResult(),
    Interrupt(),
)

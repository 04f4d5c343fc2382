"""The per-event decorators of :class:`~handler_kit.core.app.HookApp`, typed for checkers.

Each decorator is used bare (``@app.stop``) or with options (``@app.stop(timeout=2)``), and
binds its handler to its event: under ``@app.pre_tool_use`` a type checker accepts a function
of a :class:`~handler_kit.core.events.PreToolUse` (or of any event type it derives from), sync
or async, returning a :data:`~handler_kit.core.vocabulary.HandlerResult`, and flags a handler
of another event, another return type or a misspelt option. The decorated function is returned
as it is, with its own type.

The keyword options of each decorator are the ones its event can use: ``matcher`` where the
event has a matcher field, ``fail_closed`` where the event has a safe decision,
``stop_loop_guard`` on Stop and SubagentStop. At run time every decorator accepts the options
of :meth:`~handler_kit.core.app.HookApp.on`, as it always has (``on`` refuses what its event
cannot use), and a misspelt option is a ``TypeError`` naming it.

The decorators, their type variables and the imports of the models are generated from the
table of events (:data:`handler_kit.core._event_table.EVENTS`) by ``make generate``, between the
``<generated: ...>`` marker lines; the rest of this module is written by hand.

The event models are named for type checkers only: importing this module defines none of the
Claude-Code-only models (a command hook pays for the one it parses).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, overload

if TYPE_CHECKING:
    # <generated: models> from core/_event_table.py by `make generate`; do not edit
    from handler_kit.core.events import (
        ConfigChange,
        CwdChanged,
        DirectoryAdded,
        Elicitation,
        ElicitationResult,
        FileChanged,
        InstructionsLoaded,
        Interrupt,
        MessageDisplay,
        Notification,
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
    )

    # </generated: models>
    from handler_kit.core.vocabulary import EventHandler

__all__ = ["ON_OPTIONS", "EventDecorators", "HandlerDefinitionError"]

# The keyword options of HookApp.on, which every per-event decorator passes on.
ON_OPTIONS = (
    "matcher",
    "name",
    "timeout",
    "fail_closed",
    "stop_loop_guard",
    "idempotent",
    "allow_unknown_event",
)

# One type variable per event, each bound to that event's handler type: the decorated function
# keeps its own type, and a function that is not a handler of the event is refused. For type
# checkers only: at run time the annotations that name them are never evaluated, and making
# thirty type variables (each compiling its bound) is a share of a command hook's start-up.
# <generated: handler-types> from core/_event_table.py by `make generate`; do not edit
if TYPE_CHECKING:
    SessionStartHandler = TypeVar("SessionStartHandler", bound="EventHandler[SessionStart]")
    UserPromptSubmitHandler = TypeVar(
        "UserPromptSubmitHandler", bound="EventHandler[UserPromptSubmit]"
    )
    PreToolUseHandler = TypeVar("PreToolUseHandler", bound="EventHandler[PreToolUse]")
    PostToolUseHandler = TypeVar("PostToolUseHandler", bound="EventHandler[PostToolUse]")
    StopHandler = TypeVar("StopHandler", bound="EventHandler[Stop]")
    PostToolUseFailureHandler = TypeVar(
        "PostToolUseFailureHandler", bound="EventHandler[PostToolUseFailure]"
    )
    PostToolBatchHandler = TypeVar("PostToolBatchHandler", bound="EventHandler[PostToolBatch]")
    PermissionRequestHandler = TypeVar(
        "PermissionRequestHandler", bound="EventHandler[PermissionRequest]"
    )
    PermissionDeniedHandler = TypeVar(
        "PermissionDeniedHandler", bound="EventHandler[PermissionDenied]"
    )
    SubagentStartHandler = TypeVar("SubagentStartHandler", bound="EventHandler[SubagentStart]")
    SubagentStopHandler = TypeVar("SubagentStopHandler", bound="EventHandler[SubagentStop]")
    StopFailureHandler = TypeVar("StopFailureHandler", bound="EventHandler[StopFailure]")
    SessionEndHandler = TypeVar("SessionEndHandler", bound="EventHandler[SessionEnd]")
    SetupHandler = TypeVar("SetupHandler", bound="EventHandler[Setup]")
    InstructionsLoadedHandler = TypeVar(
        "InstructionsLoadedHandler", bound="EventHandler[InstructionsLoaded]"
    )
    UserPromptExpansionHandler = TypeVar(
        "UserPromptExpansionHandler", bound="EventHandler[UserPromptExpansion]"
    )
    MessageDisplayHandler = TypeVar("MessageDisplayHandler", bound="EventHandler[MessageDisplay]")
    NotificationHandler = TypeVar("NotificationHandler", bound="EventHandler[Notification]")
    TaskCreatedHandler = TypeVar("TaskCreatedHandler", bound="EventHandler[TaskCreated]")
    TaskCompletedHandler = TypeVar("TaskCompletedHandler", bound="EventHandler[TaskCompleted]")
    TeammateIdleHandler = TypeVar("TeammateIdleHandler", bound="EventHandler[TeammateIdle]")
    ConfigChangeHandler = TypeVar("ConfigChangeHandler", bound="EventHandler[ConfigChange]")
    CwdChangedHandler = TypeVar("CwdChangedHandler", bound="EventHandler[CwdChanged]")
    DirectoryAddedHandler = TypeVar("DirectoryAddedHandler", bound="EventHandler[DirectoryAdded]")
    FileChangedHandler = TypeVar("FileChangedHandler", bound="EventHandler[FileChanged]")
    WorktreeCreateHandler = TypeVar("WorktreeCreateHandler", bound="EventHandler[WorktreeCreate]")
    WorktreeRemoveHandler = TypeVar("WorktreeRemoveHandler", bound="EventHandler[WorktreeRemove]")
    PreCompactHandler = TypeVar("PreCompactHandler", bound="EventHandler[PreCompact]")
    PostCompactHandler = TypeVar("PostCompactHandler", bound="EventHandler[PostCompact]")
    ElicitationHandler = TypeVar("ElicitationHandler", bound="EventHandler[Elicitation]")
    ElicitationResultHandler = TypeVar(
        "ElicitationResultHandler", bound="EventHandler[ElicitationResult]"
    )
    InterruptHandler = TypeVar("InterruptHandler", bound="EventHandler[Interrupt]")
# </generated: handler-types>


class EventDecorators:
    """The per-event decorators, one per hook event; :meth:`HookApp.on` registers."""

    # HookApp.on, which every decorator calls; declared here for the type checker.
    on: Callable[..., Callable[[Any], Any]]

    # <generated: decorators> from core/_event_table.py by `make generate`; do not edit
    @overload
    def session_start(self, func: SessionStartHandler, /) -> SessionStartHandler: ...
    @overload
    def session_start(
        self,
        /,
        *,
        matcher: str | None = None,
        name: str | None = None,
        timeout: float | None = None,
        idempotent: bool = False,
    ) -> Callable[[SessionStartHandler], SessionStartHandler]: ...
    def session_start(self, func: Any = None, /, **options: Any) -> Any:
        """Register a handler of SessionStart; options as in :meth:`HookApp.on`."""
        return _register(self, "SessionStart", func, options)

    @overload
    def user_prompt_submit(self, func: UserPromptSubmitHandler, /) -> UserPromptSubmitHandler: ...
    @overload
    def user_prompt_submit(
        self,
        /,
        *,
        name: str | None = None,
        timeout: float | None = None,
        fail_closed: bool = False,
        idempotent: bool = False,
    ) -> Callable[[UserPromptSubmitHandler], UserPromptSubmitHandler]: ...
    def user_prompt_submit(self, func: Any = None, /, **options: Any) -> Any:
        """Register a handler of UserPromptSubmit; options as in :meth:`HookApp.on`."""
        return _register(self, "UserPromptSubmit", func, options)

    @overload
    def pre_tool_use(self, func: PreToolUseHandler, /) -> PreToolUseHandler: ...
    @overload
    def pre_tool_use(
        self,
        /,
        *,
        matcher: str | None = None,
        name: str | None = None,
        timeout: float | None = None,
        fail_closed: bool = False,
        idempotent: bool = False,
    ) -> Callable[[PreToolUseHandler], PreToolUseHandler]: ...
    def pre_tool_use(self, func: Any = None, /, **options: Any) -> Any:
        """Register a handler of PreToolUse; options as in :meth:`HookApp.on`."""
        return _register(self, "PreToolUse", func, options)

    @overload
    def post_tool_use(self, func: PostToolUseHandler, /) -> PostToolUseHandler: ...
    @overload
    def post_tool_use(
        self,
        /,
        *,
        matcher: str | None = None,
        name: str | None = None,
        timeout: float | None = None,
        idempotent: bool = False,
    ) -> Callable[[PostToolUseHandler], PostToolUseHandler]: ...
    def post_tool_use(self, func: Any = None, /, **options: Any) -> Any:
        """Register a handler of PostToolUse; options as in :meth:`HookApp.on`."""
        return _register(self, "PostToolUse", func, options)

    @overload
    def stop(self, func: StopHandler, /) -> StopHandler: ...
    @overload
    def stop(
        self,
        /,
        *,
        name: str | None = None,
        timeout: float | None = None,
        stop_loop_guard: bool = True,
        idempotent: bool = False,
    ) -> Callable[[StopHandler], StopHandler]: ...
    def stop(self, func: Any = None, /, **options: Any) -> Any:
        """Register a handler of Stop; options as in :meth:`HookApp.on`."""
        return _register(self, "Stop", func, options)

    @overload
    def post_tool_use_failure(
        self, func: PostToolUseFailureHandler, /
    ) -> PostToolUseFailureHandler: ...
    @overload
    def post_tool_use_failure(
        self,
        /,
        *,
        matcher: str | None = None,
        name: str | None = None,
        timeout: float | None = None,
        idempotent: bool = False,
    ) -> Callable[[PostToolUseFailureHandler], PostToolUseFailureHandler]: ...
    def post_tool_use_failure(self, func: Any = None, /, **options: Any) -> Any:
        """Register a handler of PostToolUseFailure; options as in :meth:`HookApp.on`."""
        return _register(self, "PostToolUseFailure", func, options)

    @overload
    def post_tool_batch(self, func: PostToolBatchHandler, /) -> PostToolBatchHandler: ...
    @overload
    def post_tool_batch(
        self, /, *, name: str | None = None, timeout: float | None = None, idempotent: bool = False
    ) -> Callable[[PostToolBatchHandler], PostToolBatchHandler]: ...
    def post_tool_batch(self, func: Any = None, /, **options: Any) -> Any:
        """Register a handler of PostToolBatch; options as in :meth:`HookApp.on`."""
        return _register(self, "PostToolBatch", func, options)

    @overload
    def permission_request(self, func: PermissionRequestHandler, /) -> PermissionRequestHandler: ...
    @overload
    def permission_request(
        self,
        /,
        *,
        matcher: str | None = None,
        name: str | None = None,
        timeout: float | None = None,
        fail_closed: bool = False,
        idempotent: bool = False,
    ) -> Callable[[PermissionRequestHandler], PermissionRequestHandler]: ...
    def permission_request(self, func: Any = None, /, **options: Any) -> Any:
        """Register a handler of PermissionRequest; options as in :meth:`HookApp.on`."""
        return _register(self, "PermissionRequest", func, options)

    @overload
    def permission_denied(self, func: PermissionDeniedHandler, /) -> PermissionDeniedHandler: ...
    @overload
    def permission_denied(
        self,
        /,
        *,
        matcher: str | None = None,
        name: str | None = None,
        timeout: float | None = None,
        idempotent: bool = False,
    ) -> Callable[[PermissionDeniedHandler], PermissionDeniedHandler]: ...
    def permission_denied(self, func: Any = None, /, **options: Any) -> Any:
        """Register a handler of PermissionDenied; options as in :meth:`HookApp.on`."""
        return _register(self, "PermissionDenied", func, options)

    @overload
    def subagent_start(self, func: SubagentStartHandler, /) -> SubagentStartHandler: ...
    @overload
    def subagent_start(
        self,
        /,
        *,
        matcher: str | None = None,
        name: str | None = None,
        timeout: float | None = None,
        idempotent: bool = False,
    ) -> Callable[[SubagentStartHandler], SubagentStartHandler]: ...
    def subagent_start(self, func: Any = None, /, **options: Any) -> Any:
        """Register a handler of SubagentStart; options as in :meth:`HookApp.on`."""
        return _register(self, "SubagentStart", func, options)

    @overload
    def subagent_stop(self, func: SubagentStopHandler, /) -> SubagentStopHandler: ...
    @overload
    def subagent_stop(
        self,
        /,
        *,
        matcher: str | None = None,
        name: str | None = None,
        timeout: float | None = None,
        stop_loop_guard: bool = True,
        idempotent: bool = False,
    ) -> Callable[[SubagentStopHandler], SubagentStopHandler]: ...
    def subagent_stop(self, func: Any = None, /, **options: Any) -> Any:
        """Register a handler of SubagentStop; options as in :meth:`HookApp.on`."""
        return _register(self, "SubagentStop", func, options)

    @overload
    def stop_failure(self, func: StopFailureHandler, /) -> StopFailureHandler: ...
    @overload
    def stop_failure(
        self,
        /,
        *,
        matcher: str | None = None,
        name: str | None = None,
        timeout: float | None = None,
        idempotent: bool = False,
    ) -> Callable[[StopFailureHandler], StopFailureHandler]: ...
    def stop_failure(self, func: Any = None, /, **options: Any) -> Any:
        """Register a handler of StopFailure; options as in :meth:`HookApp.on`."""
        return _register(self, "StopFailure", func, options)

    @overload
    def session_end(self, func: SessionEndHandler, /) -> SessionEndHandler: ...
    @overload
    def session_end(
        self,
        /,
        *,
        matcher: str | None = None,
        name: str | None = None,
        timeout: float | None = None,
        idempotent: bool = False,
    ) -> Callable[[SessionEndHandler], SessionEndHandler]: ...
    def session_end(self, func: Any = None, /, **options: Any) -> Any:
        """Register a handler of SessionEnd; options as in :meth:`HookApp.on`."""
        return _register(self, "SessionEnd", func, options)

    @overload
    def setup(self, func: SetupHandler, /) -> SetupHandler: ...
    @overload
    def setup(
        self,
        /,
        *,
        matcher: str | None = None,
        name: str | None = None,
        timeout: float | None = None,
        idempotent: bool = False,
    ) -> Callable[[SetupHandler], SetupHandler]: ...
    def setup(self, func: Any = None, /, **options: Any) -> Any:
        """Register a handler of Setup; options as in :meth:`HookApp.on`."""
        return _register(self, "Setup", func, options)

    @overload
    def instructions_loaded(
        self, func: InstructionsLoadedHandler, /
    ) -> InstructionsLoadedHandler: ...
    @overload
    def instructions_loaded(
        self,
        /,
        *,
        matcher: str | None = None,
        name: str | None = None,
        timeout: float | None = None,
        idempotent: bool = False,
    ) -> Callable[[InstructionsLoadedHandler], InstructionsLoadedHandler]: ...
    def instructions_loaded(self, func: Any = None, /, **options: Any) -> Any:
        """Register a handler of InstructionsLoaded; options as in :meth:`HookApp.on`."""
        return _register(self, "InstructionsLoaded", func, options)

    @overload
    def user_prompt_expansion(
        self, func: UserPromptExpansionHandler, /
    ) -> UserPromptExpansionHandler: ...
    @overload
    def user_prompt_expansion(
        self,
        /,
        *,
        matcher: str | None = None,
        name: str | None = None,
        timeout: float | None = None,
        fail_closed: bool = False,
        idempotent: bool = False,
    ) -> Callable[[UserPromptExpansionHandler], UserPromptExpansionHandler]: ...
    def user_prompt_expansion(self, func: Any = None, /, **options: Any) -> Any:
        """Register a handler of UserPromptExpansion; options as in :meth:`HookApp.on`."""
        return _register(self, "UserPromptExpansion", func, options)

    @overload
    def message_display(self, func: MessageDisplayHandler, /) -> MessageDisplayHandler: ...
    @overload
    def message_display(
        self, /, *, name: str | None = None, timeout: float | None = None, idempotent: bool = False
    ) -> Callable[[MessageDisplayHandler], MessageDisplayHandler]: ...
    def message_display(self, func: Any = None, /, **options: Any) -> Any:
        """Register a handler of MessageDisplay; options as in :meth:`HookApp.on`."""
        return _register(self, "MessageDisplay", func, options)

    @overload
    def notification(self, func: NotificationHandler, /) -> NotificationHandler: ...
    @overload
    def notification(
        self,
        /,
        *,
        matcher: str | None = None,
        name: str | None = None,
        timeout: float | None = None,
        idempotent: bool = False,
    ) -> Callable[[NotificationHandler], NotificationHandler]: ...
    def notification(self, func: Any = None, /, **options: Any) -> Any:
        """Register a handler of Notification; options as in :meth:`HookApp.on`."""
        return _register(self, "Notification", func, options)

    @overload
    def task_created(self, func: TaskCreatedHandler, /) -> TaskCreatedHandler: ...
    @overload
    def task_created(
        self, /, *, name: str | None = None, timeout: float | None = None, idempotent: bool = False
    ) -> Callable[[TaskCreatedHandler], TaskCreatedHandler]: ...
    def task_created(self, func: Any = None, /, **options: Any) -> Any:
        """Register a handler of TaskCreated; options as in :meth:`HookApp.on`."""
        return _register(self, "TaskCreated", func, options)

    @overload
    def task_completed(self, func: TaskCompletedHandler, /) -> TaskCompletedHandler: ...
    @overload
    def task_completed(
        self, /, *, name: str | None = None, timeout: float | None = None, idempotent: bool = False
    ) -> Callable[[TaskCompletedHandler], TaskCompletedHandler]: ...
    def task_completed(self, func: Any = None, /, **options: Any) -> Any:
        """Register a handler of TaskCompleted; options as in :meth:`HookApp.on`."""
        return _register(self, "TaskCompleted", func, options)

    @overload
    def teammate_idle(self, func: TeammateIdleHandler, /) -> TeammateIdleHandler: ...
    @overload
    def teammate_idle(
        self, /, *, name: str | None = None, timeout: float | None = None, idempotent: bool = False
    ) -> Callable[[TeammateIdleHandler], TeammateIdleHandler]: ...
    def teammate_idle(self, func: Any = None, /, **options: Any) -> Any:
        """Register a handler of TeammateIdle; options as in :meth:`HookApp.on`."""
        return _register(self, "TeammateIdle", func, options)

    @overload
    def config_change(self, func: ConfigChangeHandler, /) -> ConfigChangeHandler: ...
    @overload
    def config_change(
        self,
        /,
        *,
        matcher: str | None = None,
        name: str | None = None,
        timeout: float | None = None,
        idempotent: bool = False,
    ) -> Callable[[ConfigChangeHandler], ConfigChangeHandler]: ...
    def config_change(self, func: Any = None, /, **options: Any) -> Any:
        """Register a handler of ConfigChange; options as in :meth:`HookApp.on`."""
        return _register(self, "ConfigChange", func, options)

    @overload
    def cwd_changed(self, func: CwdChangedHandler, /) -> CwdChangedHandler: ...
    @overload
    def cwd_changed(
        self, /, *, name: str | None = None, timeout: float | None = None, idempotent: bool = False
    ) -> Callable[[CwdChangedHandler], CwdChangedHandler]: ...
    def cwd_changed(self, func: Any = None, /, **options: Any) -> Any:
        """Register a handler of CwdChanged; options as in :meth:`HookApp.on`."""
        return _register(self, "CwdChanged", func, options)

    @overload
    def directory_added(self, func: DirectoryAddedHandler, /) -> DirectoryAddedHandler: ...
    @overload
    def directory_added(
        self,
        /,
        *,
        matcher: str | None = None,
        name: str | None = None,
        timeout: float | None = None,
        idempotent: bool = False,
    ) -> Callable[[DirectoryAddedHandler], DirectoryAddedHandler]: ...
    def directory_added(self, func: Any = None, /, **options: Any) -> Any:
        """Register a handler of DirectoryAdded; options as in :meth:`HookApp.on`."""
        return _register(self, "DirectoryAdded", func, options)

    @overload
    def file_changed(self, func: FileChangedHandler, /) -> FileChangedHandler: ...
    @overload
    def file_changed(
        self,
        /,
        *,
        matcher: str | None = None,
        name: str | None = None,
        timeout: float | None = None,
        idempotent: bool = False,
    ) -> Callable[[FileChangedHandler], FileChangedHandler]: ...
    def file_changed(self, func: Any = None, /, **options: Any) -> Any:
        """Register a handler of FileChanged; options as in :meth:`HookApp.on`."""
        return _register(self, "FileChanged", func, options)

    @overload
    def worktree_create(self, func: WorktreeCreateHandler, /) -> WorktreeCreateHandler: ...
    @overload
    def worktree_create(
        self, /, *, name: str | None = None, timeout: float | None = None, idempotent: bool = False
    ) -> Callable[[WorktreeCreateHandler], WorktreeCreateHandler]: ...
    def worktree_create(self, func: Any = None, /, **options: Any) -> Any:
        """Register a handler of WorktreeCreate; options as in :meth:`HookApp.on`."""
        return _register(self, "WorktreeCreate", func, options)

    @overload
    def worktree_remove(self, func: WorktreeRemoveHandler, /) -> WorktreeRemoveHandler: ...
    @overload
    def worktree_remove(
        self, /, *, name: str | None = None, timeout: float | None = None, idempotent: bool = False
    ) -> Callable[[WorktreeRemoveHandler], WorktreeRemoveHandler]: ...
    def worktree_remove(self, func: Any = None, /, **options: Any) -> Any:
        """Register a handler of WorktreeRemove; options as in :meth:`HookApp.on`."""
        return _register(self, "WorktreeRemove", func, options)

    @overload
    def pre_compact(self, func: PreCompactHandler, /) -> PreCompactHandler: ...
    @overload
    def pre_compact(
        self,
        /,
        *,
        matcher: str | None = None,
        name: str | None = None,
        timeout: float | None = None,
        idempotent: bool = False,
    ) -> Callable[[PreCompactHandler], PreCompactHandler]: ...
    def pre_compact(self, func: Any = None, /, **options: Any) -> Any:
        """Register a handler of PreCompact; options as in :meth:`HookApp.on`."""
        return _register(self, "PreCompact", func, options)

    @overload
    def post_compact(self, func: PostCompactHandler, /) -> PostCompactHandler: ...
    @overload
    def post_compact(
        self,
        /,
        *,
        matcher: str | None = None,
        name: str | None = None,
        timeout: float | None = None,
        idempotent: bool = False,
    ) -> Callable[[PostCompactHandler], PostCompactHandler]: ...
    def post_compact(self, func: Any = None, /, **options: Any) -> Any:
        """Register a handler of PostCompact; options as in :meth:`HookApp.on`."""
        return _register(self, "PostCompact", func, options)

    @overload
    def elicitation(self, func: ElicitationHandler, /) -> ElicitationHandler: ...
    @overload
    def elicitation(
        self,
        /,
        *,
        matcher: str | None = None,
        name: str | None = None,
        timeout: float | None = None,
        idempotent: bool = False,
    ) -> Callable[[ElicitationHandler], ElicitationHandler]: ...
    def elicitation(self, func: Any = None, /, **options: Any) -> Any:
        """Register a handler of Elicitation; options as in :meth:`HookApp.on`."""
        return _register(self, "Elicitation", func, options)

    @overload
    def elicitation_result(self, func: ElicitationResultHandler, /) -> ElicitationResultHandler: ...
    @overload
    def elicitation_result(
        self,
        /,
        *,
        matcher: str | None = None,
        name: str | None = None,
        timeout: float | None = None,
        idempotent: bool = False,
    ) -> Callable[[ElicitationResultHandler], ElicitationResultHandler]: ...
    def elicitation_result(self, func: Any = None, /, **options: Any) -> Any:
        """Register a handler of ElicitationResult; options as in :meth:`HookApp.on`."""
        return _register(self, "ElicitationResult", func, options)

    @overload
    def interrupt(self, func: InterruptHandler, /) -> InterruptHandler: ...
    @overload
    def interrupt(
        self, /, *, name: str | None = None, timeout: float | None = None, idempotent: bool = False
    ) -> Callable[[InterruptHandler], InterruptHandler]: ...
    def interrupt(self, func: Any = None, /, **options: Any) -> Any:
        """Register a handler of Codex's Interrupt; options as in :meth:`HookApp.on`. Codex reads
        only ``systemMessage`` of its answer and waits at most 3 s: the timeout defaults to 1 s
        and may be at most 2 s (a command hook is installed with a second more)."""
        return _register(self, "Interrupt", func, options)

    # </generated: decorators>


def _register(app: EventDecorators, event: str, func: Any, options: dict[str, Any]) -> Any:
    """``@app.<event>`` (``func`` given) or ``@app.<event>(**options)`` (a decorator)."""
    for option in options:
        if option not in ON_OPTIONS:
            raise HandlerDefinitionError(_unknown_option(event, option), options.get("name"))
    decorate = app.on(event, **options)
    if func is None:
        return decorate
    if not callable(func):
        method = _decorator_name(event)
        raise HandlerDefinitionError(
            f"{method}() takes the handler function (@app.{method}) or keyword options "
            f"(@app.{method}(...)), not a positional {type(func).__name__}"
        )
    return decorate(func)


def _decorator_name(event: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in event).lstrip("_")


def _unknown_option(event: str, option: str) -> str:
    import difflib

    close = difflib.get_close_matches(option, ON_OPTIONS, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return (
        f"{_decorator_name(event)}() got an unexpected option {option!r}{hint}; "
        f"the options are {', '.join(ON_OPTIONS)}"
    )


class HandlerDefinitionError(TypeError, ValueError):
    """A handler defined with an option its event cannot take, a misspelt option, a name
    already taken...: a mistake in the user's code, reported at the user's line.

    The message starts with the file and line of the decorator (the innermost frame outside
    handler-kit, found when the error is made) and names the handler, so that the one line a
    loader prints points into the user's code, never into ours. Both a ``TypeError`` and a
    ``ValueError``: the decorators raised one or the other before this class existed.
    """

    def __init__(self, message: str, handler: str | None = None, func: Any = None) -> None:
        self.reason = message
        self.filename, self.lineno = _user_location(func)
        self.handler = handler or _handler_at(self.filename, self.lineno)
        where = f"{self.filename}, line {self.lineno}: " if self.filename else ""
        named = f"handler {self.handler!r}: " if self.handler else ""
        super().__init__(f"{where}{named}{message}")


def _user_location(func: Any) -> tuple[str, int]:
    """The file and line of the user's code that is defining a handler: the innermost frame
    outside this package (the decorator's line), else where ``func`` is defined."""
    import os
    import sys

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not os.path.abspath(filename).startswith(package):
            return filename, frame.f_lineno
        frame = frame.f_back  # type: ignore[assignment]
    code = getattr(func, "__code__", None)
    if code is not None:
        return code.co_filename, code.co_firstlineno
    return "", 0


def _handler_at(filename: str, lineno: int) -> str | None:
    """The name of the function a decorator at ``filename:lineno`` is applied to, read from
    the source: an option refused before the function is given has no other way to know it."""
    import linecache
    import re

    lines = linecache.getlines(filename)
    if not (0 < lineno <= len(lines)) or not lines[lineno - 1].lstrip().startswith("@"):
        return None
    for line in lines[lineno - 1 : lineno + 30]:
        found = re.match(r"\s*(?:async\s+)?def\s+([A-Za-z_]\w*)", line)
        if found:
            return found.group(1)
    return None

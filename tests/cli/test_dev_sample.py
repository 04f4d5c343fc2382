"""The event of the curl ``handler-kit dev`` prints: one the app's first handler reacts to,
whatever its event, sent through the app's real webhook."""

from __future__ import annotations

from handler_kit import HookApp, context, deny
from handler_kit.cli.dev import sample_event
from handler_kit.testing import HookClient


def test_the_sample_is_answered_by_the_first_handler_of_any_event() -> None:
    app = HookApp("samples")

    @app.permission_request(matcher="Write|Edit")
    def confirm_writes(event):  # type: ignore[no-untyped-def]
        return deny("Writes need a look.")

    event = sample_event(app)
    assert event["hook_event_name"] == "PermissionRequest" and event["tool_name"] == "Write"
    with HookClient.for_app(app) as client:
        answer = client.send(event)
    assert answer.output is not None and answer.output != {}, answer.output


def test_a_matcher_on_another_field_gets_a_value_it_takes() -> None:
    app = HookApp("resumed")

    @app.session_start(matcher="resume")
    def on_resume(event):  # type: ignore[no-untyped-def]
        return context("Welcome back.")

    event = sample_event(app)
    assert event == {"session_id": "dev", "hook_event_name": "SessionStart", "source": "resume"}
    with HookClient.for_app(app) as client:
        answer = client.send(event)
    assert answer.output is not None and "Welcome back." in str(answer.output)

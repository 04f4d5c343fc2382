"""The audit trail: one record per handler run and per answer, written to pluggable sinks."""

from handler_kit.config import AuditSink
from handler_kit.ops.audit.records import JsonLinesSink, RecordPolicy, Redactor
from handler_kit.ops.audit.sqlite import AuditStore, SQLiteSink
from handler_kit.ops.audit.trail import AuditTrail

__all__ = [
    "AuditSink",
    "AuditStore",
    "AuditTrail",
    "JsonLinesSink",
    "RecordPolicy",
    "Redactor",
    "SQLiteSink",
]

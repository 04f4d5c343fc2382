"""Operations: the audit trail, metrics, tracing and idempotency around the answer path."""

"""Shadow mode: a candidate app answers live traffic beside the enforced one, and is only
recorded and counted (``handler-kit serve APP --shadow candidate:app``, or
``ServerConfig(shadow="candidate:app")``).

The candidate's answers are never sent: each is compared with the answer that was, as a
decision (same output, both answered or both failed; each handler paired by name), counted per
handler in the metrics, and recorded in the audit trail as a record of its own linked to the
enforced decision by its id. :mod:`handler_kit.shadow.runner` says how it is kept off the
answer path, :mod:`handler_kit.shadow.process` is the candidate's own process.
"""

from handler_kit.shadow.runner import Shadow, ShadowResult, ShadowStats, audit_record

__all__ = ["Shadow", "ShadowResult", "ShadowStats", "audit_record"]

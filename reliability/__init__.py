"""``make reliability``: the figures of docs/reliability.md, measured on this machine."""

"""The Runbear hooks document: its model and validator, the contract's limits and naming rules,
and the generator that writes a document for a HookApp."""

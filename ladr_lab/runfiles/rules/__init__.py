"""Secret rules kept as data: gitleaks' default rule set (MIT), vendored with its licence and refreshed by
``python -m ladr_lab.runfiles.rules.refresh`` (`gitleaks` translates and applies it)."""

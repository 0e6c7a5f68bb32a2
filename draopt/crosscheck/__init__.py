"""Cross-checks of draopt against the real Kubernetes code, run as Go oracles."""

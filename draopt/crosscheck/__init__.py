"""Crosschecks of draopt against Kubernetes' own code, linked from its released Go modules:
oracles (small Go programs under oracles/) that answer draopt's scenarios, built by gobuild."""

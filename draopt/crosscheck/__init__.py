"""draopt judged by Kubernetes' own code: Go oracles built from the released k8s.io modules."""

"""Kubernetes objects in and out: the API types (models), quantities, feature gates, reading YAML/JSON
(loader, fastyaml, strict, convert), workload controllers expanding Deployments/Jobs/JobSets into pods,
node selection and option files.  Imports nothing of draopt but draopt.errors.
"""

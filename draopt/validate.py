"""`draopt validate`: what a Kubernetes API server would reject, before you apply it.

The rules live in the package draopt.validation; this module keeps the names callers import.
"""
from .validation.command import cmd_validate, format_text, register
from .validation.documents import object_ref, read_documents, validate_documents, validate_files
from .validation.findings import Finding, Note, Report

__all__ = ["Finding", "Note", "Report", "read_documents", "validate_documents", "validate_files", "register",
           "cmd_validate", "object_ref", "format_text"]

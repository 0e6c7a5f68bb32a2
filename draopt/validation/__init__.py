"""`draopt validate`'s rules (see draopt.validation.documents); the public names are in draopt.validate."""

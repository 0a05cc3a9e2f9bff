"""The study database's schema, one numbered SQL file per version (consilium/study/schema.py applies them)."""

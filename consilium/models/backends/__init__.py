"""Model backends, one module each; optional SDKs are imported inside their backend."""

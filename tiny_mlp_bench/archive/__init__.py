"""Archives of finished studies: pack, seal (provenance, RO-Crate, SHA-256 manifest) and verify."""

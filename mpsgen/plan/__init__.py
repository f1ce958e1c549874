"""The planners: each turns a spec and a tree into a `Changeset` (new-op, migrate, new-kernel, the
reduction migration), the shared steps (the AOTI shim) and the companions (`--with-test`,
`--with-bench`, `--pr-description`). Imports the layers below only; nothing here prints."""

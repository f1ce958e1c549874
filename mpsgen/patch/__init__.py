"""A change as a set of whole-file edits: its diff and patch, the conflict re-check, the all-or-nothing
apply, and the journal that lets `recover` finish or undo an interrupted one. Imports `core` and
`tree` only."""

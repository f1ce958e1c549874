"""What the user asks for, validated with locations: op specs (`op`), custom kernel specs (`kernel`),
reduction specs (`reduction`), and the `REGISTER_*` lines an op needs in the tree's macros
(`registrations`). Imports `core`, `metal` and `tree`."""

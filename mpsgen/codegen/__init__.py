"""Text rendering shared by the planners, the compile gate and `try`: functors (`functor`), custom
kernels (`kernel`), reductions (`reduction`) and the params kinds (`params`). Imports the layers
below (`core`, `metal`, `tree`, `spec`, `edits`) only."""

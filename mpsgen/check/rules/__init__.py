"""The rules of ``mpsgen check``, one module per family (what the rules read): ``dispatch``
(yaml rows, stubs, host kernels), ``kernels`` (Metal registrations and functors), ``numerics``
(functor math that differs from CPU's), ``xfails`` (test lists), ``aoti_shim``, ``journal``
(interrupted changes), ``pipelines`` (custom kernels' names). Each rule reads the tree's
cross-file facts (:class:`~mpsgen.tree.facts.Facts`) and yields findings; none prints.

Importing this package registers nothing: :mod:`mpsgen.check.registry` imports the families
and gathers their rules.
"""

"""`seer bench`: SEER's headline comparisons on this machine, and the helpers every benchmark shares.

Not part of the library: only the CLI's ``bench`` command imports this
package (lazily), and the scripts in ``bench/`` import
:mod:`seer.bench.common`.  Modules, by role:

* :mod:`~seer.bench.common`: machine description, latency percentiles,
  markdown tables, JSON/markdown report files (used by every benchmark);
* :mod:`~seer.bench.timing`: a result row and the timing loops;
* :mod:`~seer.bench.peers`: the other simulators (mpe2, VMAS, mobile-env);
* :mod:`~seer.bench.harness`: the plan and the run;
* :mod:`~seer.bench.report`: the markdown and rich tables, the plot;
* :mod:`~seer.bench.command`: the ``seer bench`` command's body.
"""

"""The process backend's old module name, kept importable: re-exports :mod:`seer.vector.process`."""

from seer.vector._runner import CALL, CLOSE, RESET, STEP  # noqa: F401
from seer.vector.process.env import ProcessVectorEnv  # noqa: F401
from seer._checks import check_worker_timeout as _check_timeout  # noqa: F401
from seer.vector.process.parent import ProcessBackend, _cleanup, _dumps  # noqa: F401
from seer.vector.process.waits import WorkerWaits, _guarded, _Proc, _proc_state, _signal_name  # noqa: F401
from seer.vector.process.protocol import (CLOSING, CMD, CMDLEN, DONE, GEN, LINE, MAC, MSGLEN, OP_NAMES, PBELL,  # noqa: F401
                                          REQ, REQDONE, SLICE_S, WBELL, WORKER_SLICE_S, WORKER_TIMEOUT_S, _Ctl,
                                          _Sealer, _Shared, _tag)
from seer.vector.process.worker import _serve, _worker_entry, call_share, run_share  # noqa: F401

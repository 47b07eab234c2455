#!/usr/bin/env bash
# Smoke tests of the MARL trainers' paths (skrl's stock PettingZoo wrapper,
# BenchMARL through seer.integrations.benchmarl, TorchRL's SeerTorchRLEnv and
# PettingZooWrapper flags) in a venv of their own: BenchMARL pins hydra's
# antlr and pulls torchvision, which an unconstrained install answers with a
# multi-GB CUDA torch.  torch is installed first as a CPU build and then held
# by a constraints file for everything after it.
#
# The venv sees the main environment's packages (--system-site-packages: the
# SEER installed by .ci/run, PettingZoo, SuperSuit), its own shadow them.
#
#   bash .ci/integrations_marl.sh            # venv in $TMPDIR/seer-venv-marl (reused)
#   SEER_MARL_VENV=/tmp/v bash .ci/integrations_marl.sh
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${SEER_MARL_VENV:-${TMPDIR:-/tmp}/seer-venv-marl}
[ -x "$venv/bin/python" ] || python -m venv --system-site-packages "$venv"
py="$venv/bin/python"

"$py" -m pip install -q "torch==2.13.0"
constraints="$venv/torch-constraints.txt"
echo "torch==2.13.0" > "$constraints"
"$py" -m pip install -q -c "$constraints" "skrl>=2.1" "benchmarl>=1.5" "torchrl>=0.6" "tensordict>=0.6"
# the constraint held: still the CPU build (a CUDA torch would say +cu...)
"$py" - <<'EOF'
import torch
assert torch.__version__.startswith("2.13.0") and not torch.version.cuda, torch.__version__
print("torch", torch.__version__)
EOF

"$py" -m pytest -q -rs -p no:cacheprovider \
    tests/envs/test_env_parallel_surface.py \
    tests/integrations/test_skrl.py \
    tests/integrations/test_benchmarl.py \
    tests/integrations/test_torchrl.py \
    tests/integrations/test_torchrl_paths.py

#!/usr/bin/env bash
# Device calls 1-2 (session 52): panels.cu (B's column panels in shared memory) on the six real graphs, K = 128 and
# 512, every configuration; call 2 ran panels2 (panels.cu with a MODE template argument: 0 as is, 1 plain stores for
# the atomics, 2 no shared-memory read, 3 row and column packed in one shuffle) on Cornell5 and blogcatalog, then ncu
# (SpeedOfLight, MemoryWorkloadAnalysis, WarpStateStats, ComputeWorkloadAnalysis) on csr_merge, Cornell5, K = 128.
# Call 3 ran cuobjdump -sass on csr_merge and ncu's InstructionStats / SourceCounters / SchedulerStats on it.
set -u
cd "$(dirname "$0")"
chmod +x panels
for g in Cornell5 blogcatalog cit-HepPh musae-github soc-sign-epinions web-NotreDame; do
  for k in 128 512; do timeout 100 ./panels $g $k; done
done > $OUT/panels.txt 2>&1

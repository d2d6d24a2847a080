#!/usr/bin/env bash
# Device call 4 (session 52): merge_cmp (render_new.py renders csr_merge's template as at HEAD and as changed, 11
# parameter sets each, both in one program), checked against cuSPARSE's C after a poisoned C, the two taking turns.
set -u
cd "$(dirname "$0")"
chmod +x merge_cmp
OBJ=$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump 2>/dev/null | head -1)
$OBJ -sass -fun new_64_32_1_4 merge_cmp > $OUT/sass_new_64_32.txt 2>&1
for g in Cornell5 blogcatalog cit-HepPh musae-github soc-sign-epinions web-NotreDame; do
  for k in 128 512; do timeout 100 ./merge_cmp $g $k; done
done > $OUT/merge_cmp.txt 2>&1
for k in 128 512; do timeout 150 ./merge_cmp chunglu_1M_8M_2.4 $k 1000000 8000000 2.4; done >> $OUT/merge_cmp.txt 2>&1
timeout 150 ./merge_cmp chunglu_1M_8M_2.1 128 1000000 8000000 2.1 >> $OUT/merge_cmp.txt 2>&1

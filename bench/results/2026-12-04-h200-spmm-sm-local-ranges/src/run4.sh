#!/usr/bin/env bash
set -u
cd "$(dirname "$0")"
[ -d mats ] || python3 -c "
import lzma, tarfile
with lzma.open('mats.tar.xz') as s:
    tarfile.open(fileobj=s).extractall('mats')
"
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt; date -u >> $OUT/device.txt
chmod +x merge_exp3
for g in Cornell5 blogcatalog cit-HepPh musae-github soc-sign-epinions web-NotreDame; do
  for k in 128 512; do ./merge_exp3 $g $k; done
done > $OUT/merge_exp3.txt 2>&1
echo rc=$?
grep -E "cusparse|memset|slice=128" $OUT/merge_exp3.txt | sed "s/ err .*//" | head -150

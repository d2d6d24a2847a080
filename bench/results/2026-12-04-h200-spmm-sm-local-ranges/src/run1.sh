#!/usr/bin/env bash
set -u
cd "$(dirname "$0")"
python3 -c "
import lzma, tarfile
with lzma.open('mats.tar.xz') as s:
    tarfile.open(fileobj=s).extractall('mats')
"
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt; date -u >> $OUT/device.txt
chmod +x chunks
for g in Cornell5 blogcatalog cit-HepPh musae-github soc-sign-epinions web-NotreDame; do
  for k in 128 512; do ./chunks $g $k; done
done > $OUT/chunks.txt 2>&1
echo rc=$?
grep -E "cusparse|blocks/sm=1 slice=32|blocks/sm=1 slice=128|blocks/sm=8 slice=128" $OUT/chunks.txt | head -150

"""Goldens for tests/unit/test_span.c (base/nprand.h) from numpy's legacy
RandomState (Debian 12: python3-numpy 1.24.2; run as /usr/bin/python3):
the first MT19937 outputs after np.random.seed(s), the key after seeding,
and RandomState.shuffle of arange(n). Prints C initialisers; the output is
pasted into test_span.c.

usage: /usr/bin/python3 tests/gen/nprand_ref.py
"""
import numpy as np

print("/* numpy %s */" % np.__version__)
for s in (0, 5489, 133504, 4294967295):
    rs = np.random.RandomState(s)
    key = rs.get_state()[1]
    u = rs.randint(0, 2**32, size=6, dtype=np.uint64)   # 2^32 range: raw 32-bit outputs
    print("{%uu, {%s}, %uu, %uu}," % (s, ", ".join("%uu" % x for x in u), key[1], key[623]))
for s, n in ((1, 10), (67392, 37), (4294967295, 1000)):
    rs = np.random.RandomState(s)
    a = np.arange(n)
    rs.shuffle(a)
    print("/* seed %d, shuffle(arange(%d)): */ %s" % (s, n, " ".join(str(x) for x in a[:12])))
    print("/* sum of i * a[i]: */ %d" % int((np.arange(n) * a).sum()))
print("/* hash((1, 2)), hash(()), hash((2**61 - 1, -5)): */ %d %d %d"
      % (hash((1, 2)), hash(()), hash((2**61 - 1, -5))))

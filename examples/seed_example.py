"""The seed's composite example (CINN article, §2.2 (1)), with symbolic S1 and S2.

    X[S1, S2, 1024] -E-> A = X * 2 -E-> B = A + 1 -R-> C = sum_k B -E-> D = C * 2
                    -B-> E = broadcast D to [S1, S2, 1024] -E-> F = E + 1

Run `cinn-py dump-ir examples/seed_example.py` to print its lowered AST.
"""

import cinn_py as cp

S1, S2 = cp.sym("S1"), cp.sym("S2")
X = cp.placeholder((S1, S2, 1024), "float32", "X")
A = cp.compute((S1, S2, 1024), lambda i, j, k: X[i, j, k] * 2.0, "A")
B = cp.compute((S1, S2, 1024), lambda i, j, k: A[i, j, k] + 1.0, "B")
k = cp.reduce_axis(1024, "k")
C = cp.compute((S1, S2), lambda i, j: cp.reduce_sum(B[i, j, k], [k]), "C")
D = cp.compute((S1, S2), lambda i, j: C[i, j] * 2.0, "D")
E = cp.compute((S1, S2, 1024), lambda i, j, k: D[i, j], "E")
F = cp.compute((S1, S2, 1024), lambda i, j, k: E[i, j, k] + 1.0, "F")

name = "fn"
args = [X, F]

# Multiply matrices with comprehensions; verify a checksum with the add tool.
A = [[1, 2, 0], [0, 1, 3]]
B = [[4, 1], [2, 2], [1, 5]]
def matmul(x, y):
    return [[sum(x[i][k] * y[k][j] for k in range(len(y))) for j in range(len(y[0]))]
            for i in range(len(x))]
def transpose(m):
    return [list(col) for col in zip(*m)]
C = matmul(A, B)
checksum = 0
for row in C:
    for v in row:
        checksum = (await mcp.fixture.add(a=checksum, b=v))["sum"]
identity = [[1 if i == j else 0 for j in range(3)] for i in range(3)]
for row in C:
    print(" ".join(f"{v:>4}" for v in row))
{"C": C, "Ct": transpose(C), "checksum": checksum, "same": matmul(A, identity) == A,
 "trace": sum(C[i][i] for i in range(min(len(C), len(C[0]))))}
